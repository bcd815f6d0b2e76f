/** Recall of tool search over a set of tasks, each with the tool (or equally fitting tools) it needs. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ToolSearch } from '../../runtime/tools/search.ts';

export interface SearchTask {
  task: string;
  tools: string[];
}

export const EVAL_SET = 'tool-search-eval.json';
export const HOLDOUT_SET = 'tool-search-holdout.json';

export function loadTasks(file: string): SearchTask[] {
  return JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', file), 'utf8')) as SearchTask[];
}

export interface Recall {
  tasks: number;
  /** Tasks whose tool ranked first. */
  top1: number;
  /** Tasks whose tool ranked in the first five. */
  top5: number;
  misses: Array<{ task: string; expected: string[]; got: string[] }>;
}

export function recall(search: ToolSearch, tasks: readonly SearchTask[]): Recall {
  const out: Recall = { tasks: tasks.length, top1: 0, top5: 0, misses: [] };
  for (const t of tasks) {
    const got = search(t.task, { limit: 5 }).map((h) => h.name);
    const rank = got.findIndex((name) => t.tools.includes(name));
    if (rank === 0) out.top1++;
    if (rank >= 0) out.top5++;
    else out.misses.push({ task: t.task, expected: t.tools, got });
  }
  return out;
}
