/**
 * New accounts on PostgreSQL (issue 35, upserts per second): those asked for in one turn of the event loop are
 * written by one statement with their events (statements counted), each caller gets its own account (or undefined
 * when the identifier was taken, even by another account of the same statement), and an account whose statement
 * fails (its connection gone) fails alone: the others of its batch are written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { pendingAccount, type Account } from '../../runtime/store/types.ts';
import { PG_URL } from '../helpers/harness.ts';
import { tokenConnection } from '../helpers/scale.ts';
import { recordStatements } from '../helpers/statements.ts';

const schema = `new_accounts_${Date.now().toString(36)}`;
let store: PostgresStore;
const connection = tokenConnection('batch');

beforeAll(async () => {
  store = new PostgresStore(PG_URL, schema);
  await store.migrate();
  await store.createConnection(connection);
});
afterAll(async () => {
  await store.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await store.close();
});

let n = 0;
const account = (identifier: string, connectionId = connection.id): Account => ({
  ...pendingAccount(`ca_batch_${++n}`, connectionId, identifier),
  status: 'ACTIVE',
});
const events = (a: Account) => [
  { id: `msg_${a.id}_created`, type: 'connected_account.created', payload: '{}', createdAt: 1 },
  { id: `msg_${a.id}_active`, type: 'connected_account.active', payload: '{}', createdAt: 2 },
];
const create = (a: Account) => store.createAccountWithEvents(a, events(a));
const accountInserts = (statements: Array<{ sql: string }>) =>
  statements.filter((s) => /insert into "?connected_accounts"?/i.test(s.sql)).length;
const outboxCount = async () =>
  Number((await store.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.webhook_outbox`)).rows[0]!.n);

describe('new accounts on PostgreSQL', () => {
  it('writes the accounts of one turn, and their events, in one statement', async () => {
    const before = await outboxCount();
    const wanted = Array.from({ length: 30 }, (_, i) => account(`one-${i}`));
    const rec = recordStatements();
    const created = await Promise.all(wanted.map(create));
    rec.stop();
    expect(accountInserts(rec.statements)).toBe(1);
    expect(created.map((a) => a?.id)).toEqual(wanted.map((a) => a.id));
    expect(await outboxCount()).toBe(before + 60);
  });

  it('gives undefined to each caller whose identifier was taken, in the same statement or before', async () => {
    const before = await outboxCount();
    const first = await create(account('two-existing'));
    const rec = recordStatements();
    const [again, a, b, c] = await Promise.all([
      create(account('two-existing')),
      create(account('two-same')),
      create(account('two-same')),
      create(account('two-other')),
    ]);
    rec.stop();
    expect(accountInserts(rec.statements)).toBe(1);
    expect(first).toBeDefined();
    expect(again).toBeUndefined();
    // Of two new accounts with one identifier, the first is written and the second finds it taken.
    expect(a).toBeDefined();
    expect(b).toBeUndefined();
    expect(c).toBeDefined();
    expect((await store.findAccount(connection.id, 'two-same'))!.id).toBe(a!.id);
    // Events for the three accounts written (first, a, c), none for the two refused.
    expect(await outboxCount()).toBe(before + 6);
  });

  it('fails only the account whose write fails; the others of its turn are written', async () => {
    const before = await outboxCount();
    const outcomes = await Promise.allSettled([
      create(account('three-a')),
      create(account('three-orphan', 'conn_gone')),
      create(account('three-b')),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/foreign key/);
    expect(await store.findAccount(connection.id, 'three-a')).toBeDefined();
    expect(await store.findAccount(connection.id, 'three-b')).toBeDefined();
    expect(await outboxCount()).toBe(before + 4);
  });
});
