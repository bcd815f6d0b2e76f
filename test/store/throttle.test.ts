/**
 * The failed-attempt throttle over the store (issue 12, points 1 and 4), on SQLite and PostgreSQL: blocks that
 * grow to the promised 15 minutes, a count that decays slowly instead of resetting when a block ends, and one
 * state for every instance on the same store — concurrent attempts through two store connections all counted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import type { Store } from '../../runtime/store/types.ts';
import { MAX_BLOCK_MS, reserveAll, Throttle } from '../../runtime/auth/throttle.ts';
import { PG_URL } from '../helpers/harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-throttle-'));
const schema = `throttle_${Date.now().toString(36)}`;
const opened: Store[] = [];
const open: Record<'sqlite' | 'postgres', () => Store> = {
  sqlite: () => new SqliteStore(join(dir, 'throttle.sqlite')),
  postgres: () => new PostgresStore(PG_URL, schema),
};
afterAll(async () => {
  for (const s of opened) await s.close();
  const pg = new PostgresStore(PG_URL);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Two stores on the same database: what two service instances sharing it hold. */
async function twoInstances(kind: 'sqlite' | 'postgres'): Promise<[Store, Store]> {
  const a = open[kind]();
  const b = open[kind]();
  opened.push(a, b);
  await a.migrate();
  await b.migrate();
  return [a, b];
}

const MIN = 60_000;

describe.each(['sqlite', 'postgres'] as const)('the throttle on %s', (kind) => {
  it('blocks for 1 s after the free attempts, doubling up to 15 min, and keeps the count when a block ends', async () => {
    const [a] = await twoInstances(kind);
    const t = new Throttle(a, `grow-${kind}:`, { free: 5 });
    let now = 1_000_000_000_000;
    const blocks: number[] = [];
    for (let i = 0; i < 20; i++) {
      expect(await t.reserve('k', now)).toBe(0);
      const wait = await t.blockedFor('k', now);
      blocks.push(wait);
      // The attacker waits each block out exactly, then tries again.
      now += wait;
    }
    expect(blocks.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(blocks.slice(5, 15)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512].map((s) => s * 1000));
    expect(blocks.slice(15)).toEqual(Array(5).fill(MAX_BLOCK_MS));
    // While blocked, an attempt is refused and not counted.
    expect(await t.reserve('k', now - 1)).toBe(1);
  });

  it('forgives one attempt per 15 minutes without any, so about four guesses an hour at the cap', async () => {
    const [a] = await twoInstances(kind);
    const t = new Throttle(a, `decay-${kind}:`, { free: 5 });
    let now = 2_000_000_000_000;
    for (let i = 0; i < 16; i++) now += (await t.reserve('k', now)) || (await t.blockedFor('k', now));
    // An hour of guessing at the cap: each block is 15 min.
    let guesses = 0;
    const end = now + 60 * MIN;
    while (now < end) {
      const refused = await t.reserve('k', now);
      if (refused) now += refused;
      else {
        guesses++;
        expect(await t.blockedFor('k', now)).toBe(MAX_BLOCK_MS);
        now += await t.blockedFor('k', now);
      }
    }
    expect(guesses).toBeLessThanOrEqual(5);
    // A user who stops is forgiven slowly: after 15 × 15 min the count is back within the free attempts.
    now += 16 * 15 * MIN;
    expect(await t.reserve('k', now)).toBe(0);
    expect(await t.blockedFor('k', now)).toBe(0);
  });

  it('is one state for two instances: 40 simultaneous attempts through both are all counted', async () => {
    const [a, b] = await twoInstances(kind);
    const ta = new Throttle(a, `shared-${kind}:`, { free: 5 });
    const tb = new Throttle(b, `shared-${kind}:`, { free: 5 });
    const now = 3_000_000_000_000;
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? ta : tb).reserve('k', now)));
    // The five free attempts and the sixth (which sets the first block) go ahead; every other one is refused.
    expect(results.filter((w) => w === 0)).toHaveLength(6);
    expect(await tb.blockedFor('k', now)).toBe(1000);
    expect(await ta.blockedFor('k', now)).toBe(1000);
    // A success forgets the key (for its identity) in every instance.
    await ta.settleSuccess('k', 'forget', now);
    expect(await tb.blockedFor('k', now)).toBe(0);
    // reserveAll refuses when either key is blocked.
    for (let i = 0; i < 6; i++) await ta.reserve('addr', now);
    expect(
      await reserveAll(
        [
          [ta, 'other'],
          [tb, 'addr'],
        ],
        now,
      ),
    ).toBeGreaterThan(0);
  });
});
