/**
 * `npx tsx bench/cold-start.ts [starts] [core] [tree …]`: the cold start and idle memory of the service, started
 * as `npm start` runs it (built, then `node dist/runtime/main.js`, empty data directory, on one core), for the
 * working tree or for each tree given (another checkout, e.g. `git archive <ref> | tar -x -C <dir>` with a
 * node_modules link), the trees taking turns. For each start: spawn to the first 200 from /health, the CPU the
 * process used by then, and its RSS (VmRSS) 1 s later; then the medians. `npm run bench` measures the same among
 * the rest; this is the quick loop for working on them.
 */
import { startService } from './service.ts';
import { median, rssMb, sleep } from './system.ts';

const starts = Number(process.argv[2] ?? 5);
const core = Number(process.argv[3] ?? 1);
if (!Number.isInteger(starts) || starts < 1)
  throw new Error(`starts must be a positive integer, not ${process.argv[2]}`);
if (!Number.isInteger(core) || core < 0) throw new Error(`core must be a CPU number, not ${process.argv[3]}`);
const trees = process.argv.length > 4 ? process.argv.slice(4) : [new URL('..', import.meta.url).pathname];

const runs = new Map<string, Array<{ ms: number; cpuMs: number; rssMb: number }>>(trees.map((t) => [t, []]));
for (let i = 0; i < starts; i++) {
  // Alternating, so that no tree gets all the quiet or all the busy moments of a shared machine.
  for (const tree of i % 2 ? [...trees].reverse() : trees) {
    const s = await startService({ label: tree, root: tree }, core);
    await sleep(1000);
    runs.get(tree)!.push({ ms: s.startMs, cpuMs: s.startCpuMs, rssMb: rssMb(s.pid) });
    await s.stop();
  }
}
const list = (xs: number[], digits = 0) =>
  `${xs.map((x) => x.toFixed(digits)).join(', ')}; median ${median(xs).toFixed(digits)}`;
for (const [tree, r] of runs) {
  console.log(`${tree}`);
  console.log(`  cold start to first /health (ms): ${list(r.map((x) => x.ms))}`);
  console.log(`  CPU used by then (ms):            ${list(r.map((x) => x.cpuMs))}`);
  console.log(
    `  idle RSS 1 s later (MB):          ${list(
      r.map((x) => x.rssMb),
      1,
    )}`,
  );
}
