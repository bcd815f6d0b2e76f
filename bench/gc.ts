/**
 * `npx tsx bench/gc.ts <scenarios> [--processes N] [--seconds S] [--connections C] [--flags="…"] [--against="…"]`:
 * the garbage collector of fresh service processes under load, process by process. `<scenarios>` is `proxy`,
 * `tool`, or both in the order to run them (`proxy,tool`, as each round of `npm run bench` does). Each process is
 * started as `npm start` runs it (on the test core, wrk and the fake upstream on the other, as in `npm run bench`),
 * prepared, then, for each scenario in turn, warmed up for 3 s and measured over one wrk run of S seconds (default
 * 5) at C connections (default 32): its CPU per request, and its scavenges and mark-compacts (count and total pause,
 * from node's `gc` performance entries, bench/gc-observer.mjs).
 *
 * A state the collector falls into in some processes and not others shows only across fresh processes, not across
 * rounds of one: that is what this is for (bench/HISTORY.md, issue 14, tenth part). `--flags` adds node flags to
 * every process; with `--against`, processes alternate between `--flags` and `--against` (N of each). Give
 * flags with `=`, as in `--against=--allocation-site-pretenuring`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readyForLoad, startService } from './service.ts';
import { ensureTools, freePort, median, pinSelf, processCpuMicros, sleep, startHelper, stop } from './system.ts';
import { runWrk } from './wrk.ts';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    processes: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    flags: { type: 'string', default: '' },
    against: { type: 'string' },
  },
});
const scenarios = (positionals[0] ?? '').split(',');
if (!positionals[0] || !scenarios.every((s): s is 'proxy' | 'tool' => s === 'proxy' || s === 'tool'))
  throw new Error(
    'usage: bench/gc.ts <proxy|tool|proxy,tool> [--processes N] [--seconds S] [--connections C] [--flags=…] [--against=…]',
  );
const processes = Number(opt.processes);
const seconds = Number(opt.seconds);
const connections = Number(opt.connections);
if (!Number.isInteger(processes) || processes < 1) throw new Error(`--processes must be ≥ 1, got "${opt.processes}"`);
if (!Number.isInteger(seconds) || seconds < 1) throw new Error(`--seconds must be ≥ 1, got "${opt.seconds}"`);
if (!Number.isInteger(connections) || connections < 1)
  throw new Error(`--connections must be ≥ 1, got "${opt.connections}"`);
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
const OBSERVER = join(ROOT, 'bench/gc-observer.mjs');
const split = (flags: string) => flags.split(' ').filter(Boolean);
const settings = [opt.flags, ...(opt.against === undefined ? [] : [opt.against])];
ensureTools();
pinSelf(0);

const upPort = await freePort();
const up = await startHelper(0, ROOT, 'bench/upstream.ts', [String(upPort)]);
const upstreamUrl = `http://127.0.0.1:${upPort}`;
const statsDir = mkdtempSync(join(os.tmpdir(), 'acs-gc-'));

type Stats = Record<string, { count: number; ms: number } | undefined>;
interface Row {
  flags: string;
  scenario: string;
  cpuUs: number;
  scavenges: number;
  scavengeMs: number;
  markCompacts: number;
  markCompactMs: number;
}
const rows: Row[] = [];
const label = (flags: string) => flags || '(no flags)';
console.log(
  `${scenarios.join(', then ')}: ${processes} fresh process${processes > 1 ? 'es' : ''} per setting; each scenario 3 s of warm-up, then ${seconds} s measured; ${connections} connections`,
);
for (let i = 0; i < processes; i++) {
  for (const flags of i % 2 ? [...settings].reverse() : settings) {
    const statsFile = join(statsDir, `${rows.length}.json`);
    const svc = await startService({ label: 'current', root: ROOT }, 1, ['--import', OBSERVER, ...split(flags)], {
      ACS_GC_STATS_FILE: statsFile,
    });
    const read = (): Stats => {
      try {
        return JSON.parse(readFileSync(statsFile, 'utf8')) as Stats;
      } catch {
        return {};
      }
    };
    try {
      const load = await readyForLoad(svc.url, upstreamUrl);
      for (const scenario of scenarios) {
        const request = load[scenario];
        await runWrk(request, { core: 0, connections, seconds: 3 });
        // The observer writes every 200 ms: wait for a write that includes the warm-up's last collections.
        await sleep(500);
        const before = read();
        const cpu0 = processCpuMicros(svc.pid);
        const r = await runWrk(request, { core: 0, connections, seconds });
        const cpu = processCpuMicros(svc.pid) - cpu0;
        await sleep(500);
        const after = read();
        const delta = (k: string, f: 'count' | 'ms') => (after[k]?.[f] ?? 0) - (before[k]?.[f] ?? 0);
        const row: Row = {
          flags,
          scenario,
          cpuUs: cpu / Math.max(1, r.requests),
          scavenges: delta('scavenge', 'count'),
          scavengeMs: delta('scavenge', 'ms'),
          markCompacts: delta('markCompact', 'count'),
          markCompactMs: delta('markCompact', 'ms'),
        };
        rows.push(row);
        console.log(
          `  ${label(flags).padEnd(32)} ${scenario.padEnd(5)} ${r.rps.toFixed(0).padStart(6)} req/s ${row.cpuUs.toFixed(0).padStart(5)} µs CPU/request  ` +
            `scavenges ${String(row.scavenges).padStart(4)} (${row.scavengeMs.toFixed(0).padStart(4)} ms, ` +
            `${(row.scavengeMs / Math.max(1, row.scavenges)).toFixed(2)} ms each)  ` +
            `mark-compacts ${String(row.markCompacts).padStart(3)} (${row.markCompactMs.toFixed(0)} ms)` +
            (r.errors ? `  ${r.errors} errors` : ''),
        );
      }
    } finally {
      await svc.stop();
    }
  }
}
console.log('medians:');
for (const scenario of scenarios) {
  for (const flags of settings) {
    const mine = rows.filter((r) => r.flags === flags && r.scenario === scenario);
    console.log(
      `  ${label(flags).padEnd(32)} ${scenario.padEnd(5)} ${median(mine.map((r) => r.cpuUs)).toFixed(0)} µs CPU/request, ` +
        `${median(mine.map((r) => r.scavengeMs / Math.max(1, r.scavenges))).toFixed(2)} ms a scavenge, ` +
        `${median(mine.map((r) => r.markCompacts))} mark-compacts; every process: scavenge pause ` +
        `${mine.map((r) => (r.scavengeMs / Math.max(1, r.scavenges)).toFixed(1)).join(', ')} ms`,
    );
  }
}
await stop(up);
rmSync(statsDir, { recursive: true, force: true });
process.exit(0);
