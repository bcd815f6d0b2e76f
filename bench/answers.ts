/**
 * Tool answer sizes (issue 40): every answer the nine connectors' end-to-end tests get from the service, run against
 * the fake providers, in tokens (gpt-tokenizer, o200k_base) before (the provider's answer, or a hook's) and after
 * (the concise answer, within the answer budget), each also checked against the tool's output schema
 * (test/helpers/answer-check.ts). Prints the median and p95 over answers and over tools (each tool's largest answer),
 * per connector and in all, and the tools over the budget.
 *
 * Run: npx tsx bench/answers.ts            (runs the nine test files, about five minutes on two cores)
 *      npx tsx bench/answers.ts <dir>      (sums up sizes an earlier run wrote to <dir>)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectors, tools } from '../generated/registry.ts';
import { ANSWER_BUDGET, type AnswerSize } from '../test/helpers/answer-check.ts';

const FILES = ['mail', 'helpdesk', 'crm', 'callintel', 'drive', 'docs', 'notes', 'prodata', 'scraper'].map(
  (c) => `test/e2e/${c}.test.ts`,
);

let dir = process.argv[2];
const ran = !dir;
if (!dir) {
  dir = mkdtempSync(join(tmpdir(), 'acs-answers-'));
  const run = spawnSync('npx', ['vitest', 'run', ...FILES], {
    env: { ...process.env, ANSWER_SIZES_DIR: dir },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (run.status !== 0) {
    console.error(`the test files failed (exit ${run.status}); sizes of the files that finished are still summed up`);
  }
}

const sizes: Array<AnswerSize & { connector: string }> = [];
for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
  const connector = file.replace(/\.json$/, '');
  for (const s of JSON.parse(readFileSync(join(dir, file), 'utf8')) as AnswerSize[]) sizes.push({ ...s, connector });
}
if (ran) rmSync(dir, { recursive: true, force: true });

function percentile(values: number[], p: number): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Each tool's largest answer (by its size before), so a tool called often weighs as one. */
function perTool(list: typeof sizes): AnswerSize[] {
  const byTool = new Map<string, AnswerSize>();
  for (const s of list) {
    const seen = byTool.get(s.tool);
    if (!seen || s.before > seen.before) byTool.set(s.tool, s);
  }
  return [...byTool.values()];
}

const row = (label: string, list: typeof sizes) => {
  const tools = perTool(list);
  const over = tools.filter((t) => t.after > ANSWER_BUDGET).length;
  const cells = [
    label,
    String(tools.length),
    String(list.length),
    `${percentile(
      list.map((s) => s.before),
      50,
    )} → ${percentile(
      list.map((s) => s.after),
      50,
    )}`,
    `${percentile(
      list.map((s) => s.before),
      95,
    )} → ${percentile(
      list.map((s) => s.after),
      95,
    )}`,
    `${percentile(
      tools.map((s) => s.before),
      50,
    )} → ${percentile(
      tools.map((s) => s.after),
      50,
    )}`,
    `${percentile(
      tools.map((s) => s.before),
      95,
    )} → ${percentile(
      tools.map((s) => s.after),
      95,
    )}`,
    `${Math.max(0, ...list.map((s) => s.before))} → ${Math.max(0, ...list.map((s) => s.after))}`,
    String(over),
  ];
  return `| ${cells.join(' | ')} |`;
};

console.log(`Answer sizes in tokens (o200k_base), provider's answer → concise answer; budget ${ANSWER_BUDGET}\n`);
console.log(
  '| Connector | Tools | Answers | Median (answers) | p95 (answers) | Median (tools) | p95 (tools) | Largest | Tools over budget |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const c of connectors.keys()) {
  const list = sizes.filter((s) => s.connector === c);
  if (list.length) console.log(row(c, list));
}
console.log(row('**all**', sizes));
const measured = new Set(sizes.map((s) => s.tool));
const missing = [...tools.keys()].filter((t) => !measured.has(t));
console.log(`\n${measured.size} of ${tools.size} tools answered against the fakes.`);
if (missing.length) console.log(`Not measured (no successful call in the tests): ${missing.join(', ')}`);
