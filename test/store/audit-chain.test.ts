/**
 * The audit log's chain under concurrent writers (issue 37, item 3): two store instances on one PostgreSQL database
 * (two service instances) or concurrent appends on one SQLite store append at once, and
 * the chain has no fork and no gap: every entry numbered once, each chained to the one before, the whole verifying.
 * On both databases, against real PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import type { Store } from '../../runtime/store/types.ts';
import { auditHash, verifyAudit } from '../../runtime/audit/log.ts';
import { newId } from '../../runtime/ids.ts';
import { PG_URL } from '../helpers/harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-audit-'));
const schema = `audit_${Date.now().toString(36)}`;
const open: Record<string, () => Store> = {
  sqlite: () => new SqliteStore(join(dir, 'audit.sqlite')),
  postgres: () => new PostgresStore(PG_URL, schema),
};

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const pg = new PostgresStore(PG_URL);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
});

const entry = (actor: string, i: number) => ({
  id: newId('aud'),
  at: Date.now(),
  actorType: 'credential' as const,
  actorId: actor,
  action: 'connection.update',
  targetType: 'connection',
  targetId: `c${i}`,
  sourceAddress: '10.0.0.1',
  requestId: `r${i}`,
  changes: { api_base_url: { from: null, to: `https://example.com/${i}` }, client_secret: 'changed' },
});

describe.each(['sqlite', 'postgres'])('%s', (kind) => {
  it('two instances appending at once make one chain, without a fork or a gap', async () => {
    const a = open[kind]!();
    await a.migrate();
    // SQLite: one store per process (a second connection in this process would wait on the first with the event loop
    // blocked); its one writer serialises the appends. PostgreSQL: two stores, two pools, as two instances run.
    const b = kind === 'postgres' ? open[kind]!() : a;
    await b.migrate();
    try {
      const N = 40;
      const written = await Promise.all([
        ...Array.from({ length: N }, (_, i) => a.appendAuditEvents([entry('a', i)], auditHash).then(([e]) => e!)),
        ...Array.from({ length: N }, (_, i) => b.appendAuditEvents([entry('b', i)], auditHash).then(([e]) => e!)),
      ]);
      const seqs = written.map((e) => e.seq).sort((x, y) => x - y);
      expect(seqs).toEqual(Array.from({ length: 2 * N }, (_, i) => i + 1));
      // No two entries chained to the same previous one.
      expect(new Set(written.map((e) => e.prevHash)).size).toBe(2 * N);
      const report = await verifyAudit(a, 7);
      expect(report).toMatchObject({ ok: true, checked: 2 * N, problems: [] });
      expect((await b.auditHead()).seq).toBe(2 * N);
      // Read back as written, the changes included.
      const [last] = await b.listAuditEvents({ order: 'desc', limit: 1 });
      expect(last!.hash).toBe((await a.auditHead()).hash);
      expect(last!.changes).toMatchObject({ client_secret: 'changed' });
      // Pruning moves the anchor: the rest still verifies.
      expect(await a.pruneAuditEvents(Date.now() + 1000, 10)).toBe(10);
      expect(await verifyAudit(b)).toMatchObject({ ok: true, checked: 2 * N - 10 });
      expect((await a.auditHead()).anchorSeq).toBe(10);
    } finally {
      await a.close();
      if (b !== a) await b.close();
    }
  });
});
