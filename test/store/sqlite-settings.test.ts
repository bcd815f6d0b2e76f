/**
 * The settings the SQLite store opens its connection with: what its durability, its integrity and its memory
 * rest on. Each is per connection, so each is read back on the store's own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { PAGE_CACHE_KIB, SqliteStore } from '../../runtime/store/sqlite.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-sqlite-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The store's own connection (the settings below are not visible from another one). */
const connectionOf = (store: SqliteStore) => (store as unknown as { backend: { raw: Database.Database } }).backend.raw;

describe('the SQLite store connection', () => {
  it('is in WAL mode, syncs at checkpoints, checks foreign keys, waits for locks, and keeps a 2 MB page cache', async () => {
    const store = new SqliteStore(join(dir, 'settings.sqlite'));
    try {
      const raw = connectionOf(store);
      const read = (name: string) => raw.pragma(name, { simple: true });
      expect(read('journal_mode')).toBe('wal');
      expect(read('synchronous')).toBe(1); // NORMAL
      expect(read('foreign_keys')).toBe(1);
      expect(read('busy_timeout')).toBe(5000);
      // Negative: a size in KiB. better-sqlite3's build would otherwise give every connection 16 MB (-16000).
      expect(PAGE_CACHE_KIB).toBe(2000);
      expect(read('cache_size')).toBe(-PAGE_CACHE_KIB);
    } finally {
      await store.close();
    }
  });
});
