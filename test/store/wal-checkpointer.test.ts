/**
 * WAL checkpoints on a thread of their own (runtime/store/wal-checkpointer.ts): started by a fast write rate, not
 * by a trickle; checkpointing the store's real file from its own connection; ended when the writes slow down or the
 * store closes; and, when the thread dies, SQLite's own checkpoints back on the main connection.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { inTransaction, type Db } from '../../runtime/store/backend.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import type { ActivityRecord } from '../../runtime/store/types.ts';
import {
  SAFETY_PAGES,
  SQLITE_DEFAULT_PAGES,
  type CheckpointUpkeep,
  type UpkeepOptions,
} from '../../runtime/store/wal-checkpointer.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-wal-checkpoints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Backend {
  raw: Database.Database;
  db: Db;
  startUpkeep(onProblem: (message: string, e: Error) => void, options?: UpkeepOptions): void;
  checkpoints: CheckpointUpkeep | undefined;
  walIndex: { frames(): number | undefined };
}
const backendOf = (store: SqliteStore) => (store as unknown as { backend: Backend }).backend;
const mainMark = (store: SqliteStore) => backendOf(store).raw.pragma('wal_autocheckpoint', { simple: true });

let n = 0;
const rows = (count: number): ActivityRecord[] =>
  Array.from({ length: count }, () => ({
    id: `prx_${String(++n).padStart(12, '0')}`,
    kind: 'proxy' as const,
    name: 'GET /v2/tickets/123',
    connectionName: 'helpdesk',
    accountId: null,
    identifier: 'user-1',
    status: 200,
    errorCode: null,
    latencyMs: 3,
    createdAt: Date.now(),
  }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(10);
}

/** A migrated store with its upkeep started, closed after `fn`; `fn` may close it first. */
async function withUpkeep(
  name: string,
  options: UpkeepOptions,
  fn: (t: { store: SqliteStore; path: string; problems: string[]; checkpoints: CheckpointUpkeep }) => Promise<void>,
): Promise<void> {
  const path = join(dir, `${name}.sqlite`);
  const store = new SqliteStore(path);
  const problems: string[] = [];
  try {
    await store.migrate();
    backendOf(store).startUpkeep((m) => problems.push(m), options);
    await fn({ store, path, problems, checkpoints: backendOf(store).checkpoints! });
  } finally {
    await store.close();
  }
}

/**
 * Another connection on the file, as another process (the key tool, a bulk writer, one killed since): it writes
 * `rows` rows of 3 KB (about a page each) and, never checkpointing, leaves them in the WAL. The caller closes it.
 */
function otherProcessWrote(path: string, prefix: string, rows: number): Database.Database {
  const other = new Database(path);
  other.pragma('wal_autocheckpoint = 0');
  const insert = other.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
  other.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(`${prefix}-${i}`, 'x'.repeat(3000));
  })();
  return other;
}

/** Options under which nothing happens on its own: every checkpoint, start and end is one the test makes. */
const still = (over: Partial<UpkeepOptions>): UpkeepOptions => ({
  // 150 activity rows append 7 pages to the WAL, 200 rows 15, 500 rows 31 (this SQLite, these rows).
  startPages: 5,
  windowMs: 600_000,
  quietWindows: 1,
  checkpointPages: 1_000_000,
  ...over,
});

describe('WAL checkpoints on a thread of their own', () => {
  it('start with a fast write rate, not with a trickle, and checkpoint the store file from their own connection', () =>
    withUpkeep('rate', still({ startPages: 25 }), async ({ store, path, problems, checkpoints }) => {
      await store.recordActivity(rows(200));
      expect(checkpoints.running).toBe(false);
      expect(mainMark(store)).toBe(SQLITE_DEFAULT_PAGES);

      await store.recordActivity(rows(300));
      expect(checkpoints.running).toBe(true);
      expect(checkpoints.started).toBe(1);
      // The main connection no longer checkpoints at SQLite's mark, only far past it.
      expect(mainMark(store)).toBe(SAFETY_PAGES);

      await store.recordActivity(rows(3_000));
      const before = statSync(path).size;
      const result = await checkpoints.checkpoint()!;
      expect(result.busy).toBe(false);
      expect(result.log).toBeGreaterThan(0);
      expect(result.checkpointed).toBe(result.log);
      // The pages are in the database file now, written by the thread's connection.
      expect(statSync(path).size).toBeGreaterThan(before);
      expect((await store.listActivity(5)).length).toBe(5);
      expect(problems).toEqual([]);
    }));

  it('finishes a checkpoint that commits overtook, so the WAL starts over without the main connection checkpointing', () =>
    withUpkeep('overtaken', still({}), async ({ store, path, problems, checkpoints }) => {
      await store.recordActivity(rows(150));
      expect(checkpoints.running).toBe(true);
      await checkpoints.checkpoint();
      const insert = backendOf(store).raw.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
      const write = (prefix: string, count: number) =>
        backendOf(store).raw.transaction(() => {
          for (let i = 0; i < count; i++) insert.run(`${prefix}-${i}`, 'x'.repeat(3000));
        })();
      write('before', 200);
      // A reader still on that snapshot, while 200 more pages are committed: the thread's first step (PASSIVE) can
      // copy only up to the reader's snapshot, as it can copy only up to its own start when commits keep coming.
      const reader = new Database(path);
      try {
        reader.exec('BEGIN');
        reader.prepare('SELECT count(*) FROM meta').get();
        write('after', 200);
        const before = statSync(path).size;
        const result = checkpoints.checkpoint()!;
        await until(() => statSync(path).size > before);
        reader.exec('COMMIT');
        const done = await result;
        expect(done).toMatchObject({ busy: false, full: true });
        expect(done.checkpointed).toBe(done.log);
      } finally {
        reader.close();
      }
      // Everything is in the database file and synced, so the next commit starts the WAL over: one page, where it
      // would have been page 400 and more, until the main connection checkpointed by itself at SAFETY_PAGES.
      write('next', 1);
      expect(backendOf(store).walIndex.frames()).toBeLessThan(10);
      expect(problems).toEqual([]);
    }));

  it('gives up its second step, not the writers, while a reader stays on an older snapshot', () =>
    withUpkeep('stuck-reader', still({}), async ({ store, path, problems, checkpoints }) => {
      await store.recordActivity(rows(150));
      await checkpoints.checkpoint();
      const insert = backendOf(store).raw.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
      insert.run('before', 'x'.repeat(3000));
      // Another process's long read (a backup, an open shell): it never ends while the thread checkpoints.
      const reader = new Database(path);
      try {
        reader.exec('BEGIN');
        reader.prepare('SELECT count(*) FROM meta').get();
        for (let i = 0; i < 100; i++) insert.run(`after-${i}`, 'x'.repeat(3000));
        const pending = checkpoints.checkpoint()!;
        // A store transaction meanwhile: it waits on timers while FULL holds the write lock (waiting FULL_WAIT_MS
        // for the reader), and commits once FULL lets go.
        await store.recordActivity(rows(5));
        const result = await pending;
        // FULL let go of the reader it waited for: the pages after its snapshot stay in the WAL, none lost.
        expect(result).toMatchObject({ busy: true, full: false });
        expect(result.checkpointed).toBeLessThan(result.log);
      } finally {
        reader.close();
      }
      expect(backendOf(store).raw.prepare('SELECT count(*) AS n FROM meta WHERE key LIKE ?').get('after-%')).toEqual({
        n: 100,
      });
      expect(problems).toEqual([]);
    }));

  it('asks the thread for a checkpoint every checkpointPages pages appended to the WAL', () =>
    withUpkeep('cadence', still({ checkpointPages: 100 }), async ({ store, path, problems, checkpoints }) => {
      await store.recordActivity(rows(150));
      expect(checkpoints.running).toBe(true);
      // Once the thread answers, everything so far is in the database file.
      await checkpoints.checkpoint();
      const before = statSync(path).size;
      // 2 000 rows, about 150 pages: the upkeep asks the thread by itself. Nothing else copies pages here: the thread has no timer,
      // and the main connection would only checkpoint past SAFETY_PAGES.
      for (let i = 0; i < 8; i++) await store.recordActivity(rows(250));
      await until(() => statSync(path).size > before);
      expect(problems).toEqual([]);
    }));

  it('counts the pages of every commit: transactions start the thread and pace its checkpoints as batches do', () =>
    withUpkeep(
      'transactions',
      still({ startPages: 25, checkpointPages: 100 }),
      async ({ store, path, checkpoints }) => {
        const db = backendOf(store).db;
        // Rows of 3 KB, ten a transaction (a group commit each): no batched row at all.
        const write = async (from: number, to: number) => {
          for (let i = from; i < to; i += 10)
            await inTransaction(db, (tx) =>
              tx
                .insertInto('meta')
                .values(Array.from({ length: 10 }, (_, j) => ({ key: `t-${i + j}`, value: 'x'.repeat(3000) })))
                .execute(),
            );
        };
        await write(0, 10);
        expect(checkpoints.running).toBe(false);
        await write(10, 100);
        expect(checkpoints.running).toBe(true);
        await checkpoints.checkpoint();
        const before = statSync(path).size;
        // About 100 pages more: the upkeep asks the thread by itself.
        await write(100, 400);
        await until(() => statSync(path).size > before);
      },
    ));

  it('counts another process’s commits at its next look for changes, before its own next commit could checkpoint', () =>
    withUpkeep(
      'others',
      still({ startPages: 25, checkpointPages: 100 }),
      async ({ store, path, problems, checkpoints }) => {
        await store.watchChanges();
        const other = otherProcessWrote(path, 'other', 200);
        try {
          expect(checkpoints.running).toBe(false);
          expect(mainMark(store)).toBe(SQLITE_DEFAULT_PAGES);
          const before = statSync(path).size;
          // The look each request's first read makes. Before, the pages were counted only after the store's own next
          // commit, inside which SQLite's mark (1 000 pages) could find them first and copy them on the event loop.
          store.changes.poll();
          expect(checkpoints.running).toBe(true);
          expect(mainMark(store)).toBe(SAFETY_PAGES);
          // A checkpoint's worth already: the thread is asked at once, and copies them into the database file.
          await until(() => statSync(path).size > before);
          expect(problems).toEqual([]);
        } finally {
          other.close();
        }
      },
    ));

  it('takes over a WAL that a killed process left, instead of the first commit checkpointing it on the event loop', async () => {
    const path = join(dir, 'left.sqlite');
    const first = new SqliteStore(path);
    await first.migrate();
    await first.close();
    const store = new SqliteStore(path);
    let killed: Database.Database | undefined;
    try {
      // A process that wrote 600 pages and was killed: its connection never closed, so they are still in the WAL
      // (kept open here, as the killed one's WAL stays; the store's recovery would count them all as not yet copied).
      killed = otherProcessWrote(path, 'left', 600);
      await store.migrate();
      const before = statSync(path).size;
      const problems: string[] = [];
      // The service's options (UPKEEP_DEFAULTS): nothing written since, and the thread runs.
      backendOf(store).startUpkeep((m) => problems.push(m));
      const checkpoints = backendOf(store).checkpoints!;
      expect(checkpoints.running).toBe(true);
      expect(mainMark(store)).toBe(SAFETY_PAGES);
      await until(() => statSync(path).size > before);
      expect(problems).toEqual([]);
    } finally {
      await store.close();
      killed?.close();
    }
  });

  it('leaves a fresh store’s migrations to SQLite: no thread for a few hundred pages', async () => {
    const path = join(dir, 'fresh.sqlite');
    const store = new SqliteStore(path);
    try {
      await store.migrate();
      backendOf(store).startUpkeep(() => {});
      expect(backendOf(store).checkpoints!.running).toBe(false);
      expect(mainMark(store)).toBe(SQLITE_DEFAULT_PAGES);
    } finally {
      await store.close();
    }
  });

  it('ends when the writes slow down, hands checkpoints back to SQLite, and starts again when they pick up', () =>
    withUpkeep('idle', still({ windowMs: 100, quietWindows: 3 }), async ({ store, problems, checkpoints }) => {
      await store.recordActivity(rows(150));
      expect(checkpoints.running).toBe(true);
      await until(() => !checkpoints.running);
      await until(() => mainMark(store) === SQLITE_DEFAULT_PAGES);

      await store.recordActivity(rows(150));
      expect(checkpoints.running).toBe(true);
      expect(checkpoints.started).toBe(2);
      expect(mainMark(store)).toBe(SAFETY_PAGES);
      expect(problems).toEqual([]);
    }));

  it('puts SQLite’s own checkpoints back, and says so, when the thread dies', () =>
    withUpkeep('dies', still({}), async ({ store, problems, checkpoints }) => {
      await store.recordActivity(rows(150));
      await checkpoints.checkpoint();
      // The thread ends as a crash would end it: not through stop().
      const thread = (checkpoints as unknown as { thread: { worker: { terminate(): Promise<number> } } }).thread;
      await thread.worker.terminate();
      await until(() => problems.length > 0);
      expect(problems).toEqual(['WAL checkpoints are back on the main thread: their thread failed']);
      expect(checkpoints.running).toBe(false);
      expect(mainMark(store)).toBe(SQLITE_DEFAULT_PAGES);
      // No thread again for this store: a failing one is not restarted in a loop.
      await store.recordActivity(rows(150));
      expect(checkpoints.running).toBe(false);
      expect((await store.listActivity(1)).length).toBe(1);
    }));

  it('closes the thread’s connection before the store’s, which then leaves no WAL behind', () =>
    withUpkeep('close', still({}), async ({ store, path, checkpoints }) => {
      await store.recordActivity(rows(1_000));
      expect(checkpoints.running).toBe(true);
      expect(existsSync(`${path}-wal`)).toBe(true);
      await store.close();
      expect(checkpoints.running).toBe(false);
      // The last connection to close checkpoints and deletes the WAL: the store's own, since the thread's closed first.
      expect(existsSync(`${path}-wal`)).toBe(false);
    }));
});
