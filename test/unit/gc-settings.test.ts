import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, garbageCollectorFlags } from '../../runtime/heap.ts';

const HEAP_TS = fileURLToPath(new URL('../../runtime/heap.ts', import.meta.url));
const GROWTH = `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
const NO_PRETENURING = '--no-allocation-site-pretenuring';

describe('garbageCollectorFlags', () => {
  it("sets the service's settings when the node command line does not", () => {
    expect(garbageCollectorFlags([])).toEqual([GROWTH, NO_PRETENURING]);
    expect(garbageCollectorFlags(['--enable-source-maps', '--max-old-space-size=512'])).toEqual([
      GROWTH,
      NO_PRETENURING,
    ]);
  });

  it("leaves an operator's own setting on node's command line alone", () => {
    expect(garbageCollectorFlags(['--heap-growing-percent=600'])).toEqual([NO_PRETENURING]);
    expect(garbageCollectorFlags(['--enable-source-maps', '--heap_growing_percent=80'])).toEqual([NO_PRETENURING]);
    // A longer flag that only starts the same way is not the setting.
    expect(garbageCollectorFlags(['--heap-growing-percentage=80'])).toEqual([GROWTH, NO_PRETENURING]);
    expect(garbageCollectorFlags(['--allocation-site-pretenuring'])).toEqual([GROWTH]);
    expect(garbageCollectorFlags(['--no-allocation_site_pretenuring', '--heap-growing-percent=50'])).toEqual([]);
    expect(garbageCollectorFlags(['--allocation-site-pretenuring-x'])).toEqual([GROWTH, NO_PRETENURING]);
  });
});

/** Runs `body` in a child process with `nodeFlags`, after applying tuneGarbageCollector() when `tune` says so. */
function child(nodeFlags: string[], tune: boolean, body: string): string {
  const script = `
    const { tuneGarbageCollector } = await import(${JSON.stringify(HEAP_TS)});
    if (${tune}) tuneGarbageCollector();
    ${body}
  `;
  const run = spawnSync(process.execPath, [...nodeFlags, '--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`the child failed: ${run.stderr}`);
  return run.stdout;
}

/** Keeps a sliding window of objects long enough for them to be promoted; prints the largest old generation seen. */
const SLIDING_WINDOW = `
  const v8 = await import('node:v8');
  const window = [];
  let largest = 0;
  for (let i = 0; i < 3_000_000; i++) {
    window.push({ i, s: 'x' + i, pair: [i, i] });
    if (window.length > 400_000) window.splice(0, 200_000);
    if (i % 10_000 === 0) {
      const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
      largest = Math.max(largest, old.space_size);
    }
  }
  process.stdout.write('largest=' + largest);
`;
const largestOldGeneration = (nodeFlags: string[]) =>
  Number(/largest=(\d+)/.exec(child(nodeFlags, true, SLIDING_WINDOW))![1]);

describe('tuneGarbageCollector', () => {
  it("gives the old generation the same room as the flag itself, less than a looser factor's", () => {
    const applied = largestOldGeneration([]);
    const sameByFlag = largestOldGeneration([GROWTH]);
    // The operator's flag wins over the service's: this child grows its old generation by a factor of 7.
    const loose = largestOldGeneration(['--heap-growing-percent=600']);
    expect(applied).toBeGreaterThan(0);
    expect(applied / sameByFlag).toBeGreaterThan(0.75);
    expect(applied / sameByFlag).toBeLessThan(1.25);
    expect(applied).toBeLessThan(loose * 0.6);
  });

  it('stops V8 from deciding to allocate a literal straight in the old generation', () => {
    // Every object and array made at these literals survives young collections (a million are kept at a time), the
    // case where V8 decides to pretenure them; V8 reports each decision it makes with this flag.
    const keepAll = `
      const keep = [];
      const make = (i) => ({ i, pair: [i, i + 1] });
      for (let i = 0; i < 2_000_000; i++) {
        keep.push(make(i));
        if (keep.length > 1_000_000) keep.length = 0;
      }
      process.stdout.write('kept=' + keep.length + '\\n');
    `;
    const decisions = (out: string) => out.split('\n').filter((l) => /pretenuring: .*=> (maybe )?tenure$/.test(l));
    const untuned = child(['--trace-pretenuring-statistics'], false, keepAll);
    const tuned = child(['--trace-pretenuring-statistics'], true, keepAll);
    const operatorsOwn = child(['--trace-pretenuring-statistics', '--allocation-site-pretenuring'], true, keepAll);
    expect(tuned).toContain('kept=');
    expect(decisions(untuned).length).toBeGreaterThan(0);
    expect(decisions(tuned)).toEqual([]);
    expect(decisions(operatorsOwn).length).toBeGreaterThan(0);
  });
});
