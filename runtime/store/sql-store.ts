import { sql, type CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { ChangeFeed, ChangedTable } from './changes.ts';
import { decodeCursor } from './cursor.ts';
import { migrate } from './migrate.ts';
import { newId } from '../ids.ts';
import { prepare } from './prepared.ts';
import {
  escapeLike,
  SEALED_COLUMNS,
  SEALED_META_KEYS,
  toAccount,
  toActivity,
  toAuditEvent,
  toConnection,
  toConnectionDeletion,
  toCredential,
  toDashboardSession,
  toDashboardUser,
  toLink,
  toMcpServer,
  toMcpUrl,
  toState,
  toTriggerInstance,
  toVerification,
  toWebhookDelivery,
  toWebhookEndpoint,
} from './rows.ts';
import type { Database } from './schema.ts';
import type {
  Account,
  AccountPatch,
  AccountQuery,
  AccountStatus,
  AccountVerification,
  ActivityRecord,
  ApiCredential,
  AuditEvent,
  AuditQuery,
  Connection,
  ConnectionDeletion,
  ConnectionPatch,
  DashboardSession,
  DashboardUser,
  McpServerConfig,
  McpServerPatch,
  McpUrl,
  NewAuditEvent,
  OAuthLink,
  OAuthState,
  SealedCell,
  Store,
  StoreTransaction,
  ThrottleState,
  TriggerInstance,
  TriggerInstancePatch,
  TriggerInstanceQuery,
  WebhookAttemptResult,
  WebhookEndpoint,
  WebhookEvent,
} from './types.ts';

export type Db = Kysely<Database>;

/** A unique constraint refused the write (SQLite's SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). */
function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/**
 * What differs between SQLite and PostgreSQL, and only that: opening and closing, running a compiled query
 * (SQLite's is synchronous), the account lock, the integrity check, running a migration script, serialising
 * migrators, and the two batched writes (a statement per row costs next to nothing on SQLite and a round trip
 * each on PostgreSQL). README.md beside this file says why each one differs.
 */
export interface Backend {
  readonly kind: 'sqlite' | 'postgres';
  readonly db: Db;
  /** Runs a compiled query on `db` (the store's root, or a transaction). */
  run<R>(db: Db, query: CompiledQuery<R>): Promise<QueryResult<R>>;
  /** Runs `fn` while no other process migrates the same database; creates the namespace if needed. */
  migrationScope(fn: (db: Db) => Promise<void>): Promise<void>;
  /** Runs a migration file (several statements) inside the transaction `tx`. */
  execScript(tx: Db, script: string): Promise<void>;
  withAccountLock<T>(id: string, fn: () => Promise<T>, waitMs: number): Promise<T>;
  integrityCheck(): Promise<string[]>;
  /** Sets each account's last use, unless a later one is stored; all in one transaction. */
  touchAccounts(db: Db, lastUsed: ReadonlyMap<string, number>): Promise<void>;
  /** Inserts the rows in one transaction. */
  insertActivity(db: Db, rows: readonly ActivityRow[]): Promise<void>;
  /** Changes to the cached tables (see changes.ts); the store emits its own writes, the backend those of others. */
  readonly changes: ChangeFeed;
  /** Starts following other processes' changes. */
  watchChanges(): Promise<void>;
  /** See `Store.startUpkeep`; absent where the database needs none. */
  startUpkeep?(onProblem: (message: string, e: Error) => void): void;
  close(): Promise<void>;
}

/** Runs `fn` in a transaction, or in the current one when `db` is already bound to one. */
export function inTransaction<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}

/** The hot reads, built and compiled once per store (see prepared.ts). */
function hotQueries(db: Db) {
  return {
    accountById: prepare((a: { id: string }) => db.selectFrom('connected_accounts').selectAll().where('id', '=', a.id)),
    accountByIdentifier: prepare((a: { connectionId: string; identifier: string }) =>
      db
        .selectFrom('connected_accounts')
        .selectAll()
        .where('connection_id', '=', a.connectionId)
        .where('identifier', '=', a.identifier),
    ),
    // A connection being deleted is gone for every reader (see startConnectionDeletion).
    connectionById: prepare((a: { id: string }) =>
      db.selectFrom('connections').selectAll().where('id', '=', a.id).where('deleting_since', 'is', null),
    ),
    connectionByName: prepare((a: { name: string }) =>
      db.selectFrom('connections').selectAll().where('name', '=', a.name).where('deleting_since', 'is', null),
    ),
    credentialById: prepare((a: { id: string }) => db.selectFrom('api_credentials').selectAll().where('id', '=', a.id)),
    credentialByClientId: prepare((a: { clientId: string }) =>
      db.selectFrom('api_credentials').selectAll().where('client_id', '=', a.clientId),
    ),
  };
}
type HotQueries = ReturnType<typeof hotQueries>;

export type ActivityRow = Database['activity'];

const activityRow = (r: ActivityRecord): ActivityRow => ({
  id: r.id,
  kind: r.kind,
  name: r.name,
  connection_name: r.connectionName,
  account_id: r.accountId,
  identifier: r.identifier,
  status: r.status,
  error_code: r.errorCode,
  latency_ms: r.latencyMs,
  created_at: r.createdAt,
});

/**
 * The status columns of an account: PENDING_VERIFICATION is stored as PENDING_AUTH with the time the wait began
 * (migration 004), so nothing that reads the status column alone takes such an account for usable.
 */
const statusColumns = (status: AccountStatus, at: number) =>
  status === 'PENDING_VERIFICATION'
    ? { status: 'PENDING_AUTH', verification_pending_since: at }
    : { status, verification_pending_since: null };

const accountRow = (a: Account) => ({
  id: a.id,
  connection_id: a.connectionId,
  identifier: a.identifier,
  ...statusColumns(a.status, a.createdAt),
  fields: JSON.stringify(a.fields),
  secrets_sealed: a.secretsSealed,
  token_expires_at: a.tokenExpiresAt,
  last_used_at: a.lastUsedAt,
  last_error: a.lastError,
  version: a.version,
  lock_until: null,
  lock_owner: null,
  created_at: a.createdAt,
  updated_at: a.updatedAt,
});
/** Accounts per INSERT statement: 15 values each. */
const ACCOUNTS_PER_INSERT = 500;

/** Outbox events per INSERT statement: 4 values each, far below either database's limit on parameters. */
const EVENTS_PER_INSERT = 500;
/** Webhook deliveries per INSERT statement: 14 values each. */
const DELIVERIES_PER_INSERT = 1_000;

const triggerRow = (t: TriggerInstance) => ({
  id: t.id,
  trigger_name: t.trigger,
  connector: t.connector,
  kind: t.kind,
  connection_id: t.connectionId,
  account_id: t.accountId,
  config: JSON.stringify(t.config),
  status: t.status,
  interval_ms: t.intervalMs,
  state: JSON.stringify(t.state),
  secret_sealed: t.secretSealed,
  next_run_at: t.nextRunAt,
  lease_owner: t.leaseOwner,
  lease_until: t.leaseUntil,
  failures: t.failures,
  events_sent: t.eventsSent,
  last_event_at: t.lastEventAt,
  last_poll_at: t.lastPollAt,
  last_error: t.lastError,
  last_error_at: t.lastErrorAt,
  created_at: t.createdAt,
  updated_at: t.updatedAt,
});

/** Sealed values live in these (table, column) pairs only; replaceSealed refuses any other. */
const SEALED_ID_COLUMN = new Map<string, string>([
  ...SEALED_COLUMNS.map(([table, id, column]) => [`${table}.${column}`, id] as const),
  ['meta.value', 'key'],
]);

/**
 * The one store: every query written once with the Kysely query builder, compiled for SQLite or PostgreSQL by
 * the backend's dialect. An instance bound to a transaction (see `transaction`) runs the same methods inside it.
 */
export class SqlStore implements Store {
  readonly kind: 'sqlite' | 'postgres';
  private readonly db: Db;
  private readonly q: HotQueries;
  /** In a transaction: the changes it made, announced once it has committed. */
  private readonly pending: Array<[ChangedTable, string]> | undefined;

  constructor(
    private readonly backend: Backend,
    bound?: { db: Db; queries: HotQueries; pending: Array<[ChangedTable, string]> },
  ) {
    this.kind = backend.kind;
    this.db = bound?.db ?? backend.db;
    this.q = bound?.queries ?? hotQueries(backend.db);
    this.pending = bound?.pending;
  }

  get changes(): ChangeFeed {
    return this.backend.changes;
  }

  watchChanges(): Promise<void> {
    return this.backend.watchChanges();
  }

  startUpkeep(onProblem: (message: string, e: Error) => void): void {
    this.backend.startUpkeep?.(onProblem);
  }

  /**
   * Announces a write to a cached table to this process's caches at once (other processes learn of it from the
   * database: NOTIFY, or SQLite's data_version). Called after the write; in a transaction, after the commit, so
   * that no cache reloads the row before the change is visible.
   */
  private changed(table: ChangedTable, id: string): void {
    if (this.pending) this.pending.push([table, id]);
    else this.backend.changes.emit({ table, id });
  }

  /**
   * Runs `fn` in one transaction: every write made through `tx` commits together, or none does (a throw, or
   * the process dying, rolls them all back). Use only `tx` inside `fn`: on SQLite the store has one
   * connection, which the transaction holds until it ends.
   */
  async transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    if (this.pending) return fn(this);
    const pending: Array<[ChangedTable, string]> = [];
    try {
      return await inTransaction(this.db, (db) => fn(new SqlStore(this.backend, { db, queries: this.q, pending })));
    } finally {
      // Announced even after a rollback: a change that did not happen only costs a cache miss.
      for (const [table, id] of pending) this.backend.changes.emit({ table, id });
    }
  }

  migrate(): Promise<void> {
    return migrate(this.backend);
  }

  close(): Promise<void> {
    return this.backend.close();
  }

  async isEmpty(): Promise<boolean> {
    // Whether a row exists, not how many: a count would read every account at each start.
    const r = await this.db
      .selectNoFrom((eb) => [
        eb.exists(eb.selectFrom('connections').select('id').limit(1)).as('connections'),
        eb.exists(eb.selectFrom('connected_accounts').select('id').limit(1)).as('accounts'),
        eb.exists(eb.selectFrom('meta').select('key').where('key', '=', 'service_token_key')).as('keys'),
      ])
      .executeTakeFirstOrThrow();
    return !Number(r.connections) && !Number(r.accounts) && !Number(r.keys);
  }

  integrityCheck(): Promise<string[]> {
    return this.backend.integrityCheck();
  }

  async getMeta(key: string) {
    const r = await this.db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst();
    return r?.value;
  }
  async initMeta(key: string, value: string) {
    await this.db
      .insertInto('meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    this.changed('meta', key);
    return (await this.getMeta(key))!;
  }
  async setMeta(key: string, value: string) {
    await this.db
      .insertInto('meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })))
      .execute();
    this.changed('meta', key);
  }

  async createApiCredential(c: ApiCredential) {
    await this.db
      .insertInto('api_credentials')
      .values({
        id: c.id,
        client_id: c.clientId,
        secret_hash: c.secretHash,
        name: c.name,
        created_at: c.createdAt,
        revoked_at: c.revokedAt,
        last_used_at: c.lastUsedAt,
        scopes: c.scopes === '*' ? '*' : c.scopes.join(' '),
        connection_names: c.connectionNames ? JSON.stringify(c.connectionNames) : null,
      })
      .execute();
    this.changed('api_credentials', c.id);
  }
  async getApiCredentialByClientId(clientId: string) {
    const [r] = (await this.backend.run(this.db, this.q.credentialByClientId.bind({ clientId }))).rows;
    return r ? toCredential(r) : undefined;
  }
  async getApiCredential(id: string) {
    const [r] = (await this.backend.run(this.db, this.q.credentialById.bind({ id }))).rows;
    return r ? toCredential(r) : undefined;
  }
  async listApiCredentials() {
    return (await this.db.selectFrom('api_credentials').selectAll().orderBy('created_at').orderBy('id').execute()).map(
      toCredential,
    );
  }
  async revokeApiCredential(id: string, at: number) {
    const r = await this.db
      .updateTable('api_credentials')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    this.changed('api_credentials', id);
    return r.numUpdatedRows === 1n;
  }
  async countApiCredentials() {
    const r = await this.db
      .selectFrom('api_credentials')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }
  async touchApiCredential(id: string, at: number) {
    await this.db.updateTable('api_credentials').set({ last_used_at: at }).where('id', '=', id).execute();
  }

  async appendAuditEvent(e: NewAuditEvent, hashOf: (e: Omit<AuditEvent, 'hash'>) => string) {
    return inTransaction(this.db, async (db) => {
      // The head row, updated first: on PostgreSQL the update takes its row lock, so a concurrent append (another
      // instance) waits here until this one commits, then reads the head this one left. SQLite has one writer.
      await db
        .updateTable('audit_head')
        .set((eb) => ({ seq: eb('seq', '+', 1) }))
        .where('id', '=', 1)
        .execute();
      const head = await db
        .selectFrom('audit_head')
        .select(['seq', 'hash'])
        .where('id', '=', 1)
        .executeTakeFirstOrThrow();
      const unhashed = { ...e, seq: Number(head.seq), prevHash: head.hash };
      const event: AuditEvent = { ...unhashed, hash: hashOf(unhashed) };
      await db
        .insertInto('audit_events')
        .values({
          seq: event.seq,
          id: event.id,
          at: event.at,
          actor_type: event.actorType,
          actor_id: event.actorId,
          action: event.action,
          target_type: event.targetType,
          target_id: event.targetId,
          source_address: event.sourceAddress,
          request_id: event.requestId,
          changes: JSON.stringify(event.changes),
          prev_hash: event.prevHash,
          hash: event.hash,
        })
        .execute();
      await db.updateTable('audit_head').set({ hash: event.hash }).where('id', '=', 1).execute();
      return event;
    });
  }
  async listAuditEvents(q: AuditQuery) {
    let query = this.db.selectFrom('audit_events').selectAll();
    if (q.actorId !== undefined) query = query.where('actor_id', '=', q.actorId);
    if (q.action !== undefined) query = query.where('action', '=', q.action);
    if (q.targetId !== undefined) query = query.where('target_id', '=', q.targetId);
    if (q.from !== undefined) query = query.where('at', '>=', q.from);
    if (q.to !== undefined) query = query.where('at', '<', q.to);
    if (q.cursor !== undefined) query = query.where('seq', q.order === 'desc' ? '<' : '>', q.cursor);
    const rows = await query.orderBy('seq', q.order).limit(q.limit).execute();
    return rows.map(toAuditEvent);
  }
  async auditHead() {
    const r = await this.db.selectFrom('audit_head').selectAll().where('id', '=', 1).executeTakeFirstOrThrow();
    return { seq: Number(r.seq), hash: r.hash, anchorSeq: Number(r.anchor_seq), anchorHash: r.anchor_hash };
  }
  async pruneAuditEvents(before: number, batch: number) {
    return inTransaction(this.db, async (db) => {
      // The head row locked first, as an append does: the anchor and the entries move together.
      await db
        .updateTable('audit_head')
        .set((eb) => ({ seq: eb.ref('seq') }))
        .where('id', '=', 1)
        .execute();
      const oldest = await db
        .selectFrom('audit_events')
        .select(['seq', 'hash'])
        .where('at', '<', before)
        .orderBy('seq')
        .limit(batch)
        .execute();
      // Only a run from the start of the chain: an older entry written later (a clock step) waits for its turn.
      const first = await db.selectFrom('audit_events').select('seq').orderBy('seq').limit(1).executeTakeFirst();
      if (!oldest.length || Number(first!.seq) !== Number(oldest[0]!.seq)) return 0;
      let last = oldest[0]!;
      for (const r of oldest) {
        if (Number(r.seq) !== Number(last.seq) && Number(r.seq) !== Number(last.seq) + 1) break;
        last = r;
      }
      const r = await db.deleteFrom('audit_events').where('seq', '<=', last.seq).executeTakeFirst();
      await db
        .updateTable('audit_head')
        .set({ anchor_seq: last.seq, anchor_hash: last.hash })
        .where('id', '=', 1)
        .execute();
      return Number(r.numDeletedRows);
    });
  }

  async createConnection(c: Connection) {
    await this.db
      .insertInto('connections')
      .values({
        id: c.id,
        name: c.name,
        connector: c.connector,
        auth_kind: c.authKind,
        client_id: c.clientId,
        client_secret_sealed: c.clientSecretSealed,
        scopes: JSON.stringify(c.scopes),
        api_base_url: c.apiBaseUrl,
        api_hosts: JSON.stringify(c.apiHosts),
        oauth: JSON.stringify(c.oauth),
        registration_sealed: c.registrationSealed,
        created_at: c.createdAt,
        updated_at: c.updatedAt,
      })
      .execute();
    this.changed('connections', c.id);
  }
  async getConnectionByName(name: string) {
    const [r] = (await this.backend.run(this.db, this.q.connectionByName.bind({ name }))).rows;
    return r ? toConnection(r) : undefined;
  }
  async getConnection(id: string) {
    const [r] = (await this.backend.run(this.db, this.q.connectionById.bind({ id }))).rows;
    return r ? toConnection(r) : undefined;
  }
  async listConnections() {
    const rows = await this.db
      .selectFrom('connections')
      .selectAll()
      .where('deleting_since', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toConnection);
  }
  async listConnectionsWithCounts() {
    const list = await this.listConnections();
    const counts = await this.accountCounts();
    return list.map((c) => ({ ...c, accountCount: counts.get(c.id) ?? 0 }));
  }
  /**
   * Accounts per connection, read from the counters the triggers keep (migrations 009b and 014): a few rows per
   * connection, whatever the population.
   */
  private async accountCounts(connectionId?: string): Promise<Map<string, number>> {
    await this.foldAccountCounts();
    const rows = await this.db
      .selectFrom('account_counts')
      .select((eb) => ['connection_id', eb.fn.sum<number>('n').as('n')])
      .$if(connectionId !== undefined, (q) => q.where('connection_id', '=', connectionId!))
      .groupBy('connection_id')
      .execute();
    return new Map(rows.map((r) => [r.connection_id, Number(r.n)]));
  }

  /**
   * PostgreSQL: folds the count deltas that writes append (migration 014) into account_counts, and drops the rows
   * of connections that are gone. Two statements over the deltas since the last fold and the few counter rows;
   * `DELETE … RETURNING` hands each delta to one folder only. SQLite's triggers update the counters in place.
   */
  private async foldAccountCounts(): Promise<void> {
    if (this.kind !== 'postgres') return;
    await sql`WITH moved AS (DELETE FROM account_count_deltas RETURNING connection_id, status, d)
      INSERT INTO account_counts (connection_id, status, n)
        SELECT connection_id, status, sum(d) FROM moved GROUP BY connection_id, status
      ON CONFLICT (connection_id, status) DO UPDATE SET n = account_counts.n + EXCLUDED.n`.execute(this.db);
    await sql`DELETE FROM account_counts c
      WHERE NOT EXISTS (SELECT 1 FROM connections WHERE id = c.connection_id)`.execute(this.db);
  }
  async updateConnection(id: string, patch: ConnectionPatch, at: number) {
    const json = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));
    const r = await this.db
      .updateTable('connections')
      .set({
        client_id: patch.clientId,
        client_secret_sealed: patch.clientSecretSealed,
        scopes: json(patch.scopes),
        api_base_url: patch.apiBaseUrl,
        api_hosts: json(patch.apiHosts),
        oauth: json(patch.oauth),
        registration_sealed: patch.registrationSealed,
        updated_at: at,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    this.changed('connections', id);
    return r ? toConnection(r) : undefined;
  }
  /** Deletes the connection and its accounts at once (tests and tools; the service deletes in the background). */
  async deleteConnection(id: string) {
    const removed = await inTransaction(this.db, async (db) => {
      let lock = db.selectFrom('connections').select('id').where('id', '=', id);
      if (this.kind === 'postgres') lock = lock.forUpdate();
      if (!(await lock.executeTakeFirst())) return undefined;
      const r = await db.deleteFrom('connected_accounts').where('connection_id', '=', id).executeTakeFirst();
      await db.deleteFrom('connections').where('id', '=', id).execute();
      return Number(r.numDeletedRows);
    });
    this.changed('connections', id);
    this.changed('connected_accounts', '*');
    return removed;
  }
  async startConnectionDeletion(d: Pick<ConnectionDeletion, 'id' | 'connectionId' | 'requestedAt'>) {
    const started = await inTransaction(this.db, async (db) => {
      // The row locked first (PostgreSQL): two deletions of one connection cannot both start.
      let lock = db
        .selectFrom('connections')
        .select(['id', 'name', 'connector'])
        .where('id', '=', d.connectionId)
        .where('deleting_since', 'is', null);
      if (this.kind === 'postgres') lock = lock.forUpdate();
      const c = await lock.executeTakeFirst();
      if (!c) return undefined;
      // The name is released at once for a new connection: `~` is in no name a client can give.
      await db
        .updateTable('connections')
        .set({ deleting_since: d.requestedAt, name: `~deleting~${c.id}` })
        .where('id', '=', c.id)
        .execute();
      const row = {
        id: d.id,
        connection_id: c.id,
        connection_name: c.name,
        connector: c.connector,
        status: 'running',
        accounts_deleted: 0,
        requested_at: d.requestedAt,
        updated_at: d.requestedAt,
        finished_at: null,
        lease_owner: null,
        lease_until: null,
      };
      await db.insertInto('connection_deletions').values(row).execute();
      return toConnectionDeletion(row);
    });
    if (started) this.changed('connections', d.connectionId);
    return started;
  }
  async getConnectionDeletion(id: string) {
    const r = await this.db.selectFrom('connection_deletions').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toConnectionDeletion(r) : undefined;
  }
  async runningConnectionDeletions() {
    const rows = await this.db
      .selectFrom('connection_deletions')
      .selectAll()
      .where('status', '=', 'running')
      .orderBy('requested_at')
      .execute();
    return rows.map(toConnectionDeletion);
  }
  async claimConnectionDeletion(
    id: string,
    owner: string,
    now: number,
    until: number,
    ownerGone: (owner: string | null) => boolean,
  ) {
    const current = await this.db
      .selectFrom('connection_deletions')
      .select(['lease_owner', 'lease_until', 'status'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!current || current.status !== 'running') return false;
    const free =
      current.lease_owner === null ||
      current.lease_owner === owner ||
      Number(current.lease_until) < now ||
      ownerGone(current.lease_owner);
    if (!free) return false;
    // Compare-and-set on the holder seen: of two claimers, one wins.
    const r = await this.db
      .updateTable('connection_deletions')
      .set({ lease_owner: owner, lease_until: until })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where((eb) =>
        current.lease_owner === null ? eb('lease_owner', 'is', null) : eb('lease_owner', '=', current.lease_owner),
      )
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async takeAccountsOfConnection(connectionId: string, limit: number) {
    const rows = await this.db
      .deleteFrom('connected_accounts')
      .where('id', 'in', (eb) =>
        eb.selectFrom('connected_accounts').select('id').where('connection_id', '=', connectionId).limit(limit),
      )
      .returningAll()
      .execute();
    for (const r of rows) this.changed('connected_accounts', r.id);
    return rows.map(toAccount);
  }
  async advanceConnectionDeletion(id: string, owner: string, deleted: number, at: number, until: number) {
    const r = await this.db
      .updateTable('connection_deletions')
      .set((eb) => ({ accounts_deleted: eb('accounts_deleted', '+', deleted), updated_at: at, lease_until: until }))
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async finishConnectionDeletion(id: string, owner: string, at: number) {
    const done = await inTransaction(this.db, async (db) => {
      const d = await db
        .selectFrom('connection_deletions')
        .select('connection_id')
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (!d) return false;
      // Locked before the check (PostgreSQL): an account inserted meanwhile waits on its foreign key, then fails.
      let lock = db.selectFrom('connections').select('id').where('id', '=', d.connection_id);
      if (this.kind === 'postgres') lock = lock.forUpdate();
      await lock.executeTakeFirst();
      const left = await db
        .selectFrom('connected_accounts')
        .select('id')
        .where('connection_id', '=', d.connection_id)
        .limit(1)
        .executeTakeFirst();
      if (left) return false;
      await db.deleteFrom('connections').where('id', '=', d.connection_id).execute();
      await db
        .updateTable('connection_deletions')
        .set({ status: 'done', finished_at: at, updated_at: at, lease_owner: null, lease_until: null })
        .where('id', '=', id)
        .execute();
      return d.connection_id;
    });
    if (done) this.changed('connections', done);
    return done !== false;
  }
  async countAccounts(connectionId: string) {
    return (await this.accountCounts(connectionId)).get(connectionId) ?? 0;
  }
  async countMatchingAccounts(q: {
    connectionIds?: readonly string[];
    identifier?: string;
    identifierContains?: string;
  }) {
    if (q.connectionIds?.length === 0) return 0;
    if (q.identifier === undefined && !q.identifierContains) {
      // The per-connection counts (SQLite keeps them in a table; PostgreSQL counts an index).
      const counts = await this.accountCounts(q.connectionIds?.length === 1 ? q.connectionIds[0] : undefined);
      let total = 0;
      for (const [id, n] of counts) if (!q.connectionIds || q.connectionIds.includes(id)) total += n;
      return total;
    }
    let query = this.db.selectFrom('connected_accounts').select((eb) => eb.fn.countAll<number>().as('n'));
    if (q.connectionIds) query = query.where('connection_id', 'in', [...q.connectionIds]);
    if (q.identifier !== undefined) query = query.where('identifier', '=', q.identifier);
    if (q.identifierContains)
      query = query.where(sql<boolean>`identifier LIKE ${`%${escapeLike(q.identifierContains)}%`} ESCAPE '\\'`);
    const row = await query.executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async countAccountsByStatus() {
    await this.foldAccountCounts();
    const rows = await this.db
      .selectFrom('account_counts')
      .select((eb) => ['status', eb.fn.sum<number>('n').as('n')])
      .groupBy('status')
      .having((eb) => eb.fn.sum('n'), '>', 0)
      .execute();
    return rows.map((r) => ({ status: r.status, count: Number(r.n) }));
  }

  async insertAccounts(accounts: readonly Account[]) {
    await inTransaction(this.db, async (db) => {
      for (let i = 0; i < accounts.length; i += ACCOUNTS_PER_INSERT) {
        await db
          .insertInto('connected_accounts')
          .values(accounts.slice(i, i + ACCOUNTS_PER_INSERT).map(accountRow))
          .execute();
      }
    });
    for (const a of accounts) this.changed('connected_accounts', a.id);
  }
  async getOrCreateAccount(a: Account) {
    const inserted = await this.db
      .insertInto('connected_accounts')
      .values(accountRow(a))
      .onConflict((oc) => oc.columns(['connection_id', 'identifier']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) {
      this.changed('connected_accounts', a.id);
      return { account: toAccount(inserted), created: true };
    }
    return { account: (await this.findAccount(a.connectionId, a.identifier))!, created: false };
  }
  async getAccount(id: string) {
    const [r] = (await this.backend.run(this.db, this.q.accountById.bind({ id }))).rows;
    return r ? toAccount(r) : undefined;
  }
  async findAccount(connectionId: string, identifier: string) {
    const [r] = (await this.backend.run(this.db, this.q.accountByIdentifier.bind({ connectionId, identifier }))).rows;
    return r ? toAccount(r) : undefined;
  }
  async listAccounts(q: AccountQuery) {
    const after = decodeCursor(q.after);
    let query = this.db.selectFrom('connected_accounts').selectAll();
    if (q.connectionId) query = query.where('connection_id', '=', q.connectionId);
    if (q.identifier !== undefined) query = query.where('identifier', '=', q.identifier);
    if (q.identifierContains)
      query = query.where(sql<boolean>`identifier LIKE ${`%${escapeLike(q.identifierContains)}%`} ESCAPE '\\'`);
    if (q.status === 'PENDING_VERIFICATION') query = query.where('verification_pending_since', 'is not', null);
    else if (q.status) query = query.where('status', '=', q.status).where('verification_pending_since', 'is', null);
    // A row-value comparison: both databases seek the index to the cursor. The same condition spelt with OR
    // made SQLite walk the connection's index from its start and filter: 430 ms for a page near the end of a
    // million accounts (bench/scale.ts), against 2 ms for the first.
    if (after) query = query.where(sql<boolean>`(created_at, id) > (${after.createdAt}, ${after.id})`);
    return (await query.orderBy('created_at').orderBy('id').limit(q.limit).execute()).map(toAccount);
  }
  async updateAccount(id: string, patch: AccountPatch, at: number, expectedVersion?: number) {
    let query = this.db
      .updateTable('connected_accounts')
      .set((eb) => ({
        version: eb('version', '+', 1),
        updated_at: at,
        ...(patch.status === undefined ? {} : statusColumns(patch.status, at)),
        fields: patch.fields === undefined ? undefined : JSON.stringify(patch.fields),
        secrets_sealed: patch.secretsSealed,
        token_expires_at: patch.tokenExpiresAt,
        last_error: patch.lastError,
        granted_scopes:
          patch.grantedScopes === undefined
            ? undefined
            : patch.grantedScopes === null
              ? null
              : JSON.stringify(patch.grantedScopes),
      }))
      .where('id', '=', id);
    if (expectedVersion !== undefined) query = query.where('version', '=', expectedVersion);
    const r = await query.returningAll().executeTakeFirst();
    if (r) this.changed('connected_accounts', id);
    return r ? toAccount(r) : undefined;
  }
  async deleteAccount(id: string) {
    const r = await inTransaction(this.db, async (db) => {
      // Links and OAuth states name their account without a foreign key since migration 017 (a just-in-time link
      // reserves the id of an account created only when it is completed): they go with it, as the cascade did.
      await db.deleteFrom('oauth_links').where('account_id', '=', id).execute();
      await db.deleteFrom('oauth_states').where('account_id', '=', id).execute();
      return db.deleteFrom('connected_accounts').where('id', '=', id).executeTakeFirst();
    });
    this.changed('connected_accounts', id);
    return r.numDeletedRows === 1n;
  }
  async touchAccounts(lastUsed: ReadonlyMap<string, number>) {
    if (!lastUsed.size) return;
    await this.backend.touchAccounts(this.db, lastUsed);
  }
  withAccountLock<T>(id: string, fn: () => Promise<T>, waitMs = 30_000): Promise<T> {
    return this.backend.withAccountLock(id, fn, waitMs);
  }

  async createOAuthLink(l: OAuthLink) {
    await inTransaction(this.db, async (tx) => {
      await tx
        .updateTable('oauth_links')
        .set({ used_at: l.openedAt ?? Date.now() })
        .where('account_id', '=', l.accountId)
        .where('opened_at', 'is not', null)
        .where('used_at', 'is', null)
        .execute();
      await tx
        .insertInto('oauth_links')
        .values({
          token_hash: l.tokenHash,
          connection_id: l.connectionId,
          account_id: l.accountId,
          redirect_url: l.redirectUrl,
          expires_at: l.expiresAt,
          user_verify_url: l.userVerifyUrl ?? null,
          opened_at: l.openedAt ?? null,
          used_at: l.usedAt ?? null,
          scopes: l.scopes ? JSON.stringify(l.scopes) : null,
          token_sealed: l.tokenSealed ?? null,
          identifier: l.identifier ?? null,
        })
        .execute();
    });
  }
  async findReusableOAuthLink(q: {
    accountId?: string;
    connectionId?: string;
    identifier?: string;
    scopes: string[] | null;
    redirectUrl: string | null;
    userVerifyUrl: string | null;
    minExpiresAt: number;
  }) {
    let query = this.db
      .selectFrom('oauth_links')
      .selectAll()
      .where((eb) =>
        q.accountId !== undefined
          ? eb('account_id', '=', q.accountId)
          : eb.and([eb('connection_id', '=', q.connectionId ?? ''), eb('identifier', '=', q.identifier ?? '')]),
      )
      .where('used_at', 'is', null)
      .where('token_sealed', 'is not', null)
      .where('expires_at', '>', q.minExpiresAt)
      .where('scopes', q.scopes ? '=' : 'is', q.scopes ? JSON.stringify(q.scopes) : null)
      .where('redirect_url', q.redirectUrl === null ? 'is' : '=', q.redirectUrl)
      .where('user_verify_url', q.userVerifyUrl === null ? 'is' : '=', q.userVerifyUrl);
    query = query.orderBy('expires_at', 'desc').limit(1);
    const r = await query.executeTakeFirst();
    return r ? toLink(r) : undefined;
  }
  async markOAuthLinkOpened(tokenHash: string, at: number) {
    await this.db
      .updateTable('oauth_links')
      .set({ opened_at: at })
      .where('token_hash', '=', tokenHash)
      .where('opened_at', 'is', null)
      .execute();
  }
  async consumeOAuthLink(tokenHash: string, now: number) {
    const r = await this.db
      .updateTable('oauth_links')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return r ? toLink(r) : undefined;
  }
  async getOAuthLink(tokenHash: string, now: number) {
    const r = await this.db
      .selectFrom('oauth_links')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return r ? toLink(r) : undefined;
  }
  async createOAuthState(s: OAuthState) {
    await this.db
      .insertInto('oauth_states')
      .values({
        state_hash: s.stateHash,
        connection_id: s.connectionId,
        account_id: s.accountId,
        verifier_sealed: s.verifierSealed,
        redirect_url: s.redirectUrl,
        expires_at: s.expiresAt,
        used_at: s.usedAt,
        link_hash: s.linkHash ?? null,
      })
      .execute();
  }
  async consumeOAuthState(stateHash: string, now: number) {
    const r = await this.db
      .updateTable('oauth_states')
      .set({ used_at: now })
      .where('state_hash', '=', stateHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return r ? toState(r) : undefined;
  }
  async deleteExpiredOAuth(now: number, limit: number) {
    let deleted = 0;
    const expired = [
      ['oauth_states', 'state_hash', now - 86_400_000],
      ['oauth_links', 'token_hash', now],
      ['account_verifications', 'request_hash', now],
    ] as const;
    for (const [table, key, before] of expired) {
      // A batch found by the expiry index, so that a sweep never deletes an unbounded number of rows in one go.
      const r = await this.db
        .deleteFrom(table)
        .where(key, 'in', (eb) => eb.selectFrom(table).select(key).where('expires_at', '<', before).limit(limit))
        .executeTakeFirst();
      deleted += Number(r.numDeletedRows);
    }
    return deleted;
  }

  async createAccountVerification(v: AccountVerification) {
    await this.db
      .insertInto('account_verifications')
      .values({
        request_hash: v.requestHash,
        account_id: v.accountId,
        expires_at: v.expiresAt,
        used_at: v.usedAt,
        secrets_sealed: v.secretsSealed ?? null,
        token_expires_at: v.tokenExpiresAt ?? null,
        fields: v.fields ? JSON.stringify(v.fields) : null,
      })
      .execute();
  }
  async getAccountVerification(requestHash: string, now: number) {
    const r = await this.db
      .selectFrom('account_verifications')
      .selectAll()
      .where('request_hash', '=', requestHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return r ? toVerification(r) : undefined;
  }
  async consumeAccountVerification(requestHash: string, now: number) {
    const r = await this.db
      .updateTable('account_verifications')
      .set({ used_at: now })
      .where('request_hash', '=', requestHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return r ? toVerification(r) : undefined;
  }

  async listExpiredVerificationWaits(since: number, now: number, limit: number) {
    const rows = await this.db
      .selectFrom('connected_accounts as a')
      .select('a.id')
      .where('a.verification_pending_since', 'is not', null)
      .where('a.verification_pending_since', '<', since)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('account_verifications as v')
              .select('v.request_hash')
              .whereRef('v.account_id', '=', 'a.id')
              .where('v.used_at', 'is', null)
              .where('v.expires_at', '>', now),
          ),
        ),
      )
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  async recordActivity(records: readonly ActivityRecord[]) {
    if (!records.length) return;
    await this.backend.insertActivity(this.db, records.map(activityRow));
  }
  async listActivity(limit: number, before?: number) {
    let query = this.db.selectFrom('activity').selectAll();
    if (before) query = query.where('created_at', '<', before);
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toActivity);
  }
  async pruneActivity(olderThan: number, limit: number) {
    const r = await this.db
      .deleteFrom('activity')
      .where('id', 'in', (eb) =>
        eb.selectFrom('activity').select('id').where('created_at', '<', olderThan).limit(limit),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async createDashboardUser(u: DashboardUser) {
    const r = await this.db
      .insertInto('dashboard_users')
      .values({
        id: u.id,
        username: u.username,
        password_hash: u.passwordHash,
        created_at: u.createdAt,
        updated_at: u.updatedAt,
      })
      .onConflict((oc) => oc.column('username').doNothing())
      .executeTakeFirst();
    return r.numInsertedOrUpdatedRows === 1n;
  }
  async getDashboardUserByName(username: string) {
    const r = await this.db
      .selectFrom('dashboard_users')
      .selectAll()
      .where('username', '=', username)
      .executeTakeFirst();
    return r ? toDashboardUser(r) : undefined;
  }
  async setDashboardPassword(userId: string, passwordHash: string, at: number) {
    await inTransaction(this.db, async (db) => {
      await db
        .updateTable('dashboard_users')
        .set({ password_hash: passwordHash, updated_at: at })
        .where('id', '=', userId)
        .execute();
      await db.deleteFrom('dashboard_sessions').where('user_id', '=', userId).execute();
    });
  }
  async createDashboardSession(s: DashboardSession) {
    await this.db
      .insertInto('dashboard_sessions')
      .values({ id_hash: s.idHash, user_id: s.userId, created_at: s.createdAt, expires_at: s.expiresAt })
      .execute();
  }
  async getDashboardSession(idHash: string, now: number) {
    const r = await this.db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('dashboard_users as u', 'u.id', 's.user_id')
      .selectAll('s')
      .select('u.username')
      .where('s.id_hash', '=', idHash)
      .where('s.expires_at', '>', now)
      .executeTakeFirst();
    return r ? toDashboardSession(r) : undefined;
  }
  async deleteDashboardSession(idHash: string) {
    const r = await this.db.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash).executeTakeFirst();
    return r.numDeletedRows === 1n;
  }
  async getThrottle(key: string): Promise<ThrottleState | undefined> {
    const r = await this.db.selectFrom('throttles').selectAll().where('key', '=', key).executeTakeFirst();
    return r
      ? {
          count: Number(r.count),
          lastAt: Number(r.last_at),
          blockedUntil: Number(r.blocked_until),
          version: Number(r.version),
        }
      : undefined;
  }
  async compareAndSetThrottle(key: string, expectedVersion: number | undefined, next: ThrottleState | null) {
    if (expectedVersion === undefined) {
      if (next === null) return true;
      const r = await this.db
        .insertInto('throttles')
        .values({
          key,
          count: next.count,
          last_at: next.lastAt,
          blocked_until: next.blockedUntil,
          version: next.version,
        })
        .onConflict((oc) => oc.column('key').doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1;
    }
    if (next === null) {
      const r = await this.db
        .deleteFrom('throttles')
        .where('key', '=', key)
        .where('version', '=', expectedVersion)
        .executeTakeFirst();
      return r.numDeletedRows === 1n;
    }
    const r = await this.db
      .updateTable('throttles')
      .set({ count: next.count, last_at: next.lastAt, blocked_until: next.blockedUntil, version: next.version })
      .where('key', '=', key)
      .where('version', '=', expectedVersion)
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async deleteStaleThrottles(before: number) {
    await this.db.deleteFrom('throttles').where('last_at', '<', before).where('blocked_until', '<', before).execute();
  }
  async deleteExpiredDashboardSessions(now: number) {
    await this.db.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).execute();
  }

  async createMcpServer(m: McpServerConfig) {
    const r = await this.db
      .insertInto('mcp_servers')
      .values({
        id: m.id,
        name: m.name,
        mode: m.mode,
        tools: JSON.stringify(m.tools),
        connections: JSON.stringify(m.connections),
        user_verify_url: m.userVerifyUrl,
        created_at: m.createdAt,
        updated_at: m.updatedAt,
      })
      .onConflict((oc) => oc.column('name').doNothing())
      .executeTakeFirst();
    return r.numInsertedOrUpdatedRows === 1n;
  }
  async getMcpServer(id: string) {
    const r = await this.db.selectFrom('mcp_servers').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toMcpServer(r) : undefined;
  }
  async getMcpServerByName(name: string) {
    const r = await this.db.selectFrom('mcp_servers').selectAll().where('name', '=', name).executeTakeFirst();
    return r ? toMcpServer(r) : undefined;
  }
  async listMcpServers(now: number) {
    const rows = await this.db
      .selectFrom('mcp_servers as s')
      .selectAll('s')
      .select((eb) =>
        eb
          .selectFrom('mcp_urls as u')
          .select(eb.fn.countAll().as('n'))
          .whereRef('u.server_id', '=', 's.id')
          .where('u.revoked_at', 'is', null)
          .where('u.expires_at', '>', now)
          .as('active_urls'),
      )
      .orderBy('s.created_at')
      .orderBy('s.id')
      .execute();
    return rows.map((r) => ({ ...toMcpServer(r), activeUrls: Number(r.active_urls) }));
  }
  async updateMcpServer(id: string, patch: McpServerPatch, at: number) {
    try {
      const r = await this.db
        .updateTable('mcp_servers')
        .set({
          name: patch.name,
          mode: patch.mode,
          tools: patch.tools === undefined ? undefined : JSON.stringify(patch.tools),
          connections: patch.connections === undefined ? undefined : JSON.stringify(patch.connections),
          user_verify_url: patch.userVerifyUrl,
          updated_at: at,
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return r ? toMcpServer(r) : undefined;
    } catch (e) {
      if (isUniqueViolation(e)) return 'name_taken' as const;
      throw e;
    }
  }
  async deleteMcpServer(id: string) {
    return inTransaction(this.db, async (db) => {
      await db.deleteFrom('mcp_urls').where('server_id', '=', id).execute();
      const r = await db.deleteFrom('mcp_servers').where('id', '=', id).executeTakeFirst();
      return r.numDeletedRows === 1n;
    });
  }
  async createMcpUrl(u: McpUrl) {
    await this.db
      .insertInto('mcp_urls')
      .values({
        id: u.id,
        server_id: u.serverId,
        identifier: u.identifier,
        token_hash: u.tokenHash,
        expires_at: u.expiresAt,
        revoked_at: u.revokedAt,
        created_at: u.createdAt,
        last_used_at: u.lastUsedAt,
      })
      .execute();
  }
  async listMcpUrls(serverId: string) {
    const rows = await this.db
      .selectFrom('mcp_urls')
      .selectAll()
      .where('server_id', '=', serverId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    return rows.map(toMcpUrl);
  }
  async findMcpUrl(tokenHash: string) {
    const r = await this.db
      .selectFrom('mcp_urls as u')
      .innerJoin('mcp_servers as s', 's.id', 'u.server_id')
      .selectAll('u')
      .select([
        's.name as s_name',
        's.mode as s_mode',
        's.tools as s_tools',
        's.connections as s_connections',
        's.user_verify_url as s_user_verify_url',
        's.created_at as s_created_at',
        's.updated_at as s_updated_at',
      ])
      .where('u.token_hash', '=', tokenHash)
      .executeTakeFirst();
    if (!r) return undefined;
    return {
      url: toMcpUrl(r),
      server: toMcpServer({
        id: r.server_id,
        name: r.s_name,
        mode: r.s_mode,
        tools: r.s_tools,
        connections: r.s_connections,
        user_verify_url: r.s_user_verify_url,
        created_at: r.s_created_at,
        updated_at: r.s_updated_at,
      }),
    };
  }
  async revokeMcpUrl(serverId: string, urlId: string, at: number) {
    const r = await this.db
      .updateTable('mcp_urls')
      .set({ revoked_at: at })
      .where('id', '=', urlId)
      .where('server_id', '=', serverId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async touchMcpUrl(id: string, at: number) {
    await this.db
      .updateTable('mcp_urls')
      .set({ last_used_at: at })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
      .execute();
  }
  async createWebhookEndpoint(e: WebhookEndpoint) {
    await this.db
      .insertInto('webhook_endpoints')
      .values({
        id: e.id,
        url: e.url,
        events: JSON.stringify(e.events),
        secret_sealed: e.secretSealed,
        created_at: e.createdAt,
        updated_at: e.updatedAt,
      })
      .execute();
  }
  async getWebhookEndpoint(id: string) {
    const r = await this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toWebhookEndpoint(r) : undefined;
  }
  async listWebhookEndpoints() {
    const rows = await this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toWebhookEndpoint);
  }
  async updateWebhookEndpoint(
    id: string,
    patch: { url?: string; events?: string[]; secretSealed?: string },
    at: number,
  ) {
    const r = await this.db
      .updateTable('webhook_endpoints')
      .set({
        url: patch.url,
        events: patch.events === undefined ? undefined : JSON.stringify(patch.events),
        secret_sealed: patch.secretSealed,
        updated_at: at,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return r ? toWebhookEndpoint(r) : undefined;
  }
  async deleteWebhookEndpoint(id: string) {
    const r = await this.db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
    return r.numDeletedRows === 1n;
  }
  async addWebhookEvent(e: WebhookEvent) {
    await this.addWebhookEvents([e]);
  }
  async addWebhookEvents(events: readonly WebhookEvent[]) {
    for (let i = 0; i < events.length; i += EVENTS_PER_INSERT) {
      await this.db
        .insertInto('webhook_outbox')
        .values(
          events.slice(i, i + EVENTS_PER_INSERT).map((e) => ({
            id: e.id,
            type: e.type,
            payload: e.payload,
            created_at: e.createdAt,
            ordering_key: e.orderingKey ?? null,
          })),
        )
        // An event id is its webhook-id: a trigger's item written again (a poll repeated after a crash) is one event.
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    }
  }
  async fanOutWebhookEvents(limit: number, now: number) {
    return inTransaction(this.db, async (db) => {
      let q = db.selectFrom('webhook_outbox').selectAll().orderBy('created_at').orderBy('id').limit(limit);
      if (this.kind === 'postgres') q = q.forUpdate().skipLocked();
      const events = await q.execute();
      if (!events.length) return 0;
      const endpoints = (await db.selectFrom('webhook_endpoints').selectAll().execute()).map(toWebhookEndpoint);
      const rows = events.flatMap((ev) =>
        endpoints
          .filter((ep) => ep.events.includes(ev.type))
          .map((ep) => ({
            id: newId('whd'),
            endpoint_id: ep.id,
            event_id: ev.id,
            event_type: ev.type,
            payload: ev.payload,
            status: 'pending',
            attempts: 0,
            next_attempt_at: now,
            last_status: null,
            last_error: null,
            last_latency_ms: null,
            created_at: Number(ev.created_at),
            updated_at: now,
            delivered_at: null,
            ordering_key: ev.ordering_key ?? null,
          })),
      );
      // In statements of a bounded size: events × endpoints rows of 14 values could pass the databases' limits
      // on parameters per statement (SQLite's 32,766, PostgreSQL's 65,535).
      for (let i = 0; i < rows.length; i += DELIVERIES_PER_INSERT) {
        await db
          .insertInto('webhook_deliveries')
          .values(rows.slice(i, i + DELIVERIES_PER_INSERT))
          .onConflict((oc) => oc.columns(['event_id', 'endpoint_id']).doNothing())
          .execute();
      }
      await db
        .deleteFrom('webhook_outbox')
        .where(
          'id',
          'in',
          events.map((e) => e.id),
        )
        .execute();
      return events.length;
    });
  }
  async claimWebhookDeliveries(now: number, leaseMs: number, limit: number) {
    return inTransaction(this.db, async (db) => {
      let q = db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        // In order per ordering key (a trigger instance): none while an earlier one for the endpoint is pending.
        .where((eb) =>
          eb.or([
            eb('ordering_key', 'is', null),
            eb.not(
              eb.exists(
                eb
                  .selectFrom('webhook_deliveries as e')
                  .select('e.id')
                  .whereRef('e.endpoint_id', '=', 'webhook_deliveries.endpoint_id')
                  .whereRef('e.ordering_key', '=', 'webhook_deliveries.ordering_key')
                  .where('e.status', '=', 'pending')
                  .where((eb2) =>
                    eb2.or([
                      eb2('e.created_at', '<', eb2.ref('webhook_deliveries.created_at')),
                      eb2.and([
                        eb2('e.created_at', '=', eb2.ref('webhook_deliveries.created_at')),
                        eb2('e.event_id', '<', eb2.ref('webhook_deliveries.event_id')),
                      ]),
                    ]),
                  ),
              ),
            ),
          ]),
        )
        .orderBy('next_attempt_at')
        .limit(limit);
      if (this.kind === 'postgres') q = q.forUpdate().skipLocked();
      const ids = (await q.execute()).map((r) => r.id);
      if (!ids.length) return [];
      const rows = await db
        .updateTable('webhook_deliveries')
        .set((eb) => ({ attempts: eb('attempts', '+', 1), next_attempt_at: now + leaseMs, updated_at: now }))
        .where('id', 'in', ids)
        .returningAll()
        .execute();
      return rows.map(toWebhookDelivery);
    });
  }
  async finishWebhookAttempt(id: string, result: WebhookAttemptResult, at: number) {
    await this.db
      .updateTable('webhook_deliveries')
      .set({
        status: result.status,
        next_attempt_at: result.nextAttemptAt,
        last_status: result.lastStatus,
        last_error: result.lastError,
        last_latency_ms: result.lastLatencyMs,
        updated_at: at,
        ...(result.status === 'succeeded' ? { delivered_at: at } : {}),
      })
      .where('id', '=', id)
      .execute();
  }
  async getWebhookDelivery(id: string) {
    const r = await this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toWebhookDelivery(r) : undefined;
  }
  async listWebhookDeliveries(endpointId: string, limit: number, before?: { createdAt: number; id: string }) {
    let q = this.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
    if (before) {
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '<', before.createdAt),
          eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)]),
        ]),
      );
    }
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toWebhookDelivery);
  }
  async redeliverWebhook(id: string, now: number) {
    const r = await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now, updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return r ? toWebhookDelivery(r) : undefined;
  }

  async createTriggerInstance(t: TriggerInstance) {
    await this.db.insertInto('trigger_instances').values(triggerRow(t)).execute();
  }
  async getTriggerInstance(id: string) {
    const r = await this.db.selectFrom('trigger_instances').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toTriggerInstance(r) : undefined;
  }
  async listTriggerInstances(q: TriggerInstanceQuery) {
    const after = decodeCursor(q.after);
    let query = this.db.selectFrom('trigger_instances').selectAll();
    if (q.connectionId) query = query.where('connection_id', '=', q.connectionId);
    if (q.accountId) query = query.where('account_id', '=', q.accountId);
    if (q.trigger) query = query.where('trigger_name', '=', q.trigger);
    if (q.status) query = query.where('status', '=', q.status);
    if (after) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '>', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)]),
        ]),
      );
    }
    return (await query.orderBy('created_at').orderBy('id').limit(q.limit).execute()).map(toTriggerInstance);
  }
  async updateTriggerInstance(id: string, patch: TriggerInstancePatch, at: number, leaseOwner?: string) {
    let q = this.db
      .updateTable('trigger_instances')
      .set((eb) => ({
        config: patch.config === undefined ? undefined : JSON.stringify(patch.config),
        status: patch.status,
        interval_ms: patch.intervalMs,
        state: patch.state === undefined ? undefined : JSON.stringify(patch.state),
        secret_sealed: patch.secretSealed,
        next_run_at: patch.nextRunAt,
        failures: patch.failures,
        last_event_at: patch.lastEventAt,
        last_poll_at: patch.lastPollAt,
        last_error: patch.lastError,
        last_error_at: patch.lastErrorAt,
        ...(patch.eventsSentDelta ? { events_sent: eb('events_sent', '+', patch.eventsSentDelta) } : {}),
        ...(leaseOwner === undefined ? {} : { lease_owner: null, lease_until: null }),
        updated_at: at,
      }))
      .where('id', '=', id);
    if (leaseOwner !== undefined) q = q.where('lease_owner', '=', leaseOwner);
    const r = await q.returningAll().executeTakeFirst();
    return r ? toTriggerInstance(r) : undefined;
  }
  async deleteTriggerInstance(id: string) {
    const r = await this.db.deleteFrom('trigger_instances').where('id', '=', id).executeTakeFirst();
    return r.numDeletedRows === 1n;
  }
  async claimDueTriggerInstances(
    now: number,
    owner: string,
    until: number,
    limit: number,
    skip: readonly string[] = [],
  ) {
    return inTransaction(this.db, async (db) => {
      let q = db
        .selectFrom('trigger_instances')
        .select('id')
        .where('next_run_at', '<=', now)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
        .orderBy('next_run_at')
        .limit(limit);
      if (skip.length) q = q.where('connector', 'not in', skip);
      if (this.kind === 'postgres') q = q.forUpdate().skipLocked();
      const ids = (await q.execute()).map((r) => r.id);
      if (!ids.length) return [];
      const rows = await db
        .updateTable('trigger_instances')
        .set({ lease_owner: owner, lease_until: until })
        .where('id', 'in', ids)
        .returningAll()
        .execute();
      return rows.map(toTriggerInstance).sort((a, b) => (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0));
    });
  }
  async nextTriggerDue() {
    const r = await this.db
      .selectFrom('trigger_instances')
      .select('next_run_at')
      .where('next_run_at', 'is not', null)
      .orderBy('next_run_at')
      .limit(1)
      .executeTakeFirst();
    return r ? Number(r.next_run_at) : null;
  }

  async listSealed(after: SealedCell | undefined, limit: number): Promise<SealedCell[]> {
    const out: SealedCell[] = [];
    const sources = [
      ...SEALED_COLUMNS.map(([table, idCol, col]) => ({ table, idCol, col })),
      { table: 'meta' as const, idCol: 'key', col: 'value' },
    ];
    let i = after ? sources.findIndex((x) => x.table === after.table && x.col === after.column) : 0;
    if (i < 0) throw new Error(`${after!.table}.${after!.column} does not hold sealed values`);
    let afterId = after?.id;
    for (; i < sources.length && out.length < limit; i++, afterId = undefined) {
      const { table, idCol, col } = sources[i]!;
      // Keyset pages on the primary key: each page is one index range, whatever the table holds.
      const { rows } = await sql<{ id: string; value: string }>`
        SELECT ${sql.ref(idCol)} AS id, ${sql.ref(col)} AS value FROM ${sql.table(table)}
        WHERE ${sql.ref(col)} IS NOT NULL
          ${afterId === undefined ? sql`` : sql`AND ${sql.ref(idCol)} > ${afterId}`}
          ${table === 'meta' ? sql`AND ${sql.ref(idCol)} IN (${sql.join(SEALED_META_KEYS)})` : sql``}
        ORDER BY ${sql.ref(idCol)} LIMIT ${limit - out.length}
      `.execute(this.db);
      for (const r of rows) out.push({ table, column: col, id: r.id, value: r.value });
    }
    return out;
  }
  async replaceSealed(cell: SealedCell, previous: string) {
    const idCol = SEALED_ID_COLUMN.get(`${cell.table}.${cell.column}`);
    if (!idCol) throw new Error(`${cell.table}.${cell.column} does not hold sealed values`);
    const r = await sql`
      UPDATE ${sql.table(cell.table)} SET ${sql.ref(cell.column)} = ${cell.value}
      WHERE ${sql.ref(idCol)} = ${cell.id} AND ${sql.ref(cell.column)} = ${previous}
    `.execute(this.db);
    if (
      r.numAffectedRows === 1n &&
      cell.table !== 'oauth_states' &&
      cell.table !== 'oauth_links' &&
      cell.table !== 'webhook_endpoints' &&
      cell.table !== 'trigger_instances' &&
      cell.table !== 'account_verifications'
    ) {
      this.changed(cell.table, cell.id);
    }
    return r.numAffectedRows === 1n;
  }
}
