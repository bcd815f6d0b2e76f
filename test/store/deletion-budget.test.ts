/**
 * Connection-delete batches sized by time (issue 35, no operation that freezes the service): a batch that took
 * longer than its budget makes the next one smaller in proportion (at least 10 accounts), one that took under half
 * of it makes the next one twice as large (at most BATCH_SIZE). On SQLite a batch holds the event loop, so a large
 * connection's delete must not run 500-account batches that each take 120 ms. Counted, not timed: with a budget of
 * 0 every batch is over it; the batches are the outbox's multi-row inserts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { nextBatchSize } from '../../runtime/jobs/batch-size.ts';
import { ConnectionDeletions, type DeletionDeps } from '../../runtime/jobs/connection-deletions.ts';
import { Foreground } from '../../runtime/jobs/foreground.ts';
import { EventEmitter } from 'node:events';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import type { Store } from '../../runtime/store/types.ts';
import { seedAccounts, testKeys, tokenConnection } from '../helpers/scale.ts';
import { recordStatements } from '../helpers/statements.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-deletion-budget-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A store in `file` with one connection holding `n` seeded accounts (their ids returned in order). */
async function seeded(file: string, n: number) {
  const store: Store = new SqliteStore(join(dir, file));
  await store.migrate();
  const connection = tokenConnection('big');
  await store.createConnection(connection);
  const ids = await seedAccounts(store, testKeys('k1').sealer, connection.id, n);
  return { store, connection, ids };
}

/** Deletions on `store` with a test's batch settings (nothing to wake, no log). */
function deletionsOn(store: Store, opts: Pick<DeletionDeps, 'batchSize' | 'batchBudgetMs' | 'foreground'>) {
  return new ConnectionDeletions({ store, log: pino({ level: 'silent' }), onEvents: () => {}, ...opts });
}

/** Resolves once the deletion is done (polled: it goes on in the background). */
async function finished(store: Store, id: string): Promise<void> {
  while ((await store.getConnectionDeletion(id))?.status !== 'done') await new Promise((r) => setTimeout(r, 20));
}

describe('nextBatchSize', () => {
  it('shrinks in proportion to the overrun, grows when well under, and keeps its bounds', () => {
    expect(nextBatchSize(500, 125, 25, 500)).toBe(100);
    expect(nextBatchSize(500, 30, 25, 500)).toBe(416);
    expect(nextBatchSize(100, 5, 25, 500)).toBe(200);
    expect(nextBatchSize(400, 5, 25, 500)).toBe(500);
    expect(nextBatchSize(100, 20, 25, 500)).toBe(100);
    expect(nextBatchSize(12, 1000, 25, 500)).toBe(10);
    expect(nextBatchSize(500, 1, 0, 500)).toBe(10);
    expect(nextBatchSize(500, 10_000, Infinity, 500)).toBe(500);
  });
});

describe('a connection delete over its time budget', () => {
  it('runs its later batches smaller, and still deletes every account with one event each', async () => {
    const n = 300;
    const { store, connection } = await seeded('acs.sqlite', n);
    const recording = recordStatements();
    try {
      const deletions = deletionsOn(store, { batchSize: 100, batchBudgetMs: 0 });
      const d = await deletions.request(connection);
      await finished(store, d.id);
      await deletions.stop();
      const outboxInserts = recording.statements.filter((s) => /^\s*insert into "?webhook_outbox"?/i.test(s.sql));
      // The first batch at full size (100), then batches of 10: 1 + 200 / 10.
      expect(outboxInserts.length).toBe(21);
      expect(await store.countAccounts(connection.id)).toBe(0);
      expect((await store.getConnectionDeletion(d.id))?.accountsDeleted).toBe(n);
    } finally {
      recording.stop();
      await store.close();
    }
  });
});

describe('a connection delete beside requests in flight', () => {
  it('runs no batch while a request is served, and goes on once it is answered', async () => {
    const { store, connection } = await seeded('acs-foreground.sqlite', 100);
    const foreground = new Foreground(Infinity);
    const request = new EventEmitter();
    try {
      const deletions = deletionsOn(store, { batchSize: 10, batchBudgetMs: Infinity, foreground });
      foreground.track(request);
      // The request's own first batch runs; the next waits for the request in flight.
      const d = await deletions.request(connection);
      for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5));
      expect((await store.getConnectionDeletion(d.id))?.accountsDeleted).toBe(10);
      request.emit('close');
      await finished(store, d.id);
      await deletions.stop();
      expect((await store.getConnectionDeletion(d.id))?.accountsDeleted).toBe(100);
      expect(foreground.stats.waits).toBeGreaterThanOrEqual(1);
    } finally {
      await store.close();
    }
  });
});

describe('a connection delete, batch after batch', () => {
  it('reads each batch after the last account of the one before, and ends on a read from the first', async () => {
    const { store, connection, ids } = await seeded('acs-keyset.sqlite', 300);
    const recording = recordStatements();
    try {
      const deletions = deletionsOn(store, { batchSize: 100, batchBudgetMs: Infinity });
      const d = await deletions.request(connection);
      await finished(store, d.id);
      await deletions.stop();
      const deletes = recording.statements.filter((s) => /^\s*delete from "connected_accounts"/i.test(s.sql));
      // The account each batch read after (none: from the first): three full batches, one after the last account
      // that found none, and the read from the first that let the deletion finish.
      const last = ids.at(-1);
      expect(deletes.map((s) => s.params.find((p) => typeof p === 'string' && p.startsWith('ca_')))).toEqual([
        undefined,
        expect.stringMatching(/^ca_/),
        expect.stringMatching(/^ca_/),
        last,
        undefined,
      ]);
      expect((await store.getConnectionDeletion(d.id))?.accountsDeleted).toBe(300);
    } finally {
      recording.stop();
      await store.close();
    }
  });
});
