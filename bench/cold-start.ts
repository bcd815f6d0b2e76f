/**
 * `npx tsx bench/cold-start.ts [starts] [core]`: the cold start and idle memory of the working tree's service,
 * started as `npm start` runs it (built once, then `node dist/runtime/main.js`, empty data directory, on one
 * core). For each start: spawn to the first 200 from /health, the CPU the process used by then, and its RSS
 * (VmRSS) 1 s later; then the medians. `npm run bench` measures the same two things among the rest; this is the
 * quick loop for working on them.
 */
import { startService } from './service.ts';
import { median, rssMb, sleep } from './system.ts';

const starts = Number(process.argv[2] ?? 5);
const core = Number(process.argv[3] ?? 1);
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
if (!Number.isInteger(starts) || starts < 1)
  throw new Error(`starts must be a positive integer, not ${process.argv[2]}`);

const runs: Array<{ ms: number; cpuMs: number; rssMb: number }> = [];
for (let i = 0; i < starts; i++) {
  const s = await startService({ label: 'current', root: ROOT }, core);
  await sleep(1000);
  runs.push({ ms: s.startMs, cpuMs: s.startCpuMs, rssMb: rssMb(s.pid) });
  await s.stop();
}
const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
console.log(
  `cold start (ms):        ${list(runs.map((r) => r.ms))}; median ${median(runs.map((r) => r.ms)).toFixed(0)}`,
);
console.log(
  `CPU until /health (ms): ${list(runs.map((r) => r.cpuMs))}; median ${median(runs.map((r) => r.cpuMs)).toFixed(0)}`,
);
console.log(
  `idle RSS (MB):          ${runs.map((r) => r.rssMb.toFixed(1)).join(', ')}; median ${median(runs.map((r) => r.rssMb)).toFixed(1)}`,
);
