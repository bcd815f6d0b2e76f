/**
 * The work a population costs, counted rather than timed (issue 35): a connection delete with a warm cache does
 * O(n) cache operations and writes its events in multi-row statements; it survives kill -9 at 10, 50 and 90 %
 * with no account left and no event lost or written twice; no cache grows past its limit however many users are
 * served; and a change another instance makes drops one account from the cache, not a scan of it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountService } from '../../runtime/accounts/service.ts';
import { CacheSet } from '../../runtime/caches.ts';
import { loadConfig } from '../../runtime/config.ts';
import { ConnectionDeletions } from '../../runtime/jobs/connection-deletions.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import type { Store } from '../../runtime/store/types.ts';
import { PG_URL } from '../helpers/harness.ts';
import { seedAccounts, testKeys, tokenConnection } from '../helpers/scale.ts';
import { recordStatements } from '../helpers/statements.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-scale-'));
const schemas: string[] = [];
const silent = pino({ level: 'silent' });
/** A hang guard, not a time limit: these seed, warm and delete tens of thousands of rows, and start processes. */
const HUNG_AFTER_MS = 240_000;

function openStore(kind: 'sqlite' | 'postgres', name: string): { store: Store; where: string } {
  if (kind === 'sqlite') {
    const where = join(dir, `${name}.sqlite`);
    return { store: new SqliteStore(where), where };
  }
  const where = `scale_${name}_${Date.now().toString(36)}`;
  schemas.push(where);
  return { store: new PostgresStore(PG_URL, where), where };
}

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const admin = new PostgresStore(PG_URL);
  for (const s of schemas) await admin.pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await admin.close();
});

/** Counts the statements that insert into the outbox, whichever database runs them. */
function countOutboxInserts(): { count: () => number; restore: () => void } {
  const recording = recordStatements();
  return {
    count: () => recording.statements.filter((s) => /insert into "?webhook_outbox"?/i.test(s.sql)).length,
    restore: recording.stop,
  };
}

function accountService(store: Store, sealer: ReturnType<typeof testKeys>['sealer'], env: Record<string, string>) {
  const caches = new CacheSet();
  const config = loadConfig({ DATA_DIR: dir, ...env });
  return { accounts: new AccountService(store, sealer, config, silent, caches), caches };
}

const operations = (caches: CacheSet) => caches.all().reduce((sum, c) => sum + c.operations, 0);

async function untilDone(store: Store, id: string): Promise<void> {
  for (;;) {
    if ((await store.getConnectionDeletion(id))?.status === 'done') return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function outboxDeletedEvents(store: Store, connectionName: string): Promise<string[]> {
  const ids: string[] = [];
  // Read through the fan-out's own path would deliver them; the outbox rows are what a crash must keep exact.
  const rows =
    store instanceof PostgresStore
      ? (await store.pool.query<{ payload: string }>(`SELECT payload FROM webhook_outbox`)).rows
      : (new Database((store as SqliteStore).path, { readonly: true })
          .prepare('SELECT payload FROM webhook_outbox')
          .all() as Array<{ payload: string }>);
  for (const r of rows) {
    const e = JSON.parse(r.payload) as {
      type: string;
      data: { connected_account_id: string; connection_name: string };
    };
    if (e.type === 'connected_account.deleted' && e.data.connection_name === connectionName)
      ids.push(e.data.connected_account_id);
  }
  return ids;
}

describe.each(['sqlite', 'postgres'] as const)('%s', (kind) => {
  it(
    'deletes 20,000 accounts with a warm cache in O(n) cache operations and batched outbox inserts',
    async () => {
      const { store } = openStore(kind, 'warm');
      const { sealer } = testKeys();
      await store.migrate();
      await store.watchChanges();
      const n = 20_000;
      try {
        const connection = tokenConnection('big');
        await store.createConnection(connection);
        const ids = await seedAccounts(store, sealer, connection.id, n);
        // The seed's own change notices (PostgreSQL's triggers) are heard before the cache is warmed, not during.
        await store.changes.sync();
        const { accounts, caches } = accountService(store, sealer, {
          ACCOUNT_CACHE_SIZE: '30000',
          SECRET_CACHE_SIZE: '30000',
        });
        for (const id of ids) {
          const live = accounts.withSecrets(await accounts.resolve({ connectedAccountId: id }));
          accounts.credentialHeadersFor(live);
        }
        const cached = (name: string) => caches.all().find((c) => c.name === name)!.size;
        expect(cached('accounts')).toBe(n);
        expect(cached('credentials')).toBe(n);

        const inserts = countOutboxInserts();
        const before = operations(caches);
        const batchSize = 500;
        try {
          // No time budget: the batches grow to full size, so the statements counted are the batching's own.
          const deletions = new ConnectionDeletions({
            store,
            log: silent,
            batchSize,
            batchBudgetMs: Infinity,
            onEvents: () => {},
          });
          const d = await deletions.request(connection);
          await untilDone(store, d.id);
          await deletions.stop();
          await store.changes.sync();
        } finally {
          inserts.restore();
        }
        const ops = operations(caches) - before;
        // Two deletes per account and its own change notice (PostgreSQL also hears its own triggers' notices):
        // linear. The walk this replaced did n × (cache size) = 400 million.
        expect(ops).toBeGreaterThanOrEqual(2 * n);
        expect(ops).toBeLessThanOrEqual(10 * n);
        expect(cached('accounts')).toBe(0);
        expect(cached('credentials')).toBe(0);
        // One multi-row INSERT per batch, not one per event: batches of 100, 200 and 400 (the first is small and
        // each fast one doubles), then of 500.
        expect(inserts.count()).toBe(3 + Math.ceil((n - 700) / batchSize));
        const events = await outboxDeletedEvents(store, 'big');
        expect(events.length).toBe(n);
        expect(new Set(events)).toEqual(new Set(ids));
      } finally {
        await store.close();
      }
    },
    HUNG_AFTER_MS,
  );

  it(
    'resumes a deletion killed at 10, 50 and 90 %: no account left behind, each event written once',
    async () => {
      const { store, where } = openStore(kind, 'crash');
      const { sealer } = testKeys();
      await store.migrate();
      const n = 6_000;
      const batchSize = 50;
      const children: ChildProcess[] = [];
      try {
        const connection = tokenConnection('doomed');
        const kept = tokenConnection('kept');
        await store.createConnection(connection);
        await store.createConnection(kept);
        const ids = await seedAccounts(store, sealer, connection.id, n);
        const keptIds = await seedAccounts(store, sealer, kept.id, 100, { prefix: 'kept-' });
        const started = (await store.startConnectionDeletion({
          id: 'cdel_crash',
          connectionId: connection.id,
          requestedAt: Date.now(),
        }))!;
        for (const share of [0.1, 0.5, 0.9]) {
          const child = spawn(
            process.execPath,
            ['--import', 'tsx', 'test/store/deletion-child.ts', kind, where, String(batchSize)],
            { stdio: ['ignore', 'pipe', 'inherit'] },
          );
          children.push(child);
          const exited = new Promise((r) => child.once('exit', r));
          for (;;) {
            const d = (await store.getConnectionDeletion(started.id))!;
            if (d.accountsDeleted >= share * n) break;
            await new Promise((r) => setTimeout(r, 5));
          }
          child.kill('SIGKILL');
          await exited;
          const d = (await store.getConnectionDeletion(started.id))!;
          expect(d.status).toBe('running');
          expect(d.accountsDeleted).toBeLessThan(n);
        }
        // A restarted instance takes the lease of the killed one at once (same host, its process gone) and finishes.
        const deletions = new ConnectionDeletions({ store, log: silent, batchSize, onEvents: () => {} });
        deletions.start();
        await untilDone(store, started.id);
        await deletions.stop();
        expect((await store.getConnectionDeletion(started.id))!.accountsDeleted).toBe(n);
        for (const id of [ids[0]!, ids[n >> 1]!, ids[n - 1]!]) expect(await store.getAccount(id)).toBeUndefined();
        expect(await store.listAccounts({ connectionId: connection.id, limit: 10 })).toEqual([]);
        const events = await outboxDeletedEvents(store, 'doomed');
        expect(events.length).toBe(n);
        expect(new Set(events)).toEqual(new Set(ids));
        // The other connection is untouched.
        expect((await store.listAccounts({ connectionId: kept.id, limit: 1000 })).map((a) => a.id)).toEqual(keptIds);
      } finally {
        for (const c of children) c.kill('SIGKILL');
        await store.close();
      }
    },
    HUNG_AFTER_MS,
  );
});

describe('caches under many distinct users', () => {
  it('stay within their limits, evicting the least recently used', async () => {
    const { store } = openStore('sqlite', 'limits');
    const { sealer } = testKeys();
    await store.migrate();
    await store.watchChanges();
    try {
      const connection = tokenConnection('many');
      await store.createConnection(connection);
      const ids = await seedAccounts(store, sealer, connection.id, 3_000);
      const { accounts, caches } = accountService(store, sealer, {
        ACCOUNT_CACHE_SIZE: '200',
        SECRET_CACHE_SIZE: '100',
      });
      let largest = 0;
      for (const [i, id] of ids.entries()) {
        const resolved =
          i % 2
            ? await accounts.resolve({ connectedAccountId: id })
            : await accounts.resolve({ connectionName: 'many', identifier: `user-${i}` });
        accounts.credentialHeadersFor(accounts.withSecrets(resolved));
        for (const c of caches.all()) {
          expect(c.size, c.name).toBeLessThanOrEqual(c.max);
          largest = Math.max(largest, c.size);
        }
      }
      const byName = new Map(caches.all().map((c) => [c.name, c]));
      expect(byName.get('accounts')!.size).toBe(200);
      expect(byName.get('credentials')!.size).toBe(100);
      expect(byName.get('accounts')!.evictions).toBeGreaterThan(2_000);
      expect(largest).toBe(200);
    } finally {
      await store.close();
    }
  });
});

describe('postgres, two instances', () => {
  it('a change through one drops that one account from the other’s cache, without a scan', async () => {
    const { store: a, where } = openStore('postgres', 'feed');
    const b = new PostgresStore(PG_URL, where);
    const { sealer } = testKeys();
    await a.migrate();
    await a.watchChanges();
    await b.watchChanges();
    try {
      const connection = tokenConnection('shared');
      await a.createConnection(connection);
      const ids = await seedAccounts(a, sealer, connection.id, 2_000);
      // The seeding's own notices heard first: one arriving during the warm-up would drop what it just read.
      await a.changes.sync();
      const { accounts, caches } = accountService(a, sealer, {});
      for (const id of ids) accounts.withSecrets(await accounts.resolve({ connectedAccountId: id }));
      const cache = (name: string) => caches.all().find((c) => c.name === name)!;
      expect(cache('accounts').size).toBe(2_000);

      const before = operations(caches);
      const changed = ids[1234]!;
      await b.updateAccount(changed, { lastError: 'changed elsewhere' }, Date.now());
      await a.changes.sync();
      // The notice names the account: a delete in each cache keyed by account id, whatever they hold.
      expect(operations(caches) - before).toBeLessThanOrEqual(4);
      expect(cache('accounts').peek(changed)).toBeUndefined();
      expect(cache('credentials').peek(changed)).toBeUndefined();
      expect(cache('accounts').size).toBe(1_999);
      const again = await accounts.resolve({ connectedAccountId: changed });
      expect(again.account.lastError).toBe('changed elsewhere');
    } finally {
      await b.close();
      await a.close();
    }
  });
});
