/**
 * A vitest reporter that prints the reliability summary table at the end of the run: per category, how
 * many faults were injected, inputs fuzzed, crashes survived, attacks tried — and how many failed.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter } from 'vitest/reporters';
import { SUMMARY_DIR, type Figure } from './summary.ts';

export default class ReliabilitySummaryReporter implements Reporter {
  onInit(): void {
    rmSync(SUMMARY_DIR, { recursive: true, force: true });
  }

  onTestRunEnd(): void {
    if (!existsSync(SUMMARY_DIR)) return;
    const figures: Figure[] = [];
    for (const f of readdirSync(SUMMARY_DIR).filter((n) => n.endsWith('.jsonl'))) {
      for (const line of readFileSync(join(SUMMARY_DIR, f), 'utf8').split('\n'))
        if (line.trim()) figures.push(JSON.parse(line) as Figure);
    }
    if (!figures.length) return;
    const byCategory = new Map<string, { tried: number; failed: number; groups: number }>();
    for (const f of figures) {
      const c = byCategory.get(f.category) ?? { tried: 0, failed: 0, groups: 0 };
      c.tried += f.tried;
      c.failed += f.failed;
      c.groups++;
      byCategory.set(f.category, c);
    }
    const rows = [
      ['Category', 'Tried', 'Failed', 'Checks'],
      ...[...byCategory].map(([k, v]) => [k, String(v.tried), String(v.failed), String(v.groups)]),
    ];
    const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(w[i]!)).join(' | ')} |`;
    const out = [
      '',
      'Reliability and security summary',
      line(rows[0]!),
      `|${w.map((n) => '-'.repeat(n + 2)).join('|')}|`,
      ...rows.slice(1).map(line),
    ];
    const failing = figures.filter((f) => f.failed > 0);
    if (failing.length)
      out.push('', 'Failures:', ...failing.map((f) => `  [${f.category}] ${f.what}: ${f.failed} of ${f.tried}`));
    console.log(out.join('\n'));
  }
}
