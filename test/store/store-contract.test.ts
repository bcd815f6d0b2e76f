/**
 * One contract, two stores: every behaviour the runtime relies on, checked against SQLite and against a
 * real PostgreSQL (a fresh schema per run; never skipped).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { encodeCursor, InvalidCursor } from '../../runtime/store/cursor.ts';
import {
  LockTimeout,
  type Account,
  type ActivityRecord,
  type Connection,
  type Store,
} from '../../runtime/store/types.ts';
import { newId } from '../../runtime/ids.ts';
import { recordStatements } from '../helpers/statements.ts';
import { PG_URL } from '../helpers/harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-store-'));
const schema = `contract_${Date.now().toString(36)}`;

const factories: Array<[string, () => Store]> = [
  ['sqlite', () => new SqliteStore(join(dir, 'contract.sqlite'))],
  ['postgres', () => new PostgresStore(PG_URL, schema)],
];
const location = { sqlite: join(dir, 'contract.sqlite'), postgres: schema };

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const pg = new PostgresStore(PG_URL);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
});

function connection(name: string): Connection {
  const now = Date.now();
  return {
    id: newId('conn'),
    name,
    connector: 'helpdesk',
    authKind: 'api_key',
    clientId: null,
    clientSecretSealed: null,
    scopes: [],
    apiBaseUrl: null,
    apiHosts: {},
    oauth: {},
    registrationSealed: null,
    createdAt: now,
    updatedAt: now,
  };
}

function account(connectionId: string, identifier: string, createdAt = Date.now()): Account {
  return {
    id: newId('ca'),
    connectionId,
    identifier,
    status: 'PENDING_AUTH',
    fields: {},
    secretsSealed: null,
    tokenExpiresAt: null,
    lastUsedAt: null,
    lastError: null,
    version: 0,
    createdAt,
    updatedAt: createdAt,
  };
}

/**
 * What a second later looks like to the store's pass through the outbox (runtime/store/groups/webhooks.ts): its next
 * fan-out batch reads from the front again.
 */
function agePass(store: Store): void {
  const pass = (store as unknown as { outboxFrom?: { at: number } }).outboxFrom;
  if (pass) pass.at -= 1_000;
}

describe.each(factories)('%s store', (kind, make) => {
  let store: Store;
  beforeAll(async () => {
    store = make();
    await store.migrate();
    await store.migrate(); // idempotent
  });
  afterAll(async () => store.close());

  it('starts empty and passes its integrity check', async () => {
    expect(await store.isEmpty()).toBe(true);
    expect(await store.integrityCheck()).toEqual([]);
  });

  if (kind === 'sqlite') {
    it('keeps the database file private to the service user', () => {
      expect(statSync(join(dir, 'contract.sqlite')).mode & 0o777).toBe(0o600);
    });
  }

  it('stores meta values once (initMeta is first-writer-wins)', async () => {
    expect(await store.initMeta('k', 'first')).toBe('first');
    expect(await store.initMeta('k', 'second')).toBe('first');
    await store.setMeta('k', 'third');
    expect(await store.getMeta('k')).toBe('third');
  });

  it('creates, lists, updates and deletes connections (deleting their accounts)', async () => {
    const c = connection('c1');
    await store.createConnection(c);
    await expect(store.createConnection({ ...connection('c1') })).rejects.toThrow();
    expect((await store.getConnectionByName('c1'))!.id).toBe(c.id);
    const updated = await store.updateConnection(
      c.id,
      { scopes: ['a', 'b'], apiHosts: { x: 'https://x' }, oauth: { token_url: 'https://t' } },
      Date.now(),
    );
    expect(updated).toMatchObject({
      scopes: ['a', 'b'],
      apiHosts: { x: 'https://x' },
      oauth: { token_url: 'https://t' },
    });
    await store.getOrCreateAccount(account(c.id, 'u1'));
    await store.getOrCreateAccount(account(c.id, 'u2'));
    expect((await store.listConnectionsWithCounts()).find((x) => x.id === c.id)!.accountCount).toBe(2);
    expect(await store.deleteConnection(c.id)).toBe(2);
    expect(await store.deleteConnection(c.id)).toBeUndefined();
    expect(await store.listAccounts({ connectionId: c.id, limit: 10 })).toEqual([]);
  });

  it('get-or-create is safe under concurrency: one account per (connection, identifier)', async () => {
    const c = connection('c2');
    await store.createConnection(c);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => store.getOrCreateAccount(account(c.id, 'same'))),
    );
    expect(new Set(results.map((r) => r.account.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('creates an account with its events only when it is new, all or nothing, under concurrency', async () => {
    const c = connection('c2e');
    await store.createConnection(c);
    // Whatever an earlier test left in the outbox is fanned out first, so that the count below is this test's; the
    // events below are written at times 1 and 2, behind where that pass ended: the next pass starts from the front.
    while ((await store.fanOutWebhookEvents(500, Date.now())) > 0);
    agePass(store);
    const events = (n: number) => [
      { id: `msg_new_${kind}_${n}_a`, type: 'connected_account.created', payload: '{}', createdAt: 1 },
      { id: `msg_new_${kind}_${n}_b`, type: 'connected_account.active', payload: '{}', createdAt: 2 },
    ];
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, n) => store.createAccountWithEvents(account(c.id, 'fresh'), events(n))),
    );
    const created = results.filter((r) => r !== undefined);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ connectionId: c.id, identifier: 'fresh' });
    expect((await store.findAccount(c.id, 'fresh'))!.id).toBe(created[0]!.id);
    // The winner's two events, and none of the nine others'.
    expect(await store.fanOutWebhookEvents(500, Date.now())).toBe(2);
    expect(await store.createAccountWithEvents(account(c.id, 'fresh'), events(99))).toBeUndefined();
    expect(await store.fanOutWebhookEvents(500, Date.now())).toBe(0);
  });

  it('fans the outbox out from where its last batch ended, and takes an event written behind it in the next pass', async () => {
    while ((await store.fanOutWebhookEvents(500, Date.now())) > 0);
    agePass(store);
    const ev = (n: number, createdAt: number) => ({
      id: `msg_pass_${kind}_${n}`,
      type: 'connected_account.created',
      payload: '{}',
      createdAt,
    });
    await store.addWebhookEvents([1, 2, 3, 4, 5].map((n) => ev(n, 1_000 + n)));
    /** A batch: how many events it moved, and the event its read of the outbox starts after (none: the front). */
    const batch = async (limit: number) => {
      const recording = recordStatements();
      let moved: number;
      try {
        moved = await store.fanOutWebhookEvents(limit, Date.now());
      } finally {
        recording.stop();
      }
      const read = recording.statements.find((s) => /^select .* from "webhook_outbox"/i.test(s.sql))!;
      return { moved, after: read.params.find((p) => typeof p === 'string' && p.startsWith('msg_pass_')) };
    };
    expect(await batch(2)).toEqual({ moved: 2, after: undefined });
    // Written behind the point the pass has reached: the next batches go on past it.
    await store.addWebhookEvents([ev(0, 1_000)]);
    expect(await batch(2)).toEqual({ moved: 2, after: `msg_pass_${kind}_2` });
    expect(await batch(2)).toEqual({ moved: 1, after: `msg_pass_${kind}_4` });
    // Caught up, the pass stays where it is (a front read after every short batch would walk the dead entries of
    // every event moved before, on PostgreSQL, each round)...
    expect(await batch(2)).toEqual({ moved: 0, after: `msg_pass_${kind}_5` });
    // ...until it is a second old: the next pass starts from the front and takes the event written behind.
    agePass(store);
    expect(await batch(2)).toEqual({ moved: 1, after: undefined });
    expect(await batch(2)).toEqual({ moved: 0, after: `msg_pass_${kind}_0` });
  });

  it('compare-and-set updates bump the version and refuse stale writers', async () => {
    const c = connection('c3');
    await store.createConnection(c);
    const { account: a } = await store.getOrCreateAccount(account(c.id, 'cas'));
    const first = await store.updateAccount(
      a.id,
      { status: 'ACTIVE', secretsSealed: 'v1.k.x.y', tokenExpiresAt: 123 },
      Date.now(),
      a.version,
    );
    expect(first).toMatchObject({ status: 'ACTIVE', version: a.version + 1, tokenExpiresAt: 123 });
    expect(await store.updateAccount(a.id, { status: 'EXPIRED' }, Date.now(), a.version)).toBeUndefined();
    expect((await store.getAccount(a.id))!.status).toBe('ACTIVE');
  });

  it('pages accounts with a cursor and filters by identifier and status', async () => {
    const c = connection('c4');
    await store.createConnection(c);
    const base = Date.now();
    for (let i = 0; i < 25; i++)
      await store.getOrCreateAccount(account(c.id, `p-${String(i).padStart(2, '0')}`, base + (i % 5)));
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await store.listAccounts({ connectionId: c.id, limit: 10, after });
      seen.push(...page.map((a) => a.identifier));
      if (page.length < 10) break;
      after = encodeCursor(page.at(-1)!);
    }
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    expect(await store.listAccounts({ connectionId: c.id, identifierContains: 'p-1', limit: 100 })).toHaveLength(10);
    expect(await store.listAccounts({ connectionId: c.id, identifierContains: '%', limit: 100 })).toHaveLength(0);
    expect(await store.listAccounts({ connectionId: c.id, status: 'ACTIVE', limit: 100 })).toHaveLength(0);
    // The totals of the same filters, over every page.
    expect(await store.countMatchingAccounts({ connectionIds: [c.id] })).toBe(25);
    expect(await store.countMatchingAccounts({ connectionIds: [c.id], identifierContains: 'p-1' })).toBe(10);
    expect(await store.countMatchingAccounts({ connectionIds: [c.id], identifierContains: '%' })).toBe(0);
    expect(await store.countMatchingAccounts({ connectionIds: [c.id], identifier: 'p-07' })).toBe(1);
    expect(await store.countMatchingAccounts({ connectionIds: [] })).toBe(0);
    const other = connection('c4b');
    await store.createConnection(other);
    await store.getOrCreateAccount(account(other.id, 'p-07', base));
    expect(await store.countMatchingAccounts({ connectionIds: [c.id, other.id], identifier: 'p-07' })).toBe(2);
    expect(await store.countMatchingAccounts({ connectionIds: [c.id, other.id] })).toBe(26);
    expect(await store.countMatchingAccounts({ identifier: 'p-07' })).toBeGreaterThanOrEqual(2);
  });

  it('refuses a cursor no page produced with an InvalidCursor error', async () => {
    for (const after of [
      'garbage',
      Buffer.from('no-colon').toString('base64url'),
      Buffer.from(':x').toString('base64url'),
    ])
      await expect(store.listAccounts({ limit: 10, after })).rejects.toBeInstanceOf(InvalidCursor);
  });

  it('consumes an OAuth state once, and never after it expires', async () => {
    const c = connection('c5');
    await store.createConnection(c);
    const { account: a } = await store.getOrCreateAccount(account(c.id, 'oauth'));
    const now = Date.now();
    await store.createOAuthState({
      stateHash: 'h1',
      connectionId: c.id,
      accountId: a.id,
      verifierSealed: 'v',
      redirectUrl: null,
      expiresAt: now + 60_000,
      usedAt: null,
    });
    await store.createOAuthState({
      stateHash: 'h2',
      connectionId: c.id,
      accountId: a.id,
      verifierSealed: 'v',
      redirectUrl: null,
      expiresAt: now - 1,
      usedAt: null,
    });
    const results = await Promise.all([store.consumeOAuthState('h1', now), store.consumeOAuthState('h1', now)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.consumeOAuthState('h2', now)).toBeUndefined();
    await store.createOAuthLink({
      tokenHash: 'l1',
      connectionId: c.id,
      accountId: a.id,
      redirectUrl: null,
      expiresAt: now + 1000,
    });
    expect(await store.getOAuthLink('l1', now)).toBeDefined();
    expect(await store.getOAuthLink('l1', now + 2000)).toBeUndefined();
  });

  it('the account lock excludes concurrent holders', async () => {
    const c = connection('c6');
    await store.createConnection(c);
    const { account: a } = await store.getOrCreateAccount(account(c.id, 'lock'));
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      Array.from({ length: 8 }, () =>
        store.withAccountLock(a.id, async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          await new Promise((r) => setTimeout(r, 5));
          inside--;
        }),
      ),
    );
    expect(maxInside).toBe(1);
    // The lock is released after an error too.
    await expect(store.withAccountLock(a.id, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await store.withAccountLock(a.id, () => Promise.resolve('ok'), 1000)).toBe('ok');
  });

  it('times out with LockTimeout while another holder keeps the account lock', async () => {
    const c = connection('c6b');
    await store.createConnection(c);
    const { account: a } = await store.getOrCreateAccount(account(c.id, 'busy'));
    let release!: () => void;
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    const held = store.withAccountLock(a.id, () => {
      inside();
      return new Promise<void>((r) => (release = r));
    });
    await entered;
    await expect(store.withAccountLock(a.id, () => Promise.resolve('never'), 50)).rejects.toBeInstanceOf(LockTimeout);
    release();
    await held;
    expect(await store.withAccountLock(a.id, () => Promise.resolve('free'), 1000)).toBe('free');
  });

  it('commits the writes of a transaction together', async () => {
    const c = connection('tx1');
    await store.createConnection(c);
    const result = await store.transaction(async (tx) => {
      const { account: a, created } = await tx.getOrCreateAccount(account(c.id, 'tx-commit'));
      expect(created).toBe(true);
      const updated = await tx.updateAccount(a.id, { status: 'ACTIVE', secretsSealed: 'v1.k.a.b' }, Date.now());
      await tx.setMeta('tx-meta', 'written');
      return updated!.id;
    });
    expect(await store.getAccount(result)).toMatchObject({ status: 'ACTIVE', secretsSealed: 'v1.k.a.b', version: 1 });
    expect(await store.getMeta('tx-meta')).toBe('written');
  });

  it('keeps none of the writes of a transaction that throws, and shows none of them outside it before it ends', async () => {
    const c = connection('tx2');
    await store.createConnection(c);
    const { account: existing } = await store.getOrCreateAccount(account(c.id, 'tx-existing'));
    let seenOutside: Promise<Account | undefined> | undefined;
    await expect(
      store.transaction(async (tx) => {
        await tx.getOrCreateAccount(account(c.id, 'tx-rolled-back'));
        await tx.updateAccount(existing.id, { status: 'ACTIVE' }, Date.now());
        await tx.deleteConnection(c.id);
        // A read outside the transaction while it is open: it must not see the uncommitted writes.
        seenOutside = store.getAccount(existing.id);
        await new Promise((r) => setTimeout(r, 20));
        throw new Error('abandoned');
      }),
    ).rejects.toThrow('abandoned');
    expect(await seenOutside).toMatchObject({ status: 'PENDING_AUTH', version: 0 });
    expect(await store.getConnection(c.id)).toBeDefined();
    expect(await store.findAccount(c.id, 'tx-rolled-back')).toBeUndefined();
    expect(await store.getAccount(existing.id)).toMatchObject({ status: 'PENDING_AUTH', version: 0 });
  });

  it('keeps none of the writes of a transaction whose process is killed before it commits', async () => {
    const c = connection('tx3');
    await store.createConnection(c);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/store/transaction-child.ts', kind, location[kind as 'sqlite' | 'postgres'], c.id],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('written') && resolve());
      child.once('exit', (code) => reject(new Error(`child exited (${code}) before writing`)));
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(await store.findAccount(c.id, 'killed')).toBeUndefined();
    expect(await store.getAccount('ca_killed')).toBeUndefined();
    // The store is usable after it: the dead writer held no lock that outlived it.
    const { created } = await store.getOrCreateAccount(account(c.id, 'killed'));
    expect(created).toBe(true);
  });

  it('moves last-used times forward only', async () => {
    const c = connection('touch');
    await store.createConnection(c);
    const { account: a } = await store.getOrCreateAccount(account(c.id, 'toucher'));
    const { account: b } = await store.getOrCreateAccount(account(c.id, 'toucher-2'));
    await store.touchAccounts(
      new Map([
        [a.id, 2_000],
        [b.id, 1_000],
      ]),
    );
    await store.touchAccounts(
      new Map([
        [a.id, 1_500],
        [b.id, 3_000],
        ['ca_absent', 9],
      ]),
    );
    expect((await store.getAccount(a.id))!.lastUsedAt).toBe(2_000);
    expect((await store.getAccount(b.id))!.lastUsedAt).toBe(3_000);
  });

  /** The `i`th of a run of activity records: ids `<prefix>_<i>`, created at `at + i`, null columns now and then. */
  const activityRecord = (prefix: string, i: number, at: number): ActivityRecord => ({
    id: `${prefix}_${String(i).padStart(5, '0')}`,
    kind: i % 2 ? 'proxy' : 'tool',
    name: `GET /${prefix}/${i}`,
    connectionName: i % 3 ? `conn${i % 3}` : null,
    accountId: i % 4 ? `acc_${i}` : null,
    identifier: i % 5 ? `user${i}@example.com` : null,
    status: 200 + (i % 7),
    errorCode: i % 6 ? null : 'upstream_error',
    latencyMs: i,
    createdAt: at + i,
  });

  it('records a batch of activity larger than one statement may carry', async () => {
    // 7,000 rows of 10 values is past PostgreSQL's 65,535 parameters per statement.
    const batch = Array.from({ length: 7_000 }, (_, i) => activityRecord('bulk', i, 1_000_000));
    await store.recordActivity(batch);
    const newest = await store.listActivity(3, 1_000_000 + batch.length);
    expect(newest.map((r) => r.id)).toEqual(['bulk_06999', 'bulk_06998', 'bulk_06997']);
    // Rows from the start, the middle and the end of the batch come back whole, each column in its place.
    for (const end of [2, 3_500, 6_997]) {
      const around = await store.listActivity(4, 1_000_000 + end + 2);
      expect(around).toEqual([end + 1, end, end - 1, end - 2].map((i) => batch[i]));
    }
    await store.pruneActivity(1_000_000 + batch.length, 10_000);
    expect(await store.listActivity(1, 1_000_000 + batch.length)).toEqual([]);
  });

  it('records batches of every size whole, each row once and each column in its place', async () => {
    // SQLite writes a batch as INSERTs of 64, 32, ..., 1 rows: these sizes take each of those statements, alone and
    // together, and the remainders after whole statements.
    let next = 0;
    const all: ActivityRecord[] = [];
    for (const size of [1, 2, 3, 63, 64, 65, 127, 128, 250]) {
      const batch = Array.from({ length: size }, () => activityRecord('size', next++, 2_000_000));
      if (size === 65) {
        // Written while a transaction holds the store's connection: on SQLite the batch then waits for it and goes
        // through Kysely's transaction rather than straight to the driver.
        let entered!: () => void;
        let release!: () => void;
        const inside = new Promise<void>((r) => (entered = r));
        const held = store.transaction(async (tx) => {
          await tx.setMeta('activity-hold', 'held');
          entered();
          await new Promise<void>((r) => (release = r));
        });
        await inside;
        const writing = store.recordActivity(batch);
        release();
        await held;
        await writing;
      } else {
        await store.recordActivity(batch);
      }
      all.push(...batch);
    }
    expect(await store.listActivity(next + 10, 2_000_000 + next)).toEqual([...all].reverse());
    await store.pruneActivity(2_000_000 + next, 10_000);
    expect(await store.listActivity(1, 2_000_000 + next)).toEqual([]);
  });

  it('records activity and api credentials', async () => {
    await store.recordActivity([
      {
        id: 'a1',
        kind: 'tool',
        name: 't',
        connectionName: 'c',
        accountId: null,
        identifier: null,
        status: 200,
        errorCode: null,
        latencyMs: 3,
        createdAt: 1,
      },
      {
        id: 'a2',
        kind: 'proxy',
        name: 'GET /x',
        connectionName: 'c',
        accountId: null,
        identifier: null,
        status: 404,
        errorCode: 'provider_error',
        latencyMs: 4,
        createdAt: 2,
      },
    ]);
    expect((await store.listActivity(10)).map((r) => r.id)).toEqual(['a2', 'a1']);
    await store.pruneActivity(2, 10_000);
    expect((await store.listActivity(10)).map((r) => r.id)).toEqual(['a2']);
    await store.createApiCredential({
      id: 'cred1',
      clientId: 'cid',
      secretHash: 'h',
      name: 'n',
      createdAt: 1,
      revokedAt: null,
      lastUsedAt: null,
      scopes: ['tools:execute', 'accounts:read'],
      connectionNames: ['mail'],
    });
    expect(await store.getApiCredential('cred1')).toMatchObject({
      scopes: ['tools:execute', 'accounts:read'],
      connectionNames: ['mail'],
    });
    expect(await store.revokeApiCredential('cred1', 5)).toBe(true);
    expect(await store.revokeApiCredential('cred1', 6)).toBe(false);
    expect((await store.getApiCredentialByClientId('cid'))!.revokedAt).toBe(5);
  });

  it('keeps dashboard users unique by name and sessions until they expire, are deleted, or the password changes', async () => {
    const now = Date.now();
    const user = {
      id: 'du1',
      username: 'admin',
      passwordHash: 'scrypt$1',
      role: 'admin' as const,
      oidcSubject: null,
      createdAt: now,
      updatedAt: now,
    };
    expect(await store.createDashboardUser(user)).toBe(true);
    expect(await store.createDashboardUser({ ...user, id: 'du2', passwordHash: 'scrypt$2' })).toBe(false);
    expect(await store.getDashboardUserByName('admin')).toEqual(user);
    expect(await store.getDashboardUserByName('nobody')).toBeUndefined();

    await store.createDashboardSession({ idHash: 's-live', userId: 'du1', createdAt: now, expiresAt: now + 60_000 });
    await store.createDashboardSession({ idHash: 's-other', userId: 'du1', createdAt: now, expiresAt: now + 60_000 });
    await store.createDashboardSession({ idHash: 's-old', userId: 'du1', createdAt: now - 10_000, expiresAt: now - 1 });
    expect(await store.getDashboardSession('s-live', now)).toEqual({
      idHash: 's-live',
      userId: 'du1',
      username: 'admin',
      role: 'admin',
      createdAt: now,
      expiresAt: now + 60_000,
    });
    expect(await store.getDashboardSession('s-live', now + 60_000)).toBeUndefined();
    expect(await store.getDashboardSession('s-old', now)).toBeUndefined();
    await store.deleteExpiredDashboardSessions(now);
    expect(await store.getDashboardSession('s-old', now - 5_000)).toBeUndefined();
    expect(await store.getDashboardSession('s-live', now)).toBeDefined();

    expect(await store.deleteDashboardSession('s-live')).toBe(true);
    expect(await store.deleteDashboardSession('s-live')).toBe(false);
    expect(await store.getDashboardSession('s-live', now)).toBeUndefined();

    await store.setDashboardPassword('du1', 'scrypt$3', now + 1);
    expect(await store.getDashboardUserByName('admin')).toMatchObject({ passwordHash: 'scrypt$3', updatedAt: now + 1 });
    expect(await store.getDashboardSession('s-other', now)).toBeUndefined();
  });

  it('keeps at least one dashboard admin, and uses an invitation once, before it expires', async () => {
    const now = Date.now();
    const base = { passwordHash: 'scrypt$1', oidcSubject: null, createdAt: now, updatedAt: now };
    await store.createDashboardUser({ ...base, id: 'a1', username: 'ann', role: 'admin' });
    // Users left by other cases go (allowed: ann is an admin).
    for (const u of await store.listDashboardUsers())
      if (u.id !== 'a1') expect(await store.deleteDashboardUser(u.id)).toBe('ok');
    await store.createDashboardUser({ ...base, id: 'v1', username: 'val', role: 'viewer', oidcSubject: 'iss|val' });
    expect((await store.listDashboardUsers()).map((u) => [u.username, u.role])).toEqual([
      ['ann', 'admin'],
      ['val', 'viewer'],
    ]);
    expect(await store.getDashboardUserBySubject('iss|val')).toMatchObject({ id: 'v1' });
    // The only admin can be neither demoted nor removed.
    expect(await store.setDashboardUserRole('a1', 'operator', now)).toBe('last_admin');
    expect(await store.deleteDashboardUser('a1')).toBe('last_admin');
    expect(await store.setDashboardUserRole('nobody', 'viewer', now)).toBe('not_found');
    // With a second admin, the first may go; the session of a removed user ends with it.
    expect(await store.setDashboardUserRole('v1', 'admin', now + 1)).toBe('ok');
    await store.createDashboardSession({ idHash: 's-ann', userId: 'a1', createdAt: now, expiresAt: now + 60_000 });
    expect(await store.getDashboardSession('s-ann', now)).toMatchObject({ role: 'admin' });
    expect(await store.deleteDashboardUser('a1')).toBe('ok');
    expect(await store.getDashboardSession('s-ann', now)).toBeUndefined();
    expect(await store.deleteDashboardUser('v1')).toBe('last_admin');

    const invitation = {
      id: 'inv1',
      tokenHash: 'h1',
      username: 'otto',
      role: 'operator' as const,
      createdBy: 'val',
      createdAt: now,
      expiresAt: now + 1000,
      usedAt: null,
    };
    await store.createDashboardInvitation(invitation);
    await store.createDashboardInvitation({ ...invitation, id: 'inv2', tokenHash: 'h2', username: 'late' });
    expect(await store.getDashboardInvitation('h1', now)).toEqual(invitation);
    expect((await store.listDashboardInvitations(now)).map((i) => i.id).sort()).toEqual(['inv1', 'inv2']);
    const otto = { ...base, id: 'o1', username: 'otto', role: 'operator' as const };
    expect(await store.acceptDashboardInvitation('h1', otto, now + 1)).toBe('ok');
    expect(await store.acceptDashboardInvitation('h1', { ...otto, id: 'o2' }, now + 2)).toBe('invalid');
    expect(await store.getDashboardUserByName('otto')).toMatchObject({ role: 'operator' });
    expect(await store.getDashboardInvitation('h1', now)).toBeUndefined();
    // Expired: refused, and no user made.
    expect(
      await store.acceptDashboardInvitation('h2', { ...base, id: 'l1', username: 'late', role: 'viewer' }, now + 1000),
    ).toBe('invalid');
    expect(await store.getDashboardUserByName('late')).toBeUndefined();
    // A name taken meanwhile: refused, and the invitation stays usable.
    await store.createDashboardInvitation({ ...invitation, id: 'inv3', tokenHash: 'h3', username: 'otto' });
    expect(await store.acceptDashboardInvitation('h3', { ...otto, id: 'o3' }, now + 1)).toBe('taken');
    expect(await store.getDashboardInvitation('h3', now + 1)).toBeDefined();
    expect(await store.deleteDashboardInvitation('inv3')).toBe(true);
  });

  it('keeps MCP servers unique by name, with URLs found by token hash, revoked once, deleted with their server', async () => {
    const now = Date.now();
    const server = {
      id: 'mcp1',
      name: 'support-agent',
      mode: 'tools' as const,
      tools: ['helpdesk_ticket_get', 'mail_send_message'],
      connections: ['helpdesk'],
      userVerifyUrl: 'https://app.example/verify' as string | null,
      createdAt: now,
      updatedAt: now,
    };
    expect(await store.createMcpServer(server)).toBe(true);
    expect(await store.createMcpServer({ ...server, id: 'mcp2' })).toBe(false);
    expect(await store.getMcpServer('mcp1')).toEqual(server);
    expect(await store.getMcpServerByName('support-agent')).toEqual(server);
    expect(await store.getMcpServer('mcp2')).toBeUndefined();
    const other = {
      ...server,
      id: 'mcp3',
      name: 'searcher',
      mode: 'search' as const,
      tools: [],
      connections: [],
      userVerifyUrl: null,
    };
    expect(await store.createMcpServer({ ...other, createdAt: now + 1 })).toBe(true);

    const url = (id: string, tokenHash: string, expiresAt: number, createdAt: number) => ({
      id,
      serverId: 'mcp1',
      identifier: 'user-1',
      tokenHash,
      expiresAt,
      revokedAt: null,
      createdAt,
      lastUsedAt: null,
    });
    await store.createMcpUrl(url('mu1', 'hash-1', now + 60_000, now));
    await store.createMcpUrl(url('mu2', 'hash-2', now - 1, now + 1));
    await store.createMcpUrl(url('mu3', 'hash-3', now + 60_000, now + 2));
    await expect(store.createMcpUrl(url('mu4', 'hash-1', now + 60_000, now + 3))).rejects.toThrow();
    expect((await store.listMcpUrls('mcp1')).map((u) => u.id)).toEqual(['mu3', 'mu2', 'mu1']);
    expect(await store.findMcpUrl('hash-1')).toEqual({ url: url('mu1', 'hash-1', now + 60_000, now), server });
    expect(await store.findMcpUrl('hash-x')).toBeUndefined();

    expect(await store.revokeMcpUrl('mcp3', 'mu3', now)).toBe(false); // another server's URL
    expect(await store.revokeMcpUrl('mcp1', 'mu3', now + 5)).toBe(true);
    expect(await store.revokeMcpUrl('mcp1', 'mu3', now + 6)).toBe(false);
    expect((await store.findMcpUrl('hash-3'))!.url.revokedAt).toBe(now + 5);
    // Neither revoked nor expired: mu1 only.
    expect((await store.listMcpServers(now)).map((s) => [s.name, s.activeUrls])).toEqual([
      ['support-agent', 1],
      ['searcher', 0],
    ]);

    await store.touchMcpUrl('mu1', now + 10);
    await store.touchMcpUrl('mu1', now + 5);
    expect((await store.findMcpUrl('hash-1'))!.url.lastUsedAt).toBe(now + 10);

    expect(await store.updateMcpServer('mcp1', { name: 'searcher' }, now + 20)).toBe('name_taken');
    expect(await store.updateMcpServer('nope', { name: 'x' }, now + 20)).toBeUndefined();
    expect(
      await store.updateMcpServer(
        'mcp1',
        { mode: 'search', tools: ['helpdesk_ticket_get'], connections: [] },
        now + 20,
      ),
    ).toEqual({ ...server, mode: 'search', tools: ['helpdesk_ticket_get'], connections: [], updatedAt: now + 20 });

    expect(await store.deleteMcpServer('mcp1')).toBe(true);
    expect(await store.deleteMcpServer('mcp1')).toBe(false);
    expect(await store.findMcpUrl('hash-1')).toBeUndefined();
    expect(await store.listMcpUrls('mcp1')).toEqual([]);
    expect(await store.deleteMcpServer('mcp3')).toBe(true);
  });

  it('lists sealed cells and replaces them only when unchanged', async () => {
    const c = connection('c7');
    c.clientSecretSealed = 'v1.k1.a.b';
    await store.createConnection(c);
    const cells = await store.listSealed(undefined, 10_000);
    const cell = cells.find((x) => x.id === c.id && x.column === 'client_secret_sealed')!;
    expect(cell.value).toBe('v1.k1.a.b');
    expect(await store.replaceSealed({ ...cell, value: 'v1.k2.c.d' }, 'stale')).toBe(false);
    expect(await store.replaceSealed({ ...cell, value: 'v1.k2.c.d' }, 'v1.k1.a.b')).toBe(true);
    expect((await store.getConnection(c.id))!.clientSecretSealed).toBe('v1.k2.c.d');
    expect(await store.isEmpty()).toBe(false);
  });
});
