/**
 * `npx tsx bench/cpu.ts <proxy|tool> [seconds] [rounds]`: the service's CPU per request against the bare
 * pass-through (bench/baseline.ts), quicker than `npm run bench` and without a profiler's overhead, for checking a
 * change to a hot path. Each process runs alone on the test core while wrk drives it from the other (as in
 * `npm run bench`), in `rounds` alternating rounds (default 3) of `seconds` (default 8) after a 3 s warm-up each;
 * CPU is utime + stime from /proc/<pid>/stat over wrk's request count. Every round is printed, then the medians
 * and the service ÷ baseline ratios (median of the per-round ratios). On a shared machine the absolute figures
 * move with what else runs; the ratios, taken within a round, move less.
 */
import { DESK_DOMAIN, TICKET_PATH, readyForLoad, startService } from './service.ts';
import { ensureTools, freePort, median, pinSelf, processCpuMicros, startHelper, stop } from './system.ts';
import { runWrk, type WrkRequest } from './wrk.ts';

const [scenario, secondsArg, roundsArg] = process.argv.slice(2);
if (scenario !== 'proxy' && scenario !== 'tool') throw new Error('usage: bench/cpu.ts <proxy|tool> [seconds] [rounds]');
const seconds = Number(secondsArg ?? 8);
const rounds = Number(roundsArg ?? 3);
if (!(seconds >= 1) || !Number.isInteger(rounds) || rounds < 1)
  throw new Error('seconds must be at least 1 and rounds a whole number of at least 1');
const LOAD_CORE = 0;
const TEST_CORE = 1;
const CONNECTIONS = 32;
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
ensureTools();
pinSelf(LOAD_CORE);

const upPort = await freePort();
const upstreamUrl = `http://127.0.0.1:${upPort}`;
const up = await startHelper(LOAD_CORE, ROOT, 'bench/upstream.ts', [String(upPort)]);

/** One wrk run against `pid`'s process: its CPU per request, µs. */
async function measure(req: WrkRequest, pid: number, secs: number) {
  const before = processCpuMicros(pid);
  const r = await runWrk(req, { core: LOAD_CORE, connections: CONNECTIONS, seconds: secs });
  const cpu = processCpuMicros(pid) - before;
  if (r.errors) throw new Error(`${r.errors} errors of ${r.requests} requests`);
  return { ...r, cpuPerRequest: cpu / r.requests };
}

{
  const basePort = await freePort();
  const base = await startHelper(TEST_CORE, ROOT, 'bench/baseline.ts', [String(basePort), upstreamUrl]);
  const svc = await startService({ label: 'current', root: ROOT }, TEST_CORE);
  const load = await readyForLoad(svc.url, upstreamUrl);
  const targets = [
    {
      name: 'baseline',
      pid: base.pid!,
      req: { url: `http://127.0.0.1:${basePort}/desks/${DESK_DOMAIN}/api${TICKET_PATH}` },
    },
    { name: scenario, pid: svc.pid, req: load[scenario] as WrkRequest },
  ];
  for (const t of targets) await measure(t.req, t.pid, 3);
  const results: Record<string, Array<{ rps: number; p99Ms: number; cpuPerRequest: number }>> = {};
  console.log(`CPU per request, ${rounds} rounds of ${seconds} s, ${CONNECTIONS} connections (no profiler):`);
  for (let round = 1; round <= rounds; round++) {
    for (const t of round % 2 ? targets : [...targets].reverse()) {
      const r = await measure(t.req, t.pid, seconds);
      (results[t.name] ??= []).push(r);
      console.log(
        `  round ${round} ${t.name.padEnd(8)} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${r.p99Ms.toFixed(2).padStart(6)} ms  ` +
          `${r.cpuPerRequest.toFixed(1).padStart(6)} µs CPU/request`,
      );
    }
  }
  const b = results.baseline!;
  const s = results[scenario]!;
  const ratio = (f: (x: (typeof b)[0]) => number) => median(s.map((x, i) => f(x) / f(b[i]!))).toFixed(2);
  console.log(
    `  median: baseline ${median(b.map((x) => x.cpuPerRequest)).toFixed(1)} µs, ${scenario} ` +
      `${median(s.map((x) => x.cpuPerRequest)).toFixed(1)} µs; ${scenario} ÷ baseline: CPU/request ` +
      `${ratio((x) => x.cpuPerRequest)}×, req/s ${ratio((x) => x.rps)}×, p99 ${ratio((x) => x.p99Ms)}×`,
  );
  await svc.stop();
  await stop(base);
}

await stop(up);
process.exit(0);
