import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import type {
  Account,
  AccountPatch,
  AccountQuery,
  ActivityRecord,
  ApiCredential,
  Connection,
  ConnectionPatch,
  DashboardSession,
  DashboardUser,
  OAuthLink,
  OAuthState,
  SealedCell,
  Store,
} from './types.ts';
import { LockTimeout } from './types.ts';
import {
  escapeLike,
  SEALED_COLUMNS,
  SEALED_META_KEYS,
  toAccount,
  toActivity,
  toConnection,
  toCredential,
  toDashboardSession,
  toDashboardUser,
  toLink,
  toState,
} from './rows.ts';
import { decodeCursor } from './sqlite.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// BIGINT columns hold epoch milliseconds and versions, well within Number's exact range.
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format as never)) as typeof pg.types.getTypeParser,
};

/** The scale-out store: PostgreSQL, optionally inside its own schema (tests use one schema per run). */
export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly pool: pg.Pool;

  constructor(
    connectionString: string,
    readonly schema?: string,
    poolSize = 10,
  ) {
    if (schema && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
    this.pool = new pg.Pool({
      connectionString,
      max: poolSize,
      types,
      options: schema ? `-c search_path=${schema}` : undefined,
    });
  }

  private async q<T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
    const r = await this.pool.query(sql, values);
    return r.rows as T[];
  }

  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await client.query('SELECT pg_advisory_lock(424242)');
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)',
      );
      const done = new Set(
        (await client.query('SELECT version FROM schema_migrations')).rows.map((r) => r.version as string),
      );
      const dir = new URL('./migrations/postgres/', import.meta.url);
      for (const file of readdirSync(dir)
        .filter((f) => f.endsWith('.sql'))
        .sort()) {
        if (done.has(file)) continue;
        await client.query('BEGIN');
        try {
          await client.query(readFileSync(new URL(file, dir), 'utf8'));
          await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [file, Date.now()]);
          await client.query('COMMIT');
        } catch (e) {
          await client.query('ROLLBACK');
          throw e;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(424242)').catch(() => {});
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  async isEmpty(): Promise<boolean> {
    const [r] = await this.q<{ n: number }>(
      `SELECT (SELECT COUNT(*) FROM connections) + (SELECT COUNT(*) FROM connected_accounts) + (SELECT COUNT(*) FROM meta WHERE key = 'service_token_key') AS n`,
    );
    return Number(r!.n) === 0;
  }

  async integrityCheck(): Promise<string[]> {
    const problems: string[] = [];
    const orphans = await this.q<{ n: number }>(
      'SELECT COUNT(*) AS n FROM connected_accounts a LEFT JOIN connections c ON c.id = a.connection_id WHERE c.id IS NULL',
    );
    if (Number(orphans[0]!.n)) problems.push(`${orphans[0]!.n} account(s) without a connection`);
    return problems;
  }

  async getMeta(key: string) {
    const [r] = await this.q<{ value: string }>('SELECT value FROM meta WHERE key = $1', [key]);
    return r?.value;
  }
  async initMeta(key: string, value: string) {
    await this.q('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, value]);
    return (await this.getMeta(key))!;
  }
  async setMeta(key: string, value: string) {
    await this.q(
      'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      [key, value],
    );
  }

  async createApiCredential(c: ApiCredential) {
    await this.q(
      'INSERT INTO api_credentials (id, client_id, secret_hash, name, created_at, revoked_at, last_used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [c.id, c.clientId, c.secretHash, c.name, c.createdAt, c.revokedAt, c.lastUsedAt],
    );
  }
  async getApiCredentialByClientId(clientId: string) {
    const [r] = await this.q('SELECT * FROM api_credentials WHERE client_id = $1', [clientId]);
    return r ? toCredential(r) : undefined;
  }
  async getApiCredential(id: string) {
    const [r] = await this.q('SELECT * FROM api_credentials WHERE id = $1', [id]);
    return r ? toCredential(r) : undefined;
  }
  async listApiCredentials() {
    return (await this.q('SELECT * FROM api_credentials ORDER BY created_at, id')).map(toCredential);
  }
  async revokeApiCredential(id: string, at: number) {
    const r = await this.pool.query('UPDATE api_credentials SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
      at,
      id,
    ]);
    return r.rowCount === 1;
  }
  async countApiCredentials() {
    const [r] = await this.q<{ n: number }>('SELECT COUNT(*) AS n FROM api_credentials');
    return Number(r!.n);
  }
  async touchApiCredential(id: string, at: number) {
    await this.q('UPDATE api_credentials SET last_used_at = $1 WHERE id = $2', [at, id]);
  }

  async createConnection(c: Connection) {
    await this.q(
      `INSERT INTO connections (id, name, connector, auth_kind, client_id, client_secret_sealed, scopes, api_base_url, api_hosts, oauth, registration_sealed, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
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
  }
  async getConnectionByName(name: string) {
    const [r] = await this.q('SELECT * FROM connections WHERE name = $1', [name]);
    return r ? toConnection(r) : undefined;
  }
  async getConnection(id: string) {
    const [r] = await this.q('SELECT * FROM connections WHERE id = $1', [id]);
    return r ? toConnection(r) : undefined;
  }
  async listConnections() {
    const rows = await this.q(
      `SELECT c.*, (SELECT COUNT(*) FROM connected_accounts a WHERE a.connection_id = c.id) AS account_count
       FROM connections c ORDER BY c.created_at, c.id`,
    );
    return rows.map((r) => ({ ...toConnection(r), accountCount: Number(r.account_count) }));
  }
  async updateConnection(id: string, patch: ConnectionPatch, at: number) {
    const sets: string[] = [];
    const values: unknown[] = [];
    const put = (col: string, v: unknown) => {
      values.push(v);
      sets.push(`${col} = $${values.length}`);
    };
    if (patch.clientId !== undefined) put('client_id', patch.clientId);
    if (patch.clientSecretSealed !== undefined) put('client_secret_sealed', patch.clientSecretSealed);
    if (patch.scopes !== undefined) put('scopes', JSON.stringify(patch.scopes));
    if (patch.apiBaseUrl !== undefined) put('api_base_url', patch.apiBaseUrl);
    if (patch.apiHosts !== undefined) put('api_hosts', JSON.stringify(patch.apiHosts));
    if (patch.oauth !== undefined) put('oauth', JSON.stringify(patch.oauth));
    if (patch.registrationSealed !== undefined) put('registration_sealed', patch.registrationSealed);
    put('updated_at', at);
    values.push(id);
    await this.q(`UPDATE connections SET ${sets.join(', ')} WHERE id = $${values.length}`, values);
    return this.getConnection(id);
  }
  async deleteConnection(id: string) {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const n = Number(
        (await client.query('SELECT COUNT(*) AS n FROM connected_accounts WHERE connection_id = $1', [id])).rows[0].n,
      );
      const r = await client.query('DELETE FROM connections WHERE id = $1', [id]);
      await client.query('COMMIT');
      return r.rowCount ? n : undefined;
    } catch (e) {
      await client.query('ROLLBACK');
      throw e;
    } finally {
      client.release();
    }
  }
  async countAccounts(connectionId: string) {
    const [r] = await this.q<{ n: number }>('SELECT COUNT(*) AS n FROM connected_accounts WHERE connection_id = $1', [
      connectionId,
    ]);
    return Number(r!.n);
  }

  async getOrCreateAccount(a: Account) {
    const r = await this.pool.query(
      `INSERT INTO connected_accounts (id, connection_id, identifier, status, fields, secrets_sealed, token_expires_at, last_used_at, last_error, version, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (connection_id, identifier) DO NOTHING`,
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
        a.createdAt,
        a.updatedAt,
      ],
    );
    const account = (await this.findAccount(a.connectionId, a.identifier))!;
    return { account, created: r.rowCount === 1 };
  }
  async getAccount(id: string) {
    const [r] = await this.q('SELECT * FROM connected_accounts WHERE id = $1', [id]);
    return r ? toAccount(r) : undefined;
  }
  async findAccount(connectionId: string, identifier: string) {
    const [r] = await this.q('SELECT * FROM connected_accounts WHERE connection_id = $1 AND identifier = $2', [
      connectionId,
      identifier,
    ]);
    return r ? toAccount(r) : undefined;
  }
  async listAccounts(q: AccountQuery) {
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (sql: (n: number) => string, v: unknown) => {
      values.push(v);
      where.push(sql(values.length));
    };
    if (q.connectionId) add((n) => `connection_id = $${n}`, q.connectionId);
    if (q.identifier !== undefined) add((n) => `identifier = $${n}`, q.identifier);
    if (q.identifierContains) add((n) => `identifier LIKE $${n} ESCAPE '\\'`, `%${escapeLike(q.identifierContains)}%`);
    if (q.status) add((n) => `status = $${n}`, q.status);
    const after = decodeCursor(q.after);
    if (after) {
      values.push(after.createdAt, after.id);
      where.push(
        `(created_at > $${values.length - 1} OR (created_at = $${values.length - 1} AND id > $${values.length}))`,
      );
    }
    values.push(q.limit);
    const rows = await this.q(
      `SELECT * FROM connected_accounts ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id LIMIT $${values.length}`,
      values,
    );
    return rows.map(toAccount);
  }
  async updateAccount(id: string, patch: AccountPatch, at: number, expectedVersion?: number) {
    const values: unknown[] = [at];
    const sets: string[] = ['version = version + 1', 'updated_at = $1'];
    const put = (col: string, v: unknown) => {
      values.push(v);
      sets.push(`${col} = $${values.length}`);
    };
    if (patch.status !== undefined) put('status', patch.status);
    if (patch.fields !== undefined) put('fields', JSON.stringify(patch.fields));
    if (patch.secretsSealed !== undefined) put('secrets_sealed', patch.secretsSealed);
    if (patch.tokenExpiresAt !== undefined) put('token_expires_at', patch.tokenExpiresAt);
    if (patch.lastError !== undefined) put('last_error', patch.lastError);
    values.push(id);
    let where = `id = $${values.length}`;
    if (expectedVersion !== undefined) {
      values.push(expectedVersion);
      where += ` AND version = $${values.length}`;
    }
    const rows = await this.q(`UPDATE connected_accounts SET ${sets.join(', ')} WHERE ${where} RETURNING *`, values);
    return rows[0] ? toAccount(rows[0]) : undefined;
  }
  async deleteAccount(id: string) {
    const r = await this.pool.query('DELETE FROM connected_accounts WHERE id = $1', [id]);
    return r.rowCount === 1;
  }
  async touchAccounts(lastUsed: ReadonlyMap<string, number>) {
    if (!lastUsed.size) return;
    const ids = [...lastUsed.keys()];
    const ats = ids.map((id) => lastUsed.get(id)!);
    await this.q(
      `UPDATE connected_accounts a SET last_used_at = u.at FROM unnest($1::text[], $2::bigint[]) AS u(id, at)
       WHERE a.id = u.id AND (a.last_used_at IS NULL OR a.last_used_at < u.at)`,
      [ids, ats],
    );
  }
  async withAccountLock<T>(id: string, fn: () => Promise<T>, waitMs = 30_000): Promise<T> {
    // A session-level advisory lock on a dedicated connection: released explicitly, or by the server if
    // this process dies, so a crashed refresher never leaves the account locked.
    const client = await this.pool.connect();
    const deadline = Date.now() + waitMs;
    try {
      for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
        const r = await client.query('SELECT pg_try_advisory_lock(hashtextextended($1, 7)) AS ok', [id]);
        if (r.rows[0].ok) break;
        if (Date.now() > deadline) throw new LockTimeout(id);
        await sleep(delay);
      }
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 7))', [id]);
      }
    } finally {
      client.release();
    }
  }

  async createOAuthLink(l: OAuthLink) {
    await this.q(
      'INSERT INTO oauth_links (token_hash, connection_id, account_id, redirect_url, expires_at) VALUES ($1, $2, $3, $4, $5)',
      [l.tokenHash, l.connectionId, l.accountId, l.redirectUrl, l.expiresAt],
    );
  }
  async getOAuthLink(tokenHash: string, now: number) {
    const [r] = await this.q('SELECT * FROM oauth_links WHERE token_hash = $1 AND expires_at > $2', [tokenHash, now]);
    return r ? toLink(r) : undefined;
  }
  async createOAuthState(s: OAuthState) {
    await this.q(
      'INSERT INTO oauth_states (state_hash, connection_id, account_id, verifier_sealed, redirect_url, expires_at, used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [s.stateHash, s.connectionId, s.accountId, s.verifierSealed, s.redirectUrl, s.expiresAt, s.usedAt],
    );
  }
  async consumeOAuthState(stateHash: string, now: number) {
    const [r] = await this.q(
      'UPDATE oauth_states SET used_at = $1 WHERE state_hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING *',
      [now, stateHash],
    );
    return r ? toState(r) : undefined;
  }
  async deleteExpiredOAuth(now: number) {
    await this.q('DELETE FROM oauth_states WHERE expires_at < $1', [now - 86_400_000]);
    await this.q('DELETE FROM oauth_links WHERE expires_at < $1', [now]);
  }

  async recordActivity(records: readonly ActivityRecord[]) {
    if (!records.length) return;
    const cols = [
      'id',
      'kind',
      'name',
      'connection_name',
      'account_id',
      'identifier',
      'status',
      'error_code',
      'latency_ms',
      'created_at',
    ];
    const values: unknown[] = [];
    const tuples = records.map((r) => {
      const start = values.length;
      values.push(
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
      );
      return `(${cols.map((_, i) => `$${start + i + 1}`).join(', ')})`;
    });
    await this.q(`INSERT INTO activity (${cols.join(', ')}) VALUES ${tuples.join(', ')}`, values);
  }
  async listActivity(limit: number, before?: number) {
    const rows = before
      ? await this.q('SELECT * FROM activity WHERE created_at < $1 ORDER BY created_at DESC, id DESC LIMIT $2', [
          before,
          limit,
        ])
      : await this.q('SELECT * FROM activity ORDER BY created_at DESC, id DESC LIMIT $1', [limit]);
    return rows.map(toActivity);
  }
  async pruneActivity(olderThan: number) {
    await this.q('DELETE FROM activity WHERE created_at < $1', [olderThan]);
  }

  async createDashboardUser(u: DashboardUser) {
    const r = await this.pool.query(
      'INSERT INTO dashboard_users (id, username, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (username) DO NOTHING',
      [u.id, u.username, u.passwordHash, u.createdAt, u.updatedAt],
    );
    return r.rowCount === 1;
  }
  async getDashboardUserByName(username: string) {
    const [r] = await this.q('SELECT * FROM dashboard_users WHERE username = $1', [username]);
    return r ? toDashboardUser(r) : undefined;
  }
  async setDashboardPassword(userId: string, passwordHash: string, at: number) {
    // One statement, so the new hash and the end of the old sessions commit together.
    await this.q(
      `WITH updated AS (UPDATE dashboard_users SET password_hash = $1, updated_at = $2 WHERE id = $3 RETURNING id)
       DELETE FROM dashboard_sessions WHERE user_id IN (SELECT id FROM updated)`,
      [passwordHash, at, userId],
    );
  }
  async createDashboardSession(s: DashboardSession) {
    await this.q('INSERT INTO dashboard_sessions (id_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)', [
      s.idHash,
      s.userId,
      s.createdAt,
      s.expiresAt,
    ]);
  }
  async getDashboardSession(idHash: string, now: number) {
    const [r] = await this.q(
      'SELECT s.*, u.username FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.user_id WHERE s.id_hash = $1 AND s.expires_at > $2',
      [idHash, now],
    );
    return r ? toDashboardSession(r) : undefined;
  }
  async deleteDashboardSession(idHash: string) {
    const r = await this.pool.query('DELETE FROM dashboard_sessions WHERE id_hash = $1', [idHash]);
    return r.rowCount === 1;
  }
  async deleteExpiredDashboardSessions(now: number) {
    await this.q('DELETE FROM dashboard_sessions WHERE expires_at <= $1', [now]);
  }

  async listSealed(): Promise<SealedCell[]> {
    const out: SealedCell[] = [];
    for (const [table, idCol, col] of SEALED_COLUMNS) {
      const rows = await this.q<{ id: string; value: string }>(
        `SELECT ${idCol} AS id, ${col} AS value FROM ${table} WHERE ${col} IS NOT NULL`,
      );
      for (const r of rows) out.push({ table, column: col, id: r.id, value: r.value });
    }
    for (const key of SEALED_META_KEYS) {
      const value = await this.getMeta(key);
      if (value) out.push({ table: 'meta', column: 'value', id: key, value });
    }
    return out;
  }
  async replaceSealed(cell: SealedCell, previous: string) {
    const idCol = cell.table === 'meta' ? 'key' : cell.table === 'oauth_states' ? 'state_hash' : 'id';
    const r = await this.pool.query(
      `UPDATE ${cell.table} SET ${cell.column} = $1 WHERE ${idCol} = $2 AND ${cell.column} = $3`,
      [cell.value, cell.id, previous],
    );
    return r.rowCount === 1;
  }
}
