import {
  Kysely,
  PostgresDialect,
  sql,
  type Compilable,
  type CompiledQuery,
  type QueryResult,
  type RawBuilder,
} from 'kysely';
import { createRequire } from 'node:module';
import type pgTypes from 'pg';
import type * as pg from 'pg';
import type { Database } from './schema.ts';
import { prepare } from './prepared.ts';
import { SqlStore, type ActivityRow, type Backend, type Db } from './sql-store.ts';
import { LockTimeout } from './types.ts';
import { ChangeFeed, EVERYTHING } from './changes.ts';

/** The notification channel of a schema's changes (migration 007 notifies on it): names are at most 63 bytes. */
export const changeChannel = (schema: string) => `acs_${schema}`.slice(0, 63);

/**
 * Follows the changes other processes make, on a connection of its own: LISTEN on the schema's channel, fed by
 * the triggers of migration 007 (`table:id` for every insert, update or delete of a cached table, sent when the
 * writing transaction commits). While that connection is down, the feed is not live (caches serve nothing) and it
 * reconnects every second; once back, it drops every cache, for the changes it could not hear meanwhile.
 */
class ChangeListener {
  private client: pg.Client | undefined;
  private channel = '';
  private stopped = false;
  private syncs = new Map<string, () => void>();
  private syncCount = 0;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly feed: ChangeFeed,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new (loadPg().Client)(this.config);
    client.on('error', () => {}); // followed by 'end', handled below
    await client.connect();
    try {
      const { rows } = await client.query<{ schema: string }>('SELECT current_schema() AS schema');
      this.channel = changeChannel(rows[0]!.schema);
      client.on('notification', (n) => {
        if (n.channel !== this.channel || n.payload === undefined) return;
        const sync = this.syncs.get(n.payload);
        if (sync) return sync();
        this.feed.emit(ChangeFeed.parse(n.payload));
      });
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    } catch (e) {
      await client.end().catch(() => {});
      throw e;
    }
    if (this.stopped) return void (await client.end().catch(() => {}));
    client.once('end', () => this.lost(client));
    this.client = client;
    this.feed.emit(EVERYTHING);
    this.feed.live = true;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.feed.live = false;
    this.feed.emit(EVERYTHING);
    for (const resolve of this.syncs.values()) resolve();
    this.syncs.clear();
    if (!this.stopped) this.retry();
  }

  private retry(): void {
    setTimeout(() => {
      if (this.stopped) return;
      this.connect().catch(() => this.retry());
    }, 1_000).unref();
  }

  /** A notification of our own: delivered after those of every transaction that committed before it was sent. */
  async sync(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const token = `sync:${process.pid}:${++this.syncCount}`;
    const heard = new Promise<void>((resolve) =>
      this.syncs.set(token, () => {
        this.syncs.delete(token);
        resolve();
      }),
    );
    await client.query('SELECT pg_notify($1, $2)', [this.channel, token]);
    await heard;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.feed.live = false;
    const client = this.client;
    this.client = undefined;
    for (const resolve of this.syncs.values()) resolve();
    await client?.end().catch(() => {});
  }
}

type Pg = typeof pgTypes;
/**
 * The PostgreSQL driver, loaded when a PostgreSQL store is opened: a service on SQLite never pays for it (about
 * a quarter of the start-up's module loading, and its memory).
 */
let driver: Pg | undefined;
const loadPg = (): Pg => (driver ??= createRequire(import.meta.url)('pg') as Pg);

/** Serialises migrators of one database (any schema): held for the whole run, on one connection. */
const MIGRATION_LOCK = 424242;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// BIGINT columns hold epoch milliseconds and versions, well within Number's exact range.
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20
      ? (v: string) => Number(v)
      : (loadPg().types.getTypeParser(oid, format as never) as (
          v: string,
        ) => unknown)) as typeof pgTypes.types.getTypeParser,
};

/**
 * The batch writes: one statement each, whatever the batch size, with one array parameter per column (so no
 * batch reaches the 65,535 parameters a statement may carry), compiled once.
 */
function batchQueries(db: Db) {
  const compilable = <R>(raw: RawBuilder<R>): Compilable<R> => ({ compile: () => raw.compile(db) });
  return {
    touch: prepare((a: { ids: string[]; ats: number[] }) =>
      compilable(sql`
        UPDATE connected_accounts a SET last_used_at = u.at FROM unnest(${a.ids}::text[], ${a.ats}::bigint[]) AS u(id, at)
        WHERE a.id = u.id AND (a.last_used_at IS NULL OR a.last_used_at < u.at)
      `),
    ),
    insertActivity: prepare((c: { [K in keyof ActivityRow]: Array<ActivityRow[K]> }) =>
      compilable(sql`
        INSERT INTO activity (id, kind, name, connection_name, account_id, identifier, status, error_code, latency_ms, created_at)
        SELECT * FROM unnest(${c.id}::text[], ${c.kind}::text[], ${c.name}::text[], ${c.connection_name}::text[],
          ${c.account_id}::text[], ${c.identifier}::text[], ${c.status}::integer[], ${c.error_code}::text[],
          ${c.latency_ms}::integer[], ${c.created_at}::bigint[])
      `),
    ),
  };
}

class PostgresBackend implements Backend {
  readonly kind = 'postgres' as const;
  readonly db: Db;
  private readonly q: ReturnType<typeof batchQueries>;

  private readonly listener: ChangeListener;
  readonly changes: ChangeFeed;
  /**
   * The connections that hold accounts' advisory locks (a token refresh each), apart from the pool the locked work
   * queries through. With one pool, as many refreshes at once as the pool has connections each held one for its
   * lock and waited for a second one that never came: the service stopped for good (found by bench/scale.ts,
   * expired accounts with 32 clients). Made on first use, as large as the main pool.
   */
  private lockPool: pg.Pool | undefined;

  constructor(
    readonly pool: pg.Pool,
    private readonly schema: string | undefined,
    private readonly clientConfig: pg.ClientConfig,
  ) {
    this.db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    this.q = batchQueries(this.db);
    this.changes = new ChangeFeed({ sync: () => this.listener.sync() });
    this.listener = new ChangeListener(clientConfig, this.changes);
  }

  watchChanges(): Promise<void> {
    return this.listener.start();
  }

  /** Outside a transaction, straight to the pool (which lends a connection per statement, as Kysely's driver does). */
  async run<R>(db: Db, query: CompiledQuery<R>): Promise<QueryResult<R>> {
    if (db !== this.db) return db.executeQuery(query);
    const r = await this.pool.query(query.sql, query.parameters as unknown[]);
    const counted = r.command === 'INSERT' || r.command === 'UPDATE' || r.command === 'DELETE';
    return { rows: r.rows as R[], numAffectedRows: counted ? BigInt(r.rowCount ?? 0) : undefined };
  }

  async migrationScope(fn: (db: Db) => Promise<void>) {
    await this.db.connection().execute(async (conn) => {
      await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`.execute(conn);
      try {
        if (this.schema) await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(this.schema)}`.execute(conn);
        await fn(conn);
      } finally {
        await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.execute(conn).catch(() => {});
      }
    });
  }

  async execScript(tx: Db, script: string) {
    // Without parameters, pg sends the text as one simple query, which may hold several statements.
    await sql.raw(script).execute(tx);
  }

  async withAccountLock<T>(id: string, fn: () => Promise<T>, waitMs: number): Promise<T> {
    // A session-level advisory lock on a connection of the lock pool: released explicitly, or by the server if this
    // process dies, so a crashed refresher never leaves the account locked. `fn` queries through the main pool.
    const deadline = Date.now() + waitMs;
    const client = await this.lockConnection(id, waitMs);
    /** Set when the connection itself failed: it is closed rather than reused (which also frees the lock). */
    let broken: Error | undefined;
    const query = (text: string) =>
      client.query<{ ok: boolean }>(text, [id]).catch((e: Error) => {
        broken = e;
        throw e;
      });
    try {
      for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
        const { rows } = await query('SELECT pg_try_advisory_lock(hashtextextended($1, 7)) AS ok');
        if (rows[0]!.ok) break;
        if (Date.now() > deadline) throw new LockTimeout(id);
        await sleep(delay);
      }
      try {
        return await fn();
      } finally {
        await query('SELECT pg_advisory_unlock(hashtextextended($1, 7))').catch(() => {});
      }
    } finally {
      client.release(broken);
    }
  }

  /** A connection of the lock pool, waited for at most `waitMs` (then LockTimeout, as a held lock would give). */
  private async lockConnection(id: string, waitMs: number): Promise<pg.PoolClient> {
    this.lockPool ??= new (loadPg().Pool)({ ...this.clientConfig, max: this.pool.options.max });
    const pending = this.lockPool.connect();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new LockTimeout(id)), waitMs);
    });
    try {
      return await Promise.race([pending, timedOut]);
    } catch (e) {
      // A connection that arrives after the wait went back to the pool at once.
      pending.then(
        (c) => c.release(),
        () => {},
      );
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  async integrityCheck(): Promise<string[]> {
    const { n } = await this.db
      .selectFrom('connected_accounts as a')
      .leftJoin('connections as c', 'c.id', 'a.connection_id')
      .where('c.id', 'is', null)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(n) ? [`${n} account(s) without a connection`] : [];
  }

  async touchAccounts(db: Db, lastUsed: ReadonlyMap<string, number>) {
    await this.run(db, this.q.touch.bind({ ids: [...lastUsed.keys()], ats: [...lastUsed.values()] }));
  }

  async insertActivity(db: Db, rows: readonly ActivityRow[]) {
    const column = <K extends keyof ActivityRow>(k: K) => rows.map((r) => r[k]);
    await this.run(
      db,
      this.q.insertActivity.bind({
        id: column('id'),
        kind: column('kind'),
        name: column('name'),
        connection_name: column('connection_name'),
        account_id: column('account_id'),
        identifier: column('identifier'),
        status: column('status'),
        error_code: column('error_code'),
        latency_ms: column('latency_ms'),
        created_at: column('created_at'),
      }),
    );
  }

  async close() {
    await this.listener.stop();
    await this.lockPool?.end();
    await this.db.destroy();
    // A store only used through `pool` directly (tests dropping a schema) never started Kysely's driver.
    if (!this.pool.ended) await this.pool.end();
  }
}

/** The scale-out store: PostgreSQL, optionally inside its own schema (tests use one schema per run). */
export class PostgresStore extends SqlStore {
  /** The connection pool, for tools and tests that need raw SQL (dropping a test schema, scanning every row). */
  readonly pool: pg.Pool;

  constructor(
    connectionString: string,
    readonly schema?: string,
    poolSize = 10,
  ) {
    if (schema && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
    const clientConfig: pg.ClientConfig = {
      connectionString,
      types,
      options: schema ? `-c search_path=${schema}` : undefined,
    };
    const pool = new (loadPg().Pool)({ ...clientConfig, max: poolSize });
    super(new PostgresBackend(pool, schema, clientConfig));
    this.pool = pool;
  }
}
