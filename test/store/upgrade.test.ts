/**
 * A deployment made before the store had one migration set has a database built by the per-database migration
 * trees (kept verbatim in test/store/legacy-migrations/), recorded the way that code recorded them. The current
 * store must open it as it is: recognise the applied migrations, read every row unchanged, and write. Checked on
 * SQLite and on a real PostgreSQL (a fresh schema per run).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { migrationFiles } from '../../runtime/store/migrate.ts';
import type { Account, ActivityRecord, ApiCredential, Connection, Store } from '../../runtime/store/types.ts';
import { PG_URL } from '../helpers/harness.ts';
import { asText } from '../helpers/text.ts';

const LEGACY = join(import.meta.dirname, 'legacy-migrations');
const dir = mkdtempSync(join(tmpdir(), 'acs-upgrade-'));
const run = Date.now().toString(36);
const schemas: string[] = [];

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await admin.end();
});

/** One statement runner over either database, for building the legacy database the way the old code did. */
interface Raw {
  exec(script: string): Promise<void>;
  run(sql: string, values: unknown[]): Promise<void>;
  all(sql: string): Promise<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

function rawSqlite(path: string): Raw {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  return {
    exec: (s) => Promise.resolve(void db.exec(s)),
    run: (s, v) => Promise.resolve(void db.prepare(s).run(...v)),
    all: (s) => Promise.resolve(db.prepare(s).all() as Array<Record<string, unknown>>),
    close: () => Promise.resolve(void db.close()),
  };
}

async function rawPostgres(schema: string): Promise<Raw> {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1, options: `-c search_path=${schema}` });
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  const n = (s: string) => {
    let i = 0;
    return s.replace(/\?/g, () => `$${++i}`);
  };
  return {
    exec: async (s) => void (await pool.query(s)),
    run: async (s, v) => void (await pool.query(n(s), v)),
    all: async (s) => (await pool.query(s)).rows as Array<Record<string, unknown>>,
    close: () => pool.end(),
  };
}

/** What the code before the single migration set did on first start: its table, its file names as versions. */
async function applyLegacyMigrations(raw: Raw, kind: 'sqlite' | 'postgres'): Promise<string[]> {
  const int = kind === 'sqlite' ? 'INTEGER' : 'BIGINT';
  await raw.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at ${int} NOT NULL)`);
  const files = readdirSync(join(LEGACY, kind))
    .filter((f) => f.endsWith('.sql'))
    .sort();
  for (const [i, file] of files.entries()) {
    await raw.exec(readFileSync(join(LEGACY, kind, file), 'utf8'));
    await raw.run('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)', [file, 1_700_000_000_000 + i]);
  }
  return files;
}

const T = 1_700_000_100_000;
const connection: Connection = {
  id: 'conn_legacy',
  name: 'legacy-mail',
  connector: 'mail',
  authKind: 'oauth2',
  clientId: 'client-abc',
  clientSecretSealed: 'v1.k1.iv-a.ct-a',
  scopes: ['Mail.Read', 'offline_access'],
  apiBaseUrl: 'https://graph.example.test',
  apiHosts: { graph: 'https://graph.example.test' },
  oauth: { token_url: 'https://login.example.test/token' },
  registrationSealed: 'v1.k1.iv-r.ct-r',
  createdAt: T,
  updatedAt: T + 1,
};
const accounts: Account[] = [
  {
    id: 'ca_active',
    connectionId: connection.id,
    identifier: 'ann@example.test',
    status: 'ACTIVE',
    fields: { tenant: 'contoso', ünïcode: 'välue' },
    secretsSealed: 'v1.k1.iv-s.ct-s',
    tokenExpiresAt: T + 3_600_000,
    lastUsedAt: T + 5,
    lastError: null,
    version: 7,
    createdAt: T + 10,
    updatedAt: T + 11,
  },
  {
    id: 'ca_pending',
    connectionId: connection.id,
    identifier: 'bob@example.test',
    status: 'PENDING_AUTH',
    fields: {},
    secretsSealed: null,
    tokenExpiresAt: null,
    lastUsedAt: null,
    lastError: null,
    version: 0,
    createdAt: T + 20,
    updatedAt: T + 20,
  },
  {
    id: 'ca_expired',
    connectionId: connection.id,
    identifier: "o'hara@example.test",
    status: 'EXPIRED',
    fields: { tenant: 'x' },
    secretsSealed: 'v1.k1.iv-e.ct-e',
    tokenExpiresAt: T - 1,
    lastUsedAt: T + 30,
    lastError: 'invalid_grant: token revoked',
    // Past 2^31: the old SQLite columns are INTEGER (64-bit); nothing may narrow them.
    version: 3_000_000_000,
    createdAt: T + 30,
    updatedAt: T + 31,
  },
];
const credential: ApiCredential = {
  id: 'cred_legacy',
  clientId: 'acs_legacy_client',
  secretHash: 'scrypt$legacy',
  name: 'legacy',
  createdAt: T,
  revokedAt: null,
  lastUsedAt: T + 2,
  // Made before scopes existed (migration 010): it could do everything, and still can.
  scopes: '*',
  connectionNames: null,
};
const activity: ActivityRecord[] = [
  {
    id: 'act_1',
    kind: 'tool',
    name: 'mail_list_messages',
    connectionName: connection.name,
    accountId: 'ca_active',
    identifier: 'ann@example.test',
    status: 200,
    errorCode: null,
    latencyMs: 42,
    createdAt: T + 100,
  },
  {
    id: 'act_2',
    kind: 'proxy',
    name: 'GET /v1.0/me',
    connectionName: connection.name,
    accountId: null,
    identifier: null,
    status: 502,
    errorCode: 'provider_error',
    latencyMs: 9,
    createdAt: T + 101,
  },
];

async function insertLegacyRows(raw: Raw): Promise<void> {
  const c = connection;
  await raw.run('INSERT INTO meta (key, value) VALUES (?, ?), (?, ?)', [
    'service_token_key',
    'v1.k1.iv-m.ct-m',
    'keyring_check',
    'plain value',
  ]);
  await raw.run(
    'INSERT INTO api_credentials (id, client_id, secret_hash, name, created_at, revoked_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    [
      credential.id,
      credential.clientId,
      credential.secretHash,
      credential.name,
      credential.createdAt,
      credential.revokedAt,
      credential.lastUsedAt,
    ],
  );
  await raw.run(
    `INSERT INTO connections (id, name, connector, auth_kind, client_id, client_secret_sealed, scopes, api_base_url, api_hosts, oauth, registration_sealed, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      c.id,
      c.name,
      c.connector,
      c.authKind,
      c.clientId,
      c.clientSecretSealed,
      JSON.stringify(c.scopes),
      c.apiBaseUrl,
      JSON.stringify(c.apiHosts),
      JSON.stringify(c.oauth),
      c.registrationSealed,
      c.createdAt,
      c.updatedAt,
    ],
  );
  for (const a of accounts) {
    await raw.run(
      `INSERT INTO connected_accounts (id, connection_id, identifier, status, fields, secrets_sealed, token_expires_at, last_used_at, last_error, version, lock_until, lock_owner, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        a.id,
        a.connectionId,
        a.identifier,
        a.status,
        JSON.stringify(a.fields),
        a.secretsSealed,
        a.tokenExpiresAt,
        a.lastUsedAt,
        a.lastError,
        a.version,
        null,
        null,
        a.createdAt,
        a.updatedAt,
      ],
    );
  }
  await raw.run(
    'INSERT INTO oauth_links (token_hash, connection_id, account_id, redirect_url, expires_at) VALUES (?, ?, ?, ?, ?)',
    ['link-hash', c.id, 'ca_pending', 'https://app.example.test/done', 9_000_000_000_000],
  );
  await raw.run(
    'INSERT INTO oauth_states (state_hash, connection_id, account_id, verifier_sealed, redirect_url, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ['state-hash', c.id, 'ca_pending', 'v1.k1.iv-v.ct-v', null, 9_000_000_000_000, null],
  );
  for (const r of activity) {
    await raw.run(
      `INSERT INTO activity (id, kind, name, connection_name, account_id, identifier, status, error_code, latency_ms, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        r.id,
        r.kind,
        r.name,
        r.connectionName,
        r.accountId,
        r.identifier,
        r.status,
        r.errorCode,
        r.latencyMs,
        r.createdAt,
      ],
    );
  }
  await raw.run(
    'INSERT INTO dashboard_users (id, username, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?)',
    ['du_legacy', 'admin', 'scrypt$old', T, T],
  );
  await raw.run('INSERT INTO dashboard_sessions (id_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)', [
    'session-hash',
    'du_legacy',
    T,
    9_000_000_000_000,
  ]);
}

/** Every row of every table, as plain values, to compare a database before and after the store opened it. */
async function snapshot(raw: Raw): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of [
    'schema_migrations',
    'meta',
    'api_credentials',
    'connections',
    'connected_accounts',
    'oauth_links',
    'oauth_states',
    'activity',
    'dashboard_users',
    'dashboard_sessions',
  ]) {
    const rows = await raw.all(`SELECT * FROM ${table}`);
    // pg reads BIGINT as text; SQLite as a number: compare as text.
    out[table] = rows
      .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? null : asText(v)])))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  return out;
}

const cases: Array<{
  kind: 'sqlite' | 'postgres';
  /** A database by name: each test makes its own, with the earlier migrations or with the current store. */
  raw: (db: string) => Promise<Raw>;
  store: (db: string) => Store;
}> = [
  {
    kind: 'sqlite',
    raw: (db) => Promise.resolve(rawSqlite(join(dir, `${db}.sqlite`))),
    store: (db) => new SqliteStore(join(dir, `${db}.sqlite`)),
  },
  {
    kind: 'postgres',
    raw: async (db) => {
      schemas.push(`upgrade_${db}_${run}`);
      return rawPostgres(`upgrade_${db}_${run}`);
    },
    store: (db) => new PostgresStore(PG_URL, `upgrade_${db}_${run}`),
  },
];

describe.each(cases)('a $kind database made by the earlier migrations', ({ kind, raw: openRaw, store: openStore }) => {
  it('has the tables, columns, keys, indexes and constraints the current migrations create', async () => {
    // The legacy trees end where the one set began; the migrations since then apply on top of them.
    const legacy = await openRaw('bare');
    await applyLegacyMigrations(legacy, kind);
    await legacy.close();
    const upgraded = openStore('bare');
    await upgraded.migrate();
    await upgraded.close();
    const reopened = await openRaw('bare');
    const legacySchema = await describeSchema(reopened, kind);
    await reopened.close();
    const store = openStore('fresh');
    await store.migrate();
    await store.close();
    const fresh = await openRaw('fresh');
    const freshSchema = await describeSchema(fresh, kind);
    await fresh.close();
    // The legacy tables at least; later migrations add their own (003_mcp.sql on), and both databases must agree.
    expect(Object.keys(freshSchema).sort()).toEqual(
      expect.arrayContaining([
        'activity',
        'api_credentials',
        'connected_accounts',
        'connections',
        'dashboard_sessions',
        'dashboard_users',
        'meta',
        'oauth_links',
        'oauth_states',
        'schema_migrations',
      ]),
    );
    expect(freshSchema).toEqual(legacySchema);
  });

  it('is opened as it is: nothing re-applied, every row read back unchanged, and writes work', async () => {
    const raw = await openRaw('legacy');
    const legacyVersions = await applyLegacyMigrations(raw, kind);
    await insertLegacyRows(raw);
    const before = await snapshot(raw);
    await raw.close();

    // The versions the old code recorded are the names of the one migration set's first files; later ones
    // (from 007_perf.postgres.sql on) apply on top.
    expect(migrationFiles(kind).slice(0, legacyVersions.length)).toEqual(legacyVersions);
    expect(
      migrationFiles(kind)
        .slice(legacyVersions.length)
        .every((f) => f > legacyVersions.at(-1)!),
    ).toBe(true);

    const store = openStore('legacy');
    try {
      await store.migrate();
      const reopened = await openRaw('legacy');
      // Every row as it was; columns added by later migrations are left empty.
      const after = await snapshot(reopened);
      for (const [table, rows] of Object.entries(before)) {
        const columns = rows[0] ? Object.keys(rows[0]) : [];
        expect(
          after[table]!.map((r) => Object.fromEntries(columns.map((c) => [c, (r as Record<string, unknown>)[c]]))),
          table,
        ).toEqual(table === 'schema_migrations' ? expect.arrayContaining(rows) : rows);
      }
      await reopened.close();

      expect(await store.integrityCheck()).toEqual([]);
      expect(await store.isEmpty()).toBe(false);
      expect(await store.getMeta('service_token_key')).toBe('v1.k1.iv-m.ct-m');
      expect(await store.getMeta('keyring_check')).toBe('plain value');
      expect(await store.listApiCredentials()).toEqual([credential]);
      expect(await store.getApiCredentialByClientId(credential.clientId)).toEqual(credential);
      expect(await store.listConnectionsWithCounts()).toEqual([{ ...connection, accountCount: accounts.length }]);
      expect(await store.getConnectionByName(connection.name)).toEqual(connection);
      expect(await store.listAccounts({ limit: 10 })).toEqual(accounts);
      for (const a of accounts) {
        expect(await store.getAccount(a.id)).toEqual(a);
        expect(await store.findAccount(a.connectionId, a.identifier)).toEqual(a);
      }
      expect(await store.getOAuthLink('link-hash', T)).toEqual({
        tokenHash: 'link-hash',
        connectionId: connection.id,
        accountId: 'ca_pending',
        redirectUrl: 'https://app.example.test/done',
        expiresAt: 9_000_000_000_000,
        userVerifyUrl: null,
        openedAt: null,
        usedAt: null,
      });
      expect(await store.listActivity(10)).toEqual([...activity].reverse());
      expect(await store.getDashboardUserByName('admin')).toEqual({
        id: 'du_legacy',
        username: 'admin',
        passwordHash: 'scrypt$old',
        // The user from before roles existed is the admin (migration 015).
        role: 'admin',
        oidcSubject: null,
        createdAt: T,
        updatedAt: T,
      });
      expect(await store.getDashboardSession('session-hash', T)).toMatchObject({
        userId: 'du_legacy',
        username: 'admin',
        role: 'admin',
      });
      expect(
        (await store.listSealed(undefined, 10_000)).map((c) => `${c.table}.${c.column}:${c.id}=${c.value}`).sort(),
      ).toEqual(
        [
          `connections.client_secret_sealed:${connection.id}=v1.k1.iv-a.ct-a`,
          `connections.registration_sealed:${connection.id}=v1.k1.iv-r.ct-r`,
          'connected_accounts.secrets_sealed:ca_active=v1.k1.iv-s.ct-s',
          'connected_accounts.secrets_sealed:ca_expired=v1.k1.iv-e.ct-e',
          'oauth_states.verifier_sealed:state-hash=v1.k1.iv-v.ct-v',
          'meta.value:service_token_key=v1.k1.iv-m.ct-m',
        ].sort(),
      );

      // Writes: every kind of change the service makes, on the old tables.
      const expired = accounts[2]!;
      const bumped = await store.updateAccount(
        expired.id,
        { status: 'ACTIVE', secretsSealed: 'v1.k2.iv.ct', lastError: null },
        T + 500,
        expired.version,
      );
      expect(bumped).toMatchObject({ status: 'ACTIVE', version: expired.version + 1, lastError: null });
      expect(await store.consumeOAuthState('state-hash', T)).toMatchObject({ accountId: 'ca_pending', usedAt: T });
      const { account: added, created } = await store.getOrCreateAccount({
        ...accounts[1]!,
        id: 'ca_new',
        identifier: 'new@example.test',
      });
      expect(created).toBe(true);
      await store.transaction(async (tx) => {
        await tx.updateAccount(added.id, { status: 'ACTIVE', secretsSealed: 'v1.k2.a.b' }, T + 600);
        await tx.recordActivity([{ ...activity[0]!, id: 'act_3', createdAt: T + 600 }]);
      });
      expect(await store.getAccount(added.id)).toMatchObject({ status: 'ACTIVE', version: 1 });
      await store.touchAccounts(new Map([[accounts[0]!.id, T + 700]]));
      expect((await store.getAccount(accounts[0]!.id))!.lastUsedAt).toBe(T + 700);
      expect(await store.withAccountLock(accounts[0]!.id, () => Promise.resolve('locked'), 1000)).toBe('locked');
      await store.setDashboardPassword('du_legacy', 'scrypt$new', T + 800);
      expect(await store.getDashboardSession('session-hash', T)).toBeUndefined();
      expect(await store.deleteConnection(connection.id)).toBe(accounts.length + 1);
      expect(await store.integrityCheck()).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

/**
 * The structure of every table, as the database reports it. SQLite's declared column types differ (INTEGER in
 * the old tree, BIGINT in the one set) but give the same type affinity, which is what SQLite stores by.
 */
async function describeSchema(raw: Raw, kind: 'sqlite' | 'postgres'): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  if (kind === 'sqlite') {
    const affinity = (t: string) => (/INT/i.test(t) ? 'INTEGER' : /CHAR|CLOB|TEXT/i.test(t) ? 'TEXT' : t);
    const tables = await raw.all("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    for (const { name } of tables) {
      const columns = await raw.all(`SELECT * FROM pragma_table_info('${asText(name)}')`);
      const indexes = await raw.all(
        `SELECT name, "unique", origin FROM pragma_index_list('${asText(name)}') ORDER BY name`,
      );
      const indexColumns: Record<string, unknown> = {};
      for (const ix of indexes)
        indexColumns[String(ix.name)] = await raw.all(
          `SELECT seqno, name FROM pragma_index_info('${asText(ix.name)}')`,
        );
      out[String(name)] = {
        columns: columns.map((c) => ({ ...c, type: affinity(String(c.type)) })),
        indexes,
        indexColumns,
        foreignKeys: await raw.all(`SELECT * FROM pragma_foreign_key_list('${asText(name)}')`),
        checks: /CHECK \(.*\)\)/.exec(
          String((await raw.all(`SELECT sql FROM sqlite_master WHERE name = '${asText(name)}'`))[0]!.sql),
        )?.[0],
      };
    }
    return out;
  }
  const columns = await raw.all(
    `SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default
     FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  const indexes = await raw.all(
    `SELECT tablename, indexname, regexp_replace(indexdef, ' ON [a-z_0-9]+\\.', ' ON ') AS indexdef
     FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname`,
  );
  const constraints = await raw.all(
    `SELECT c.relname AS table_name, k.conname, k.contype, pg_get_constraintdef(k.oid) AS def
     FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() ORDER BY k.conname`,
  );
  for (const c of columns) {
    const t = String(c.table_name);
    out[t] ??= { columns: [], indexes: [], constraints: [] };
    (out[t] as { columns: unknown[] }).columns.push(c);
  }
  for (const i of indexes) (out[String(i.tablename)] as { indexes: unknown[] }).indexes.push(i);
  for (const k of constraints) (out[String(k.table_name)] as { constraints: unknown[] }).constraints.push(k);
  return out;
}
