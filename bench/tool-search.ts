/**
 * Tool search: recall on the evaluation sets and the time one search takes, over the sets' 150 tasks.
 * Run: npx tsx bench/tool-search.ts
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { connectors, tools } from '../generated/registry.ts';
import { createToolSearch } from '../runtime/tools/search.ts';
import { EVAL_SET, HOLDOUT_SET, loadTasks, recall } from '../test/helpers/tool-search-eval.ts';

const search = createToolSearch(tools, connectors);
const evalTasks = loadTasks(EVAL_SET);
const holdoutTasks = loadTasks(HOLDOUT_SET);

const buildStart = process.cpuUsage();
search('warm up the index');
const buildUsed = process.cpuUsage(buildStart);
const buildMs = (buildUsed.user + buildUsed.system) / 1000;

for (const [name, tasks] of [
  ['evaluation set (tuned on)', evalTasks],
  ['held-out set', holdoutTasks],
] as const) {
  const r = recall(search, tasks);
  console.log(
    `${name}: ${r.tasks} tasks, recall@1 ${(r.top1 / r.tasks).toFixed(3)}, recall@5 ${(r.top5 / r.tasks).toFixed(3)}`,
  );
}

const queries = [...evalTasks, ...holdoutTasks].map((t) => t.task);
const ROUNDS = 7;
const ITERATIONS = 40;
const wall: number[] = [];
const cpu: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  for (let i = 0; i < ITERATIONS; i++) for (const q of queries) search(q, { limit: 5 });
  const used = process.cpuUsage(cpuStart);
  wall.push(((performance.now() - start) * 1000) / (ITERATIONS * queries.length));
  cpu.push((used.user + used.system) / (ITERATIONS * queries.length));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(`index build (${tools.size} tools, on the first search): ${buildMs.toFixed(1)} ms of CPU`);
console.log(
  `search: ${median(cpu).toFixed(1)} µs of CPU, ${median(wall).toFixed(1)} µs of wall time per search ` +
    `(medians of ${ROUNDS} rounds of ${ITERATIONS} × ${queries.length} queries; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} cores)`,
);
