/**
 * `npx tsx bench/profile.ts <proxy|tool> [seconds]`: runs the service under `node --cpu-prof` on one core
 * while wrk drives one scenario from the other (as in `npm run bench`), then prints the functions and files
 * with the most self time. For finding where the service's per-request cost goes.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { checkScenarios, prepare, requests, serviceToken, startService } from './service.ts';
import { ensureTools, freePort, pinSelf, spawnOnCore, stop } from './system.ts';
import { runWrk } from './wrk.ts';

const scenario = process.argv[2];
if (scenario !== 'proxy' && scenario !== 'tool') throw new Error('usage: bench/profile.ts <proxy|tool> [seconds]');
const seconds = Number(process.argv[3] ?? 8);
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
ensureTools();
pinSelf(0);

const upPort = await freePort();
const up = spawnOnCore(0, process.execPath, ['--import', 'tsx', join(ROOT, 'bench/upstream.ts'), String(upPort)], {
  cwd: ROOT,
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
await new Promise((r) => up.once('message', r));
const upstreamUrl = `http://127.0.0.1:${upPort}`;
const profDir = mkdtempSync(join(os.tmpdir(), 'acs-prof-'));
const svc = await startService({ label: 'current', root: ROOT }, 1, ['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
const token = await serviceToken(svc.url);
await prepare(svc.url, upstreamUrl, token);
await checkScenarios(svc.url, token);
const r = await runWrk(requests(svc.url, token)[scenario], { core: 0, connections: 32, seconds });
console.log(
  `${scenario}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, errors ${r.errors}`,
);
// SIGTERM lets the service close and write its profile.
await svc.stop();
await stop(up);

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
}
const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no CPU profile was written to ${profDir}`);
const prof = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as { nodes: Node[] };
const self = new Map<string, number>();
let total = 0;
for (const n of prof.nodes) {
  const key = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*node_modules\//, 'nm:').replace(ROOT, '')}:${n.callFrame.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + n.hitCount);
  total += n.hitCount;
}
const byFile = new Map<string, number>();
for (const [k, v] of self) {
  const f = k.split(' ')[1]!.replace(/:\d+$/, '');
  byFile.set(f, (byFile.get(f) ?? 0) + v);
}
console.log(`\nProfile kept for Chrome DevTools: ${join(profDir, file)}`);
console.log('\nTop functions by self time:');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30))
  console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
console.log('\nTop files by self time:');
for (const [k, v] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 25))
  console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
process.exit(0);
