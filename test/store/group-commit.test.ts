/**
 * SQLite's group commit (runtime/store/group-commit.ts, issue 35, upserts per second): the transactions asked for
 * in one turn of the event loop run in one database transaction, one COMMIT for all (statements counted); each
 * keeps its own outcome (a failing one is rolled back to its savepoint, alone); a caller hears of its outcome only
 * after the COMMIT, as another connection sees it; a failed COMMIT fails every member and keeps nothing; a group is
 * bounded by its member count; waiting for another process's write lock never puts the event loop to sleep.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { inTransaction, type Db } from '../../runtime/store/backend.ts';
import { GroupCommit } from '../../runtime/store/group-commit.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { recordStatements } from '../helpers/statements.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-group-commit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A migrated store, its root handle and group commit; closed after `fn`. */
async function withStore(fn: (t: { store: SqliteStore; db: Db; groups: GroupCommit; path: string }) => Promise<void>) {
  const path = join(dir, `store-${++n}.sqlite`);
  const store = new SqliteStore(path);
  await store.migrate();
  const backend = (store as unknown as { backend: { db: Db; groups: GroupCommit } }).backend;
  try {
    await fn({ store, db: backend.db, groups: backend.groups, path });
  } finally {
    await store.close();
  }
}

const put = (db: Db, key: string) =>
  inTransaction(db, async (tx) => {
    await tx.insertInto('meta').values({ key, value: 'v' }).execute();
    return key;
  });
const keys = async (db: Db, prefix: string) =>
  (await db.selectFrom('meta').select('key').where('key', 'like', `${prefix}%`).orderBy('key').execute()).map(
    (r) => r.key,
  );
const count = (statements: Array<{ sql: string }>, re: RegExp) => statements.filter((s) => re.test(s.sql)).length;

describe('group commit on SQLite', () => {
  it('runs the transactions of one turn in one database transaction, one COMMIT for all', () =>
    withStore(async ({ db, groups }) => {
      const before = { ...groups.stats };
      const rec = recordStatements();
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => put(db, `one-${i}`)));
      rec.stop();
      expect(results).toEqual(Array.from({ length: 20 }, (_, i) => `one-${i}`));
      expect(count(rec.statements, /^BEGIN/)).toBe(1);
      expect(count(rec.statements, /^COMMIT/)).toBe(1);
      // The first member needs no savepoint.
      expect(count(rec.statements, /^SAVEPOINT/)).toBe(19);
      expect(count(rec.statements, /^RELEASE/)).toBe(19);
      expect(groups.stats.groups - before.groups).toBe(1);
      expect(groups.stats.members - before.members).toBe(20);
      expect((await keys(db, 'one-')).length).toBe(20);
    }));

  it('rolls a failing transaction back alone, and tells only its caller', () =>
    withStore(async ({ db }) => {
      const failing = (key: string) =>
        inTransaction(db, async (tx) => {
          await tx.insertInto('meta').values({ key, value: 'v' }).execute();
          throw new Error(`no ${key}`);
        });
      const outcomes = await Promise.allSettled([
        // The first member fails: the group's transaction is rolled back and the rest go on in the next one.
        failing('two-a'),
        put(db, 'two-b'),
        failing('two-c'),
        put(db, 'two-d'),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[0] as PromiseRejectedResult).reason).toEqual(new Error('no two-a'));
      expect((outcomes[2] as PromiseRejectedResult).reason).toEqual(new Error('no two-c'));
      expect(await keys(db, 'two-')).toEqual(['two-b', 'two-d']);
    }));

  it('tells a caller only once the COMMIT is done: another connection already sees its write', () =>
    withStore(async ({ db, path }) => {
      const other = new Database(path, { readonly: true });
      try {
        const seen: Array<number> = [];
        await Promise.all(
          Array.from({ length: 5 }, (_, i) =>
            put(db, `three-${i}`).then(() => {
              seen.push(
                (other.prepare(`select count(*) as n from meta where key like 'three-%'`).get() as { n: number }).n,
              );
            }),
          ),
        );
        expect(seen).toEqual([5, 5, 5, 5, 5]);
      } finally {
        other.close();
      }
    }));

  it('fails every member when the COMMIT fails, and keeps nothing of the group', () =>
    withStore(async ({ db }) => {
      const outcomes = await Promise.allSettled([
        put(db, 'four-a'),
        // A foreign key checked at COMMIT (deferred), pointing nowhere: the COMMIT fails.
        inTransaction(db, async (tx) => {
          await sql`PRAGMA defer_foreign_keys = ON`.execute(tx);
          await sql`insert into connected_accounts (id, connection_id, identifier, status, created_at, updated_at)
            values ('ca_orphan', 'conn_missing', 'u', 'ACTIVE', 1, 1)`.execute(tx);
        }),
        put(db, 'four-c'),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(String((outcomes[0] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/);
      expect(await keys(db, 'four-')).toEqual([]);
      // The store goes on.
      expect(await put(db, 'four-d')).toBe('four-d');
    }));

  it('waits for another process’s write lock on timers, not asleep inside SQLite: the event loop goes on', () =>
    withStore(async ({ store, db, path }) => {
      const other = new Database(path);
      try {
        other.exec('BEGIN IMMEDIATE');
        // The lock is let go by a timer of this very thread: a wait inside SQLite (busy_timeout) would never see
        // it fire, and would fail after 5 s with SQLITE_BUSY.
        let released = false;
        setTimeout(() => {
          other.exec('COMMIT');
          released = true;
        }, 50);
        expect(await put(db, 'six-a')).toBe('six-a');
        expect(released).toBe(true);
        // A batched write too (its transaction takes the same way once the lock is busy).
        other.exec('BEGIN IMMEDIATE');
        setTimeout(() => other.exec('COMMIT'), 50);
        await store.recordActivity([
          {
            id: 'prx_group_commit_1',
            kind: 'proxy',
            name: 'GET /x',
            connectionName: 'c',
            accountId: null,
            identifier: 'u',
            status: 200,
            errorCode: null,
            latencyMs: 1,
            createdAt: Date.now(),
          },
        ]);
        expect((await store.listActivity(5)).map((a) => a.id)).toContain('prx_group_commit_1');
        // A write outside any transaction (one statement: a delivery's outcome, a lease renewed) too.
        other.exec('BEGIN IMMEDIATE');
        setTimeout(() => other.exec('COMMIT'), 50);
        await db.insertInto('meta').values({ key: 'six-b', value: 'v' }).execute();
        expect(await keys(db, 'six-b')).toEqual(['six-b']);
        // A write that fails is rolled back, and the store goes on.
        await expect(db.insertInto('meta').values({ key: 'six-b', value: 'v' }).execute()).rejects.toThrow(/UNIQUE/);
        expect(await put(db, 'six-c')).toBe('six-c');
      } finally {
        if (other.inTransaction) other.exec('ROLLBACK');
        other.close();
      }
    }));

  it('bounds a group by its member count; the rest commit in the next', () =>
    withStore(async ({ db }) => {
      const groups = new GroupCommit(db, { maxMembers: 8, budgetMs: 1_000_000 });
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          groups.run(async (tx) => {
            await tx
              .insertInto('meta')
              .values({ key: `five-${i}`, value: 'v' })
              .execute();
            return i;
          }),
        ),
      );
      expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(groups.stats).toEqual({ groups: 3, members: 20 });
      expect((await keys(db, 'five-')).length).toBe(20);
    }));
});
