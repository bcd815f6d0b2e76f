/**
 * How the SQLite store notices other processes' commits: a look at the WAL index's header on every poll, and
 * `PRAGMA data_version` only when that header moved (runtime/store/wal-index.ts). Another connection to the same
 * file stands for another process, as SQLite sees no difference.
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { WalIndexHeader } from '../../runtime/store/wal-index.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-wal-index-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

function walDatabase(): { file: string; db: Database.Database } {
  const file = join(dir, `db-${++files}.sqlite`);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER)');
  return { file, db };
}

describe('WalIndexHeader', () => {
  it('answers "unchanged" until a connection commits, and "maybe changed" after each commit', () => {
    const { file, db } = walDatabase();
    const header = new WalIndexHeader(`${file}-shm`);
    try {
      // Nothing settled yet.
      expect(header.maybeChanged()).toBe(true);
      header.settle();
      expect(header.maybeChanged()).toBe(false);
      expect(header.maybeChanged()).toBe(false);
      db.prepare('INSERT INTO t VALUES (1)').run();
      expect(header.maybeChanged()).toBe(true);
      // Not settled: it keeps saying so.
      expect(header.maybeChanged()).toBe(true);
      header.settle();
      expect(header.maybeChanged()).toBe(false);
      // A second connection's commit moves it too, and so does a checkpoint that starts the WAL over.
      const other = new Database(file);
      other.prepare('INSERT INTO t VALUES (2)').run();
      expect(header.maybeChanged()).toBe(true);
      header.settle();
      other.pragma('wal_checkpoint(TRUNCATE)');
      expect(header.maybeChanged()).toBe(true);
      header.settle();
      other.prepare('INSERT INTO t VALUES (3)').run();
      expect(header.maybeChanged()).toBe(true);
      other.close();
    } finally {
      header.close();
      db.close();
    }
  });

  it('says "maybe changed" on every look when the WAL index cannot be read', () => {
    const header = new WalIndexHeader(join(dir, 'no-such-database.sqlite-shm'));
    expect(header.maybeChanged()).toBe(true);
    header.settle();
    expect(header.maybeChanged()).toBe(true);
    header.close();
  });
});

describe('the SQLite store', () => {
  it("sees another connection's commit at its next poll, running PRAGMA data_version only when the header moved", async () => {
    const store = new SqliteStore(join(dir, 'store.sqlite'));
    await store.migrate();
    const other = new Database(join(dir, 'store.sqlite'));
    try {
      await store.watchChanges();
      const backend = (store as unknown as { backend: { dataVersion: { get: () => unknown } } }).backend;
      const pragma = vi.spyOn(backend.dataVersion, 'get');
      const received = store.changes.received;

      // Nothing committed: no pragma, no change.
      for (let i = 0; i < 5; i++) store.changes.poll();
      expect(pragma).not.toHaveBeenCalled();
      expect(store.changes.received).toBe(received);

      // Another connection commits: the next poll runs the pragma once and drops every cache.
      other.prepare("INSERT INTO meta (key, value) VALUES ('wal-index-test', 'x')").run();
      store.changes.poll();
      store.changes.poll();
      expect(pragma).toHaveBeenCalledTimes(1);
      expect(store.changes.received).toBe(received + 1);

      // The store's own commit moves the header as well: one pragma, which finds no change made elsewhere.
      await store.setMeta('wal-index-own', 'y');
      const afterOwn = store.changes.received;
      store.changes.poll();
      store.changes.poll();
      expect(pragma).toHaveBeenCalledTimes(2);
      expect(store.changes.received).toBe(afterOwn);
      pragma.mockRestore();
    } finally {
      other.close();
      await store.close();
    }
  });

  it('looks at the WAL index of the file a symbolic link names', async () => {
    const real = join(dir, 'real.sqlite');
    const link = join(dir, 'link.sqlite');
    const store = new SqliteStore(real);
    await store.close();
    symlinkSync(real, link);
    const linked = new SqliteStore(link);
    await linked.migrate();
    await linked.watchChanges();
    try {
      const backend = (linked as unknown as { backend: { dataVersion: { get: () => unknown } } }).backend;
      const pragma = vi.spyOn(backend.dataVersion, 'get');
      linked.changes.poll();
      expect(pragma).not.toHaveBeenCalled();
      pragma.mockRestore();
    } finally {
      await linked.close();
    }
  });
});
