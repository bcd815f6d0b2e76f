/**
 * The audit log's group commits (issue 35, upserts per second): entries recorded in the same turn of the event loop,
 * or while a batch is being written, are written together under one lock of the chain's head, in the order they
 * were recorded, and each caller gets its own entry back. Statements counted, on both databases; a failed batch
 * rejects its callers and loses nothing written before it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditLog, verifyAudit } from '../../runtime/audit/log.ts';
import { createLogger } from '../../runtime/log.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import type { Store } from '../../runtime/store/types.ts';
import { PG_URL } from '../helpers/harness.ts';
import { recordStatements } from '../helpers/statements.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-audit-batch-'));
const schema = `audit_batch_${Date.now().toString(36)}`;
const open: Record<string, () => Store> = {
  sqlite: () => new SqliteStore(join(dir, 'audit.sqlite')),
  postgres: () => new PostgresStore(PG_URL, schema),
};
const log = createLogger('silent');

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const pg = new PostgresStore(PG_URL);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
});

const headLocks = (statements: Array<{ sql: string }>) =>
  statements.filter((s) => /^\s*update "?audit_head"?\s+set "?seq"?/i.test(s.sql)).length;
const entryInserts = (statements: Array<{ sql: string }>) =>
  statements.filter((s) => /^\s*insert into "?audit_events"?/i.test(s.sql)).length;
const ctx = { actorType: 'credential' as const, actorId: 'client-1', sourceAddress: '10.0.0.7', requestId: null };

describe.each(['sqlite', 'postgres'])('%s', (kind) => {
  it('entries recorded in one turn are one batch: one head lock, in order, each caller its own entry', async () => {
    const store = open[kind]!();
    await store.migrate();
    const audit = new AuditLog(store, log);
    const recording = recordStatements();
    try {
      const n = 450; // over the 200 rows one insert statement carries
      const written = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          audit.record(ctx, { action: 'account.upsert', targetType: 'connected_account', targetId: `ca_${i}` }),
        ),
      );
      expect(headLocks(recording.statements)).toBe(1);
      expect(entryInserts(recording.statements)).toBe(3);
      expect(written.map((e) => e.targetId)).toEqual(Array.from({ length: n }, (_, i) => `ca_${i}`));
      expect(written.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      for (let i = 1; i < n; i++) expect(written[i]!.prevHash).toBe(written[i - 1]!.hash);

      // Recorded while a batch is being written: the next batch takes all of them at once.
      recording.statements.length = 0;
      const first = audit.record(ctx, { action: 'connection.update', targetType: 'connection', targetId: 'c0' });
      await new Promise((r) => setImmediate(r)); // the first batch has started
      const more = Array.from({ length: 20 }, (_, i) =>
        audit.record(ctx, { action: 'connection.update', targetType: 'connection', targetId: `c${i + 1}` }),
      );
      await Promise.all([first, ...more]);
      await audit.drain();
      expect(headLocks(recording.statements)).toBe(2);
      expect(await verifyAudit(store)).toMatchObject({ ok: true, checked: n + 21, problems: [] });
    } finally {
      recording.stop();
      await store.close();
    }
  });

  it('a batch that cannot be written rejects its callers; the chain before it stays whole', async () => {
    const store = open[kind]!();
    const audit = new AuditLog(store, log);
    const before = await store.auditHead();
    // A value the database refuses mid-batch (a duplicate id): the whole batch is rolled back.
    const entries = Array.from({ length: 3 }, (_, i) =>
      audit.record(ctx, { action: 'connection.update', targetType: 'connection', targetId: `x${i}` }),
    );
    const original = store.appendAuditEvents.bind(store);
    store.appendAuditEvents = (es, hashOf) => original([...es, { ...es[0]! }], hashOf);
    const outcomes = await Promise.allSettled(entries);
    store.appendAuditEvents = original;
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(await store.auditHead()).toEqual(before);
    const after = await audit.record(ctx, { action: 'connection.update', targetType: 'connection', targetId: 'y' });
    expect(after.seq).toBe(before.seq + 1);
    expect(await verifyAudit(store)).toMatchObject({ ok: true, problems: [] });
    await store.close();
  });
});
