import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, heapGrowthFlag } from '../../runtime/heap.ts';

const HEAP_TS = fileURLToPath(new URL('../../runtime/heap.ts', import.meta.url));

describe('heapGrowthFlag', () => {
  it('sets the service factor when the node command line does not', () => {
    expect(heapGrowthFlag([])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    expect(heapGrowthFlag(['--enable-source-maps', '--max-old-space-size=512'])).toBe(
      `--heap-growing-percent=${HEAP_GROWING_PERCENT}`,
    );
  });

  it("leaves an operator's own setting on node's command line alone", () => {
    expect(heapGrowthFlag(['--heap-growing-percent=600'])).toBeUndefined();
    expect(heapGrowthFlag(['--enable-source-maps', '--heap_growing_percent=80'])).toBeUndefined();
    // A longer flag that only starts the same way is not the setting.
    expect(heapGrowthFlag(['--heap-growing-percentage=80'])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  });
});

/**
 * A child process that applies limitHeapGrowth(), then keeps a sliding window of objects long enough for them to be
 * promoted, and prints the largest old generation it saw. Its node flags are the test's.
 */
function largestOldGeneration(nodeFlags: string[]): number {
  const script = `
    import v8 from 'node:v8';
    const { limitHeapGrowth } = await import(${JSON.stringify(HEAP_TS)});
    limitHeapGrowth();
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
    process.stdout.write(String(largest));
  `;
  const run = spawnSync(process.execPath, [...nodeFlags, '--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  if (run.status !== 0) throw new Error(`the child failed: ${run.stderr}`);
  return Number(run.stdout);
}

describe('limitHeapGrowth', () => {
  it("gives the old generation the same room as the flag itself, less than a looser factor's", () => {
    const applied = largestOldGeneration([]);
    const sameByFlag = largestOldGeneration([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
    // The operator's flag wins over the service's: this child grows its old generation by a factor of 7.
    const loose = largestOldGeneration(['--heap-growing-percent=600']);
    expect(applied).toBeGreaterThan(0);
    expect(applied / sameByFlag).toBeGreaterThan(0.75);
    expect(applied / sameByFlag).toBeLessThan(1.25);
    expect(applied).toBeLessThan(loose * 0.6);
  });
});
