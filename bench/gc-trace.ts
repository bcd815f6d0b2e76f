/**
 * `npx tsx bench/gc-trace.ts <proxy|tool> [--against <git-ref>] [--processes N] [--seconds S] [--connections C]`:
 * what V8's young-generation collections keep, read from V8's own trace (`--trace-gc-nvp`) of fresh service
 * processes under load. Each process is started as `npm start` runs it (on the test core, wrk and the fake upstream
 * on the other, as in `npm run bench`), prepared, warmed up for 3 s, then measured over one wrk run of S seconds
 * (default 5) at C connections (default 32). For that run it prints, per process: throughput, CPU and p99 per
 * request, the scavenges (how many requests each, their mean and p90 pause), the bytes each kept alive in the young
 * generation and moved to the old one (V8's `new_space_survived` and `promoted`), and the mark-compacts.
 *
 * Those are counts, not times: on a machine whose speed changes from one run to the next they still tell a change
 * in what outlives a request, which is what makes collections longer and full collections come sooner. With
 * `--against`, the ref is checked out into a temporary git worktree and N processes of each version alternate.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readyForLoad, startService, versionsAgainst, type Version } from './service.ts';
import {
  ensureTools,
  freePort,
  median,
  pinSelf,
  processCpuMicros,
  sleep,
  startHelper,
  stop,
  wholeOption,
} from './system.ts';
import { runWrk } from './wrk.ts';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    against: { type: 'string' },
    processes: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
  },
});
const scenario = positionals[0];
if (scenario !== 'proxy' && scenario !== 'tool')
  throw new Error('usage: bench/gc-trace.ts <proxy|tool> [--against <git-ref>] [--processes N] [--seconds S]');
const whole = (name: 'processes' | 'seconds' | 'connections') => wholeOption(name, opt[name]);
const processes = whole('processes');
const seconds = whole('seconds');
const connections = whole('connections');
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
ensureTools();
pinSelf(0);

const { versions, remove: removeRef } = versionsAgainst(ROOT, opt.against);
const upPort = await freePort();
const up = await startHelper(0, ROOT, 'bench/upstream.ts', [String(upPort)]);
const traceDir = mkdtempSync(join(os.tmpdir(), 'acs-gc-trace-'));

interface Row {
  rps: number;
  cpuUs: number;
  p99Ms: number;
  scavenges: number;
  requestsPerScavenge: number;
  meanPauseMs: number;
  p90PauseMs: number;
  survivedKb: number;
  promotedKb: number;
  markCompactPausesMs: number[];
}

/** `key=value` of one line of V8's `--trace-gc-nvp` output. */
const field = (line: string, key: string) => Number(new RegExp(`\\b${key}=([0-9.]+)`).exec(line)?.[1] ?? NaN);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

async function measure(v: Version, n: number): Promise<Row> {
  const trace = join(traceDir, `${n}.log`);
  const svc = await startService(v, 1, ['--trace-gc-nvp'], {}, trace);
  try {
    const request = (await readyForLoad(svc.url, `http://127.0.0.1:${upPort}`))[scenario as 'proxy' | 'tool'];
    await runWrk(request, { core: 0, connections, seconds: 3 });
    const from = readFileSync(trace, 'utf8').length;
    const cpu0 = processCpuMicros(svc.pid);
    const r = await runWrk(request, { core: 0, connections, seconds });
    const cpu = processCpuMicros(svc.pid) - cpu0;
    // V8 writes each collection's line when it ends: one still under way at the end of the run is left out.
    await sleep(100);
    const lines = readFileSync(trace, 'utf8').slice(from).split('\n');
    const scavenges = lines.filter((l) => l.includes(' gc=s '));
    const markCompacts = lines.filter((l) => / gc=m?mc /.test(l));
    const pauses = scavenges.map((l) => field(l, 'pause')).sort((a, b) => a - b);
    return {
      rps: r.rps,
      cpuUs: cpu / Math.max(1, r.requests),
      p99Ms: r.p99Ms,
      scavenges: scavenges.length,
      requestsPerScavenge: r.requests / Math.max(1, scavenges.length),
      meanPauseMs: mean(pauses),
      p90PauseMs: pauses[Math.floor(pauses.length * 0.9)] ?? NaN,
      survivedKb: mean(scavenges.map((l) => field(l, 'new_space_survived'))) / 1024,
      promotedKb: mean(scavenges.map((l) => field(l, 'promoted'))) / 1024,
      markCompactPausesMs: markCompacts.map((l) => field(l, 'pause')),
    };
  } finally {
    await svc.stop();
  }
}

const describe = (r: Row) =>
  `${r.rps.toFixed(0).padStart(5)} req/s ${r.cpuUs.toFixed(0).padStart(4)} µs/req p99 ${r.p99Ms.toFixed(1).padStart(5)} ms | ` +
  `${r.scavenges} scavenges (${r.requestsPerScavenge.toFixed(0)} requests each), pause mean ${r.meanPauseMs.toFixed(2)} ` +
  `p90 ${r.p90PauseMs.toFixed(2)} ms, survived ${r.survivedKb.toFixed(0)} KB, promoted ${r.promotedKb.toFixed(1)} KB | ` +
  `${r.markCompactPausesMs.length} mark-compacts${r.markCompactPausesMs.length ? ` (${r.markCompactPausesMs.join(', ')} ms)` : ''}`;

const rows = new Map<string, Row[]>(versions.map((v) => [v.label, []]));
try {
  console.log(
    `${scenario}: ${processes} fresh process(es) per version, alternating; each 3 s of warm-up, then ${seconds} s ` +
      `measured at ${connections} connections; figures per young-generation collection (scavenge) are means`,
  );
  let n = 0;
  for (let i = 0; i < processes; i++) {
    for (const v of i % 2 ? [...versions].reverse() : versions) {
      const r = await measure(v, n++);
      rows.get(v.label)!.push(r);
      console.log(`  ${v.label.padEnd(12)} ${describe(r)}`);
    }
  }
  console.log('medians:');
  for (const [label, rs] of rows) {
    const m = (f: (r: Row) => number) => median(rs.map(f));
    console.log(
      `  ${label.padEnd(12)} ${m((r) => r.cpuUs).toFixed(0)} µs/req, p99 ${m((r) => r.p99Ms).toFixed(1)} ms, ` +
        `scavenge pause ${m((r) => r.meanPauseMs).toFixed(2)} ms, survived ${m((r) => r.survivedKb).toFixed(0)} KB, ` +
        `promoted ${m((r) => r.promotedKb).toFixed(1)} KB, mark-compacts in ${rs.filter((r) => r.markCompactPausesMs.length).length} of ${rs.length} processes`,
    );
  }
} finally {
  await stop(up);
  removeRef();
  rmSync(traceDir, { recursive: true, force: true });
}
process.exit(0);
