/**
 * Accounts by status and per connection come from counters the store keeps (SQLite: 009b's triggers; PostgreSQL:
 * 014's appended deltas, folded when read), never from counting the accounts: `/metrics` and the connection list
 * read a few rows whatever the population (issue 35). Checked on both databases: the figures match a real count
 * after inserts (bulk and single), status changes, deletes and two folds racing, and no statement a count runs
 * reads connected_accounts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import type { Store } from '../../runtime/store/types.ts';
import { newId } from '../../runtime/ids.ts';
import { PG_URL } from '../helpers/harness.ts';
import { seedAccounts, testKeys, tokenConnection } from '../helpers/scale.ts';
import { recordStatements } from '../helpers/statements.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-counts-'));
const schemas: string[] = [];

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const admin = new PostgresStore(PG_URL);
  for (const s of schemas) await admin.pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await admin.close();
});

function open(kind: 'sqlite' | 'postgres'): Store {
  if (kind === 'sqlite') return new SqliteStore(join(dir, `${newId('db')}.sqlite`));
  const schema = `counts_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  schemas.push(schema);
  return new PostgresStore(PG_URL, schema);
}

describe.each(['sqlite', 'postgres'] as const)('account counters (%s)', (kind) => {
  it('match the accounts after inserts, status changes and deletes, and no count reads the accounts', async () => {
    const store = open(kind);
    await store.migrate();
    const { sealer } = testKeys();
    const a = tokenConnection('a');
    const b = tokenConnection('b');
    await store.createConnection(a);
    await store.createConnection(b);
    const idsA = await seedAccounts(store, sealer, a.id, 1_200, { batch: 500 });
    const idsB = await seedAccounts(store, sealer, b.id, 30);
    const now = Date.now();
    for (const id of idsA.slice(0, 40)) await store.updateAccount(id, { status: 'EXPIRED' }, now);
    // A change that is not of status (the last use) counts nothing.
    await store.touchAccounts(new Map(idsA.slice(0, 100).map((id) => [id, now])));
    for (const id of idsA.slice(40, 50)) await store.deleteAccount(id);
    for (const id of idsB.slice(0, 5)) await store.deleteAccount(id);
    const created = await store.getOrCreateAccount({
      ...(await store.getAccount(idsB[10]!))!,
      id: newId('ca'),
      identifier: 'fresh',
      status: 'PENDING_AUTH',
      secretsSealed: null,
    });
    expect(created.created).toBe(true);

    const recording = recordStatements();
    const [byStatus, connections, again] = await Promise.all([
      store.countAccountsByStatus(),
      store.listConnectionsWithCounts(),
      // Two folds at once (two scrapes, two instances): each delta is taken by one of them.
      store.countAccountsByStatus(),
    ]);
    recording.stop();
    const sorted = (xs: Array<{ status: string; count: number }>) =>
      [...xs].sort((x, y) => x.status.localeCompare(y.status));
    expect(sorted(byStatus)).toEqual([
      { status: 'ACTIVE', count: 1_200 - 50 + 25 },
      { status: 'EXPIRED', count: 40 },
      { status: 'PENDING_AUTH', count: 1 },
    ]);
    expect(sorted(again)).toEqual(sorted(byStatus));
    expect(Object.fromEntries(connections.map((c) => [c.name, c.accountCount]))).toEqual({ a: 1_190, b: 26 });
    expect(recording.statements.length).toBeGreaterThan(0);
    expect(recording.statements.filter((s) => /\bconnected_accounts\b/i.test(s.sql))).toEqual([]);

    // A deleted connection's counters go with it.
    await store.deleteConnection(b.id);
    expect(Object.fromEntries((await store.listConnectionsWithCounts()).map((c) => [c.name, c.accountCount]))).toEqual({
      a: 1_190,
    });
    expect(sorted(await store.countAccountsByStatus())).toEqual([
      { status: 'ACTIVE', count: 1_150 },
      { status: 'EXPIRED', count: 40 },
    ]);
    await store.close();
  });
});
