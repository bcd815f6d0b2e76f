import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import Database from 'better-sqlite3';
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

const LEASE_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Names this process in lease rows: host, pid, and a nonce per process start (a restarted service may get the same pid). */
const HOST = hostname();
const INCARNATION = randomBytes(4).toString('hex');

/**
 * Whether a lease owner (`host:pid:incarnation:nonce`) is a process of this host that no longer runs. SQLite is
 * shared only between processes of one host, so a lease of a killed process can be taken over at once instead of
 * blocking the account until it expires. Anything uncertain (another host name, a live or foreign pid) is not gone.
 */
export function leaseOwnerGone(owner: string | null): boolean {
  const m = /^(.+):(\d+):([0-9a-f]+):[0-9a-f]+$/.exec(owner ?? '');
  if (!m || m[1] !== HOST) return false;
  const pid = Number(m[2]);
  if (pid === process.pid) return m[3] !== INCARNATION;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export function decodeCursor(cursor: string | undefined): { createdAt: number; id: string } | undefined {
  if (!cursor) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const idx = text.indexOf(':');
  const createdAt = Number(text.slice(0, idx));
  if (idx <= 0 || !Number.isFinite(createdAt)) throw new Error('invalid cursor');
  return { createdAt, id: text.slice(idx + 1) };
}

export function encodeCursor(a: Pick<Account, 'createdAt' | 'id'>): string {
  return Buffer.from(`${a.createdAt}:${a.id}`, 'utf8').toString('base64url');
}

/** The embedded default store: one SQLite file in WAL mode. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private db: Database.Database;
  private stmts = new Map<string, Database.Statement>();

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // Only the service's user may read the store (SQLite gives the -wal and -shm files the same mode).
    closeSync(openSync(path, 'a', 0o600));
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // NORMAL is durable against process crashes (the WAL is fsynced at checkpoints); FULL only adds
    // protection against power loss at the cost of an fsync per commit.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
  }

  private st(sql: string): Database.Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  async migrate(): Promise<void> {
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)',
    );
    const dir = new URL('./migrations/sqlite/', import.meta.url);
    const done = new Set(
      (this.db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: string }>).map(
        (r) => r.version,
      ),
    );
    for (const file of readdirSync(dir)
      .filter((f) => f.endsWith('.sql'))
      .sort()) {
      if (done.has(file)) continue;
      const sql = readFileSync(new URL(file, dir), 'utf8');
      this.db.transaction(() => {
        this.db.exec(sql);
        this.db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(file, Date.now());
      })();
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }

  async isEmpty(): Promise<boolean> {
    const row = this.st(
      `SELECT (SELECT COUNT(*) FROM connections) + (SELECT COUNT(*) FROM connected_accounts) + (SELECT COUNT(*) FROM meta WHERE key = 'service_token_key') AS n`,
    ).get() as { n: number };
    return row.n === 0;
  }

  async integrityCheck(): Promise<string[]> {
    const rows = this.db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    const problems = rows.map((r) => r.integrity_check).filter((s) => s !== 'ok');
    const fk = this.db.pragma('foreign_key_check') as unknown[];
    if (fk.length) problems.push(`${fk.length} foreign key violation(s)`);
    return problems;
  }

  async getMeta(key: string) {
    const row = this.st('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }
  async initMeta(key: string, value: string) {
    this.st('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING').run(key, value);
    return (await this.getMeta(key))!;
  }
  async setMeta(key: string, value: string) {
    this.st('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      key,
      value,
    );
  }

  async createApiCredential(c: ApiCredential) {
    this.st(
      'INSERT INTO api_credentials (id, client_id, secret_hash, name, created_at, revoked_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(c.id, c.clientId, c.secretHash, c.name, c.createdAt, c.revokedAt, c.lastUsedAt);
  }
  async getApiCredentialByClientId(clientId: string) {
    const r = this.st('SELECT * FROM api_credentials WHERE client_id = ?').get(clientId);
    return r ? toCredential(r as never) : undefined;
  }
  async getApiCredential(id: string) {
    const r = this.st('SELECT * FROM api_credentials WHERE id = ?').get(id);
    return r ? toCredential(r as never) : undefined;
  }
  async listApiCredentials() {
    return (this.st('SELECT * FROM api_credentials ORDER BY created_at, id').all() as never[]).map(toCredential);
  }
  async revokeApiCredential(id: string, at: number) {
    return (
      this.st('UPDATE api_credentials SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(at, id).changes === 1
    );
  }
  async countApiCredentials() {
    return (this.st('SELECT COUNT(*) AS n FROM api_credentials').get() as { n: number }).n;
  }
  async touchApiCredential(id: string, at: number) {
    this.st('UPDATE api_credentials SET last_used_at = ? WHERE id = ?').run(at, id);
  }

  async createConnection(c: Connection) {
    this.st(
      `INSERT INTO connections (id, name, connector, auth_kind, client_id, client_secret_sealed, scopes, api_base_url, api_hosts, oauth, registration_sealed, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
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
    );
  }
  async getConnectionByName(name: string) {
    const r = this.st('SELECT * FROM connections WHERE name = ?').get(name);
    return r ? toConnection(r as never) : undefined;
  }
  async getConnection(id: string) {
    const r = this.st('SELECT * FROM connections WHERE id = ?').get(id);
    return r ? toConnection(r as never) : undefined;
  }
  async listConnections() {
    const rows = this.st(
      `SELECT c.*, (SELECT COUNT(*) FROM connected_accounts a WHERE a.connection_id = c.id) AS account_count
       FROM connections c ORDER BY c.created_at, c.id`,
    ).all() as Array<Record<string, unknown>>;
    return rows.map((r) => ({ ...toConnection(r), accountCount: Number(r.account_count) }));
  }
  async updateConnection(id: string, patch: ConnectionPatch, at: number) {
    const sets: string[] = [];
    const values: unknown[] = [];
    const put = (col: string, v: unknown) => {
      sets.push(`${col} = ?`);
      values.push(v);
    };
    if (patch.clientId !== undefined) put('client_id', patch.clientId);
    if (patch.clientSecretSealed !== undefined) put('client_secret_sealed', patch.clientSecretSealed);
    if (patch.scopes !== undefined) put('scopes', JSON.stringify(patch.scopes));
    if (patch.apiBaseUrl !== undefined) put('api_base_url', patch.apiBaseUrl);
    if (patch.apiHosts !== undefined) put('api_hosts', JSON.stringify(patch.apiHosts));
    if (patch.oauth !== undefined) put('oauth', JSON.stringify(patch.oauth));
    if (patch.registrationSealed !== undefined) put('registration_sealed', patch.registrationSealed);
    put('updated_at', at);
    this.db.prepare(`UPDATE connections SET ${sets.join(', ')} WHERE id = ?`).run(...values, id);
    return this.getConnection(id);
  }
  async deleteConnection(id: string) {
    return this.db.transaction(() => {
      const n = (
        this.st('SELECT COUNT(*) AS n FROM connected_accounts WHERE connection_id = ?').get(id) as { n: number }
      ).n;
      const changes = this.st('DELETE FROM connections WHERE id = ?').run(id).changes;
      return changes ? n : undefined;
    })();
  }
  async countAccounts(connectionId: string) {
    return (
      this.st('SELECT COUNT(*) AS n FROM connected_accounts WHERE connection_id = ?').get(connectionId) as { n: number }
    ).n;
  }

  async getOrCreateAccount(a: Account) {
    const inserted = this.st(
      `INSERT INTO connected_accounts (id, connection_id, identifier, status, fields, secrets_sealed, token_expires_at, last_used_at, last_error, version, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (connection_id, identifier) DO NOTHING`,
    ).run(
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
    ).changes;
    const account = (await this.findAccount(a.connectionId, a.identifier))!;
    return { account, created: inserted === 1 };
  }
  async getAccount(id: string) {
    const r = this.st('SELECT * FROM connected_accounts WHERE id = ?').get(id);
    return r ? toAccount(r as never) : undefined;
  }
  async findAccount(connectionId: string, identifier: string) {
    const r = this.st('SELECT * FROM connected_accounts WHERE connection_id = ? AND identifier = ?').get(
      connectionId,
      identifier,
    );
    return r ? toAccount(r as never) : undefined;
  }
  async listAccounts(q: AccountQuery) {
    const where: string[] = [];
    const values: unknown[] = [];
    if (q.connectionId) {
      where.push('connection_id = ?');
      values.push(q.connectionId);
    }
    if (q.identifier !== undefined) {
      where.push('identifier = ?');
      values.push(q.identifier);
    }
    if (q.identifierContains) {
      where.push("identifier LIKE ? ESCAPE '\\'");
      values.push(`%${escapeLike(q.identifierContains)}%`);
    }
    if (q.status) {
      where.push('status = ?');
      values.push(q.status);
    }
    const after = decodeCursor(q.after);
    if (after) {
      where.push('(created_at > ? OR (created_at = ? AND id > ?))');
      values.push(after.createdAt, after.createdAt, after.id);
    }
    const sql = `SELECT * FROM connected_accounts ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id LIMIT ?`;
    return (this.st(sql).all(...values, q.limit) as never[]).map(toAccount);
  }
  async updateAccount(id: string, patch: AccountPatch, at: number, expectedVersion?: number) {
    const sets: string[] = ['version = version + 1', 'updated_at = ?'];
    const values: unknown[] = [at];
    if (patch.status !== undefined) {
      sets.push('status = ?');
      values.push(patch.status);
    }
    if (patch.fields !== undefined) {
      sets.push('fields = ?');
      values.push(JSON.stringify(patch.fields));
    }
    if (patch.secretsSealed !== undefined) {
      sets.push('secrets_sealed = ?');
      values.push(patch.secretsSealed);
    }
    if (patch.tokenExpiresAt !== undefined) {
      sets.push('token_expires_at = ?');
      values.push(patch.tokenExpiresAt);
    }
    if (patch.lastError !== undefined) {
      sets.push('last_error = ?');
      values.push(patch.lastError);
    }
    const guard = expectedVersion === undefined ? '' : ' AND version = ?';
    if (expectedVersion !== undefined) values.push(id, expectedVersion);
    else values.push(id);
    const changes = this.st(`UPDATE connected_accounts SET ${sets.join(', ')} WHERE id = ?${guard}`).run(
      ...values,
    ).changes;
    return changes ? this.getAccount(id) : undefined;
  }
  async deleteAccount(id: string) {
    return this.st('DELETE FROM connected_accounts WHERE id = ?').run(id).changes === 1;
  }
  async touchAccounts(lastUsed: ReadonlyMap<string, number>) {
    const st = this.st(
      'UPDATE connected_accounts SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
    );
    this.db.transaction(() => {
      for (const [id, at] of lastUsed) st.run(at, id, at);
    })();
  }
  async withAccountLock<T>(id: string, fn: () => Promise<T>, waitMs = 30_000): Promise<T> {
    const owner = `${HOST}:${process.pid}:${INCARNATION}:${randomBytes(8).toString('hex')}`;
    const deadline = Date.now() + waitMs;
    const acquire = this.st(
      'UPDATE connected_accounts SET lock_until = ?, lock_owner = ? WHERE id = ? AND (lock_until IS NULL OR lock_until < ?)',
    );
    const takeOver = this.st(
      'UPDATE connected_accounts SET lock_until = ?, lock_owner = ? WHERE id = ? AND lock_owner = ?',
    );
    for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
      const now = Date.now();
      if (acquire.run(now + LEASE_MS, owner, id, now).changes === 1) break;
      const row = this.st('SELECT lock_owner FROM connected_accounts WHERE id = ?').get(id) as
        { lock_owner: string | null } | undefined;
      if (!row) throw new Error(`account ${id} does not exist`);
      if (leaseOwnerGone(row.lock_owner) && takeOver.run(now + LEASE_MS, owner, id, row.lock_owner).changes === 1)
        break;
      if (now > deadline) throw new LockTimeout(id);
      await sleep(delay);
    }
    try {
      return await fn();
    } finally {
      this.st('UPDATE connected_accounts SET lock_until = NULL, lock_owner = NULL WHERE id = ? AND lock_owner = ?').run(
        id,
        owner,
      );
    }
  }

  async createOAuthLink(l: OAuthLink) {
    this.st(
      'INSERT INTO oauth_links (token_hash, connection_id, account_id, redirect_url, expires_at) VALUES (?, ?, ?, ?, ?)',
    ).run(l.tokenHash, l.connectionId, l.accountId, l.redirectUrl, l.expiresAt);
  }
  async getOAuthLink(tokenHash: string, now: number) {
    const r = this.st('SELECT * FROM oauth_links WHERE token_hash = ? AND expires_at > ?').get(tokenHash, now);
    return r ? toLink(r as never) : undefined;
  }
  async createOAuthState(s: OAuthState) {
    this.st(
      'INSERT INTO oauth_states (state_hash, connection_id, account_id, verifier_sealed, redirect_url, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(s.stateHash, s.connectionId, s.accountId, s.verifierSealed, s.redirectUrl, s.expiresAt, s.usedAt);
  }
  async consumeOAuthState(stateHash: string, now: number) {
    const r = this.st(
      'UPDATE oauth_states SET used_at = ? WHERE state_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING *',
    ).get(now, stateHash, now);
    return r ? toState(r as never) : undefined;
  }
  async deleteExpiredOAuth(now: number) {
    this.st('DELETE FROM oauth_states WHERE expires_at < ?').run(now - 86_400_000);
    this.st('DELETE FROM oauth_links WHERE expires_at < ?').run(now);
  }

  async recordActivity(records: readonly ActivityRecord[]) {
    const st = this.st(
      `INSERT INTO activity (id, kind, name, connection_name, account_id, identifier, status, error_code, latency_ms, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.db.transaction(() => {
      for (const r of records) {
        st.run(
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
      }
    })();
  }
  async listActivity(limit: number, before?: number) {
    const rows = before
      ? this.st('SELECT * FROM activity WHERE created_at < ? ORDER BY created_at DESC, id DESC LIMIT ?').all(
          before,
          limit,
        )
      : this.st('SELECT * FROM activity ORDER BY created_at DESC, id DESC LIMIT ?').all(limit);
    return (rows as never[]).map(toActivity);
  }
  async pruneActivity(olderThan: number) {
    this.st('DELETE FROM activity WHERE created_at < ?').run(olderThan);
  }

  async createDashboardUser(u: DashboardUser) {
    return (
      this.st(
        'INSERT INTO dashboard_users (id, username, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (username) DO NOTHING',
      ).run(u.id, u.username, u.passwordHash, u.createdAt, u.updatedAt).changes === 1
    );
  }
  async getDashboardUserByName(username: string) {
    const r = this.st('SELECT * FROM dashboard_users WHERE username = ?').get(username);
    return r ? toDashboardUser(r as never) : undefined;
  }
  async setDashboardPassword(userId: string, passwordHash: string, at: number) {
    this.db.transaction(() => {
      this.st('UPDATE dashboard_users SET password_hash = ?, updated_at = ? WHERE id = ?').run(
        passwordHash,
        at,
        userId,
      );
      this.st('DELETE FROM dashboard_sessions WHERE user_id = ?').run(userId);
    })();
  }
  async createDashboardSession(s: DashboardSession) {
    this.st('INSERT INTO dashboard_sessions (id_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)').run(
      s.idHash,
      s.userId,
      s.createdAt,
      s.expiresAt,
    );
  }
  async getDashboardSession(idHash: string, now: number) {
    const r = this.st(
      'SELECT s.*, u.username FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.user_id WHERE s.id_hash = ? AND s.expires_at > ?',
    ).get(idHash, now);
    return r ? toDashboardSession(r as never) : undefined;
  }
  async deleteDashboardSession(idHash: string) {
    return this.st('DELETE FROM dashboard_sessions WHERE id_hash = ?').run(idHash).changes === 1;
  }
  async deleteExpiredDashboardSessions(now: number) {
    this.st('DELETE FROM dashboard_sessions WHERE expires_at <= ?').run(now);
  }

  async listSealed(): Promise<SealedCell[]> {
    const out: SealedCell[] = [];
    for (const [table, idCol, col] of SEALED_COLUMNS) {
      const rows = this.db
        .prepare(`SELECT ${idCol} AS id, ${col} AS value FROM ${table} WHERE ${col} IS NOT NULL`)
        .all() as Array<{
        id: string;
        value: string;
      }>;
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
    return (
      this.db
        .prepare(`UPDATE ${cell.table} SET ${cell.column} = ? WHERE ${idCol} = ? AND ${cell.column} = ?`)
        .run(cell.value, cell.id, previous).changes === 1
    );
  }
}
