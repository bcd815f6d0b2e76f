import {
  Kysely,
  PostgresDialect,
  sql,
  type Compilable,
  type CompiledQuery,
  type QueryResult,
  type RawBuilder,
} from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';
import { prepare } from './prepared.ts';
import { SqlStore, type ActivityRow, type Backend, type Db } from './sql-store.ts';
import { LockTimeout } from './types.ts';

/** Serialises migrators of one database (any schema): held for the whole run, on one connection. */
const MIGRATION_LOCK = 424242;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// BIGINT columns hold epoch milliseconds and versions, well within Number's exact range.
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20
      ? (v: string) => Number(v)
      : (pg.types.getTypeParser(oid, format as never) as (v: string) => unknown)) as typeof pg.types.getTypeParser,
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

  constructor(
    readonly pool: pg.Pool,
    private readonly schema: string | undefined,
  ) {
    this.db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    this.q = batchQueries(this.db);
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
    // A session-level advisory lock on a dedicated connection: released explicitly, or by the server if
    // this process dies, so a crashed refresher never leaves the account locked.
    const deadline = Date.now() + waitMs;
    return this.db.connection().execute(async (conn) => {
      for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
        const { rows } = await sql<{
          ok: boolean;
        }>`SELECT pg_try_advisory_lock(hashtextextended(${id}, 7)) AS ok`.execute(conn);
        if (rows[0]!.ok) break;
        if (Date.now() > deadline) throw new LockTimeout(id);
        await sleep(delay);
      }
      try {
        return await fn();
      } finally {
        await sql`SELECT pg_advisory_unlock(hashtextextended(${id}, 7))`.execute(conn);
      }
    });
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
    const pool = new pg.Pool({
      connectionString,
      max: poolSize,
      types,
      options: schema ? `-c search_path=${schema}` : undefined,
    });
    super(new PostgresBackend(pool, schema));
    this.pool = pool;
  }
}
