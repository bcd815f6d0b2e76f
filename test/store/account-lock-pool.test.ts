/**
 * PostgreSQL account locks (a token refresh each) hold their advisory lock on a connection of their own pool, so the
 * work done under the lock can always query. With one pool, as many refreshes at once as the pool had connections
 * each held one for its lock and waited for a second: the service stopped for good (bench/scale.ts, 32 clients on
 * expired accounts, DATABASE_POOL_SIZE 10). Here the pool has 2 connections and 8 locks are taken at once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { LockTimeout } from '../../runtime/store/types.ts';
import { PG_URL } from '../helpers/harness.ts';

const schema = `lockpool_${Date.now().toString(36)}`;
const store = new PostgresStore(PG_URL, schema, 2);

afterAll(async () => {
  await store.close();
  const pg = new PostgresStore(PG_URL);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
});

describe('withAccountLock on PostgreSQL', () => {
  it('lets the work under more locks than the pool has connections query the store', async () => {
    await store.migrate();
    const held: string[] = [];
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        store.withAccountLock(`ca_lock_${i}`, async () => {
          held.push(`ca_lock_${i}`);
          // Two reads through the main pool while the lock is held (a refresh reads and then writes the account).
          await store.getAccount(`ca_lock_${i}`);
          await new Promise((r) => setTimeout(r, 10));
          return (await store.listConnections()).length;
        }),
      ),
    );
    expect(results).toEqual(Array(8).fill(0));
    expect(held).toHaveLength(8);
  });

  it('one account is locked once at a time; a second taker waits for it', async () => {
    const order: string[] = [];
    let release!: () => void;
    const first = store.withAccountLock('ca_same', async () => {
      order.push('first in');
      await new Promise<void>((r) => (release = r));
      order.push('first out');
    });
    while (!order.length) await new Promise((r) => setTimeout(r, 5));
    const second = store.withAccountLock('ca_same', () => Promise.resolve(void order.push('second in')), 30_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual(['first in']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
  });

  it('gives up with LockTimeout when every lock connection stays busy past the wait', async () => {
    const releases: Array<() => void> = [];
    const holders = [0, 1].map((i) =>
      store.withAccountLock(`ca_busy_${i}`, () => new Promise<void>((r) => releases.push(r))),
    );
    while (releases.length < 2) await new Promise((r) => setTimeout(r, 5));
    await expect(store.withAccountLock('ca_busy_2', () => Promise.resolve('never'), 100)).rejects.toBeInstanceOf(
      LockTimeout,
    );
    for (const r of releases) r();
    await Promise.all(holders);
    // The connection that came back after the wait serves the next lock.
    expect(await store.withAccountLock('ca_busy_2', () => Promise.resolve('now'), 5_000)).toBe('now');
  });
});
