/**
 * DATABASE_POOL_SIZE: the PostgreSQL store of a process holds at most that many connections (default 10).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../runtime/config.ts';
import { openStore } from '../../runtime/store/index.ts';
import type { PostgresStore } from '../../runtime/store/postgres.ts';
import { PG_URL } from '../helpers/harness.ts';

describe('DATABASE_POOL_SIZE', () => {
  it('sizes the PostgreSQL pool, 10 when unset', async () => {
    for (const [value, max] of [
      [undefined, 10],
      ['3', 3],
    ] as const) {
      const config = loadConfig({
        DATABASE_URL: PG_URL,
        DATA_DIR: '/tmp',
        ...(value ? { DATABASE_POOL_SIZE: value } : {}),
      });
      const store = openStore(config) as PostgresStore;
      try {
        expect((store.pool as unknown as { options: { max: number } }).options.max).toBe(max);
        // The pool works at that size: more reads at once than connections all answer.
        const answers = await Promise.all(Array.from({ length: max * 3 }, () => store.pool.query('select 1 as one')));
        expect(answers.every((r) => r.rows[0].one === 1)).toBe(true);
        expect(store.pool.totalCount).toBeLessThanOrEqual(max);
      } finally {
        await store.close();
      }
    }
  });
});
