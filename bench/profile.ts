/**
 * `npx tsx bench/profile.ts <proxy|tool> [seconds] [--root <dir>] [--no-prof] [--warmup <seconds>]`: runs the
 * service under `node --cpu-prof` on one core while wrk drives one scenario from the other (as in
 * `npm run bench`), then prints the service's CPU per request over the measured run and the functions and files
 * with the most self time. For finding where the service's per-request cost goes.
 *
 * A warm-up run (default 2 s, not counted in the CPU per request) lets the JIT settle first. `--root` starts
 * the service of another checkout (e.g. an older commit in a git worktree) with this tree's bench code;
 * `--no-prof` measures the CPU per request without the profiler's own overhead.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readyForLoad, startService } from './service.ts';
import { coreBusyMicros, ensureTools, freePort, pinSelf, processCpuMicros, startHelper, stop } from './system.ts';
import { runWrk } from './wrk.ts';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    root: { type: 'string' },
    'no-prof': { type: 'boolean', default: false },
    warmup: { type: 'string', default: '2' },
  },
});
const scenario = positionals[0];
if (scenario !== 'proxy' && scenario !== 'tool')
  throw new Error('usage: bench/profile.ts <proxy|tool> [seconds] [--root <dir>] [--no-prof] [--warmup <seconds>]');
const seconds = Number(positionals[1] ?? 8);
const warmup = Number(opt.warmup);
if (!Number.isInteger(seconds) || seconds < 1)
  throw new Error(`seconds must be a whole number ≥ 1, got "${positionals[1]}"`);
if (!Number.isInteger(warmup) || warmup < 0)
  throw new Error(`--warmup must be a whole number ≥ 0, got "${opt.warmup}"`);
const BENCH_ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
/** The tree whose service is profiled: this one, or --root. */
const ROOT = opt.root ? resolve(opt.root) : BENCH_ROOT;
const profile = !opt['no-prof'];
ensureTools();
pinSelf(0);

const upPort = await freePort();
const up = await startHelper(0, BENCH_ROOT, 'bench/upstream.ts', [String(upPort)]);
const upstreamUrl = `http://127.0.0.1:${upPort}`;
const profDir = mkdtempSync(join(os.tmpdir(), 'acs-prof-'));
const svc = await startService(
  { label: ROOT, root: ROOT },
  1,
  profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
);
const request = (await readyForLoad(svc.url, upstreamUrl))[scenario];
if (warmup > 0) await runWrk(request, { core: 0, connections: 32, seconds: warmup });
const cpu0 = processCpuMicros(svc.pid);
const core0 = coreBusyMicros(1);
const wall0 = performance.now();
const r = await runWrk(request, { core: 0, connections: 32, seconds });
const cpu = processCpuMicros(svc.pid) - cpu0;
const cpuUs = cpu / Math.max(1, r.requests);
const wallUs = (performance.now() - wall0) * 1000;
// What else ran on the test core meanwhile: a loaded machine starves the service and inflates its CPU per request.
const otherPct = ((coreBusyMicros(1) - core0 - cpu) / wallUs) * 100;
console.log(
  `${scenario} (${ROOT}${profile ? ', under --cpu-prof' : ''}): ${r.rps.toFixed(0)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, ` +
    `p99 ${r.p99Ms.toFixed(2)} ms, errors ${r.errors}, CPU per request ${cpuUs.toFixed(0)} µs ` +
    `(${r.requests} requests in ${seconds} s after a ${warmup} s warm-up); test core: service ${((cpu / wallUs) * 100).toFixed(0)} %, ` +
    `other processes ${Math.max(0, otherPct).toFixed(0)} %`,
);
// SIGTERM lets the service close and write its profile.
await svc.stop();
await stop(up);
if (!profile) process.exit(0);

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no CPU profile was written to ${profDir}`);
const prof = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const keyOf = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*node_modules\//, 'nm:').replace(ROOT, '')}:${n.callFrame.lineNumber + 1}`;
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
// The measured window: the last `seconds` seconds up to the last busy sample (the start-up, the warm-up's
// first part and the shutdown fall outside); idle samples are left out, so shares are of the busy time.
const times: number[] = [];
let t = 0;
for (const d of prof.timeDeltas) times.push((t += d));
const busy = (i: number) => byId.get(prof.samples[i]!)!.callFrame.functionName !== '(idle)';
let last = prof.samples.length - 1;
while (last > 0 && !busy(last)) last--;
const from = times[last]! - seconds * 1e6;
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
for (let i = 0; i <= last; i++) {
  if (times[i]! < from || !busy(i)) continue;
  total++;
  const leaf = byId.get(prof.samples[i]!)!;
  self.set(keyOf(leaf), (self.get(keyOf(leaf)) ?? 0) + 1);
  const seen = new Set<string>();
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const k = keyOf(byId.get(id)!);
    if (seen.has(k)) continue;
    seen.add(k);
    inclusive.set(k, (inclusive.get(k) ?? 0) + 1);
  }
}
const byFile = new Map<string, number>();
for (const [k, v] of self) {
  const f = k.split(' ')[1]!.replace(/:\d+$/, '');
  byFile.set(f, (byFile.get(f) ?? 0) + v);
}
const pct = (v: number) => `${((v / total) * 100).toFixed(1).padStart(5)}%`;
console.log(`\nProfile kept for Chrome DevTools: ${join(profDir, file)}`);
console.log(`Shares below are of the ${total} busy samples of the last ${seconds} s.`);
console.log('\nTop functions by self time:');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${pct(v)}  ${k}`);
console.log('\nTop files by self time:');
for (const [k, v] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${pct(v)}  ${k}`);
console.log('\nTop functions by total time (self and callees), outside node core:');
for (const [k, v] of [...inclusive]
  .filter(([k]) => /nm:|\/runtime\/|\/core\/|\/generated\//.test(k))
  .sort((a, b) => b[1] - a[1])
  .slice(0, 40))
  console.log(`${pct(v)}  ${k}`);
process.exit(0);
