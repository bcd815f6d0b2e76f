/**
 * Per-call cost of the store calls on the hot paths (every proxied request and tool execution), on SQLite and
 * PostgreSQL. Not a test: a measurement, run by hand and read by a person.
 *
 *   npx tsx test/store/measure-hot-calls.ts [root ...]
 *
 * Each root is a checkout of the project (default: this one); giving two (for example an export of an older
 * commit and this one) alternates them round by round in one process, so both see the same machine load. The
 * figures per call are medians over the rounds of (round time / iterations), in microseconds: wall-clock time, and
 * this process's CPU time (user + system), which is what a query builder or driver adds and which other work on a
 * shared machine disturbs far less.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Account, ActivityRecord, Connection, Store } from '../../runtime/store/types.ts';
import { PG_URL } from '../helpers/harness.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const ACCOUNTS = 1_000;
const ITERATIONS = { sqlite: 20_000, postgres: 2_000 } as const;
const TOUCH_BATCH = 50;
const ACTIVITY_BATCH = 100;

const roots = process.argv.slice(2).map((r) => resolve(r));
if (!roots.length) roots.push(resolve(import.meta.dirname, '..', '..'));

interface Subject {
  root: string;
  kind: 'sqlite' | 'postgres';
  store: Store;
  connection: Connection;
  accounts: Account[];
  cleanup: () => Promise<void>;
}

async function open(root: string, kind: 'sqlite' | 'postgres', tag: string): Promise<Subject> {
  const url = (p: string) => pathToFileURL(join(root, p)).href;
  let store: Store;
  let cleanup: () => Promise<void>;
  if (kind === 'sqlite') {
    const { SqliteStore } = (await import(url('runtime/store/sqlite.ts'))) as {
      SqliteStore: new (path: string) => Store;
    };
    const dir = mkdtempSync(join(tmpdir(), 'acs-measure-'));
    store = new SqliteStore(join(dir, 'acs.sqlite'));
    cleanup = async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    };
  } else {
    const { PostgresStore } = (await import(url('runtime/store/postgres.ts'))) as {
      PostgresStore: new (url: string, schema?: string) => Store;
    };
    const schema = `measure_${tag}_${Date.now().toString(36)}`;
    store = new PostgresStore(PG_URL, schema);
    cleanup = async () => {
      await store.close();
      const admin = new PostgresStore(PG_URL) as Store & { pool: { query(sql: string): Promise<unknown> } };
      await admin.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    };
  }
  await store.migrate();
  const now = Date.now();
  const connection: Connection = {
    id: `conn_${tag}`,
    name: `measure-${tag}`,
    connector: 'helpdesk',
    authKind: 'api_key',
    clientId: null,
    clientSecretSealed: 'v1.k.iv.ct',
    scopes: ['a', 'b'],
    apiBaseUrl: null,
    apiHosts: { api: 'https://example.test' },
    oauth: {},
    registrationSealed: null,
    createdAt: now,
    updatedAt: now,
  };
  await store.createConnection(connection);
  const accounts: Account[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const { account } = await store.getOrCreateAccount({
      id: `ca_${tag}_${i}`,
      connectionId: connection.id,
      identifier: `user-${i}@example.test`,
      status: 'PENDING_AUTH',
      fields: { domain: 'example' },
      secretsSealed: null,
      tokenExpiresAt: null,
      lastUsedAt: null,
      lastError: null,
      version: 0,
      createdAt: now + i,
      updatedAt: now + i,
    });
    accounts.push(
      (await store.updateAccount(account.id, { status: 'ACTIVE', secretsSealed: 'v1.k.' + 'x'.repeat(200) }, now))!,
    );
  }
  return { root, kind, store, connection, accounts, cleanup };
}

type Op = (s: Subject, i: number) => Promise<unknown>;
let activitySeq = 0;
const OPS: Record<string, Op> = {
  getAccount: (s, i) => s.store.getAccount(s.accounts[i % ACCOUNTS]!.id),
  findAccount: (s, i) => s.store.findAccount(s.connection.id, s.accounts[i % ACCOUNTS]!.identifier),
  getConnection: (s) => s.store.getConnection(s.connection.id),
  getConnectionByName: (s) => s.store.getConnectionByName(s.connection.name),
  [`touchAccounts(${TOUCH_BATCH})`]: (s, i) => {
    const m = new Map<string, number>();
    for (let k = 0; k < TOUCH_BATCH; k++) m.set(s.accounts[(i * TOUCH_BATCH + k) % ACCOUNTS]!.id, Date.now() + i);
    return s.store.touchAccounts(m);
  },
  [`recordActivity(${ACTIVITY_BATCH})`]: (s) => {
    const batch: ActivityRecord[] = [];
    for (let k = 0; k < ACTIVITY_BATCH; k++) {
      batch.push({
        id: `act_${++activitySeq}`,
        kind: 'tool',
        name: 'helpdesk_list_tickets',
        connectionName: s.connection.name,
        accountId: s.accounts[k]!.id,
        identifier: s.accounts[k]!.identifier,
        status: 200,
        errorCode: null,
        latencyMs: 12,
        createdAt: Date.now(),
      });
    }
    return s.store.recordActivity(batch);
  },
};
// Batches are flushed at most once a second in the service; fewer iterations keep the table size sane.
const BATCH_DIVISOR: Record<string, number> = {
  [`touchAccounts(${TOUCH_BATCH})`]: 10,
  [`recordActivity(${ACTIVITY_BATCH})`]: 20,
};

/** Wall-clock and CPU time of this process per call, in µs. CPU time is what the query builder and driver add, and
 * is far less disturbed than wall-clock time by other work on a shared machine. */
async function timeOp(s: Subject, name: string, n: number): Promise<{ wall: number; cpu: number }> {
  const op = OPS[name]!;
  for (let i = 0; i < Math.min(200, n); i++) await op(s, i);
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await op(s, i);
  const wall = Number(process.hrtime.bigint() - start) / 1000 / n;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / n };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

for (const kind of ['sqlite', 'postgres'] as const) {
  const subjects: Subject[] = [];
  for (const [i, root] of roots.entries()) subjects.push(await open(root, kind, `r${i}`));
  const results = new Map<string, Array<{ wall: number; cpu: number }>>();
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which root goes first, so neither always runs on a warmer or a busier machine.
    const order = round % 2 ? [...subjects].reverse() : subjects;
    for (const name of Object.keys(OPS)) {
      for (const s of order) {
        const n = Math.max(50, Math.floor(ITERATIONS[kind] / (BATCH_DIVISOR[name] ?? 1)));
        const key = `${s.root}\t${name}`;
        results.set(key, [...(results.get(key) ?? []), await timeOp(s, name, n)]);
      }
    }
  }
  console.log(`\n${kind}: µs per call, median (min–max) of ${ROUNDS} rounds; wall-clock, then this process's CPU`);
  for (const name of Object.keys(OPS)) {
    for (const s of subjects) {
      const xs = results.get(`${s.root}\t${name}`)!;
      const fmt = (v: number[]) =>
        `${median(v).toFixed(1).padStart(8)} (${Math.min(...v).toFixed(1)}–${Math.max(...v).toFixed(1)})`.padEnd(28);
      console.log(
        `  ${name.padEnd(22)} wall ${fmt(xs.map((x) => x.wall))} cpu ${fmt(xs.map((x) => x.cpu))} ${roots.length > 1 ? s.root : ''}`,
      );
    }
  }
  for (const s of subjects) await s.cleanup();
}
