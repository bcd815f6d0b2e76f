import { closeSync, mkdirSync, openSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import { prepare } from './prepared.ts';
import type { Database as Tables } from './schema.ts';
import { inTransaction, SqlStore, type ActivityRow, type Backend, type Db } from './sql-store.ts';
import { groupTransactions } from './backend.ts';
import { GroupCommit } from './group-commit.ts';
import { LockTimeout } from './types.ts';
import { ChangeFeed, EVERYTHING } from './changes.ts';
import { CheckpointUpkeep, SQLITE_DEFAULT_PAGES, type UpkeepOptions } from './wal-checkpointer.ts';
import { WalIndexHeader } from './wal-index.ts';
import { leaseOwner, leaseOwnerGone } from './lease.ts';

const LEASE_MS = 60_000;
/** Distinct statements are few (one per query shape); past this many, something builds SQL per value. */
const MAX_CACHED_STATEMENTS = 500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The activity table's columns, in the order an INSERT of activity rows binds them: every column of the row. */
const ACTIVITY_COLUMNS = [
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
] as const satisfies ReadonlyArray<keyof ActivityRow>;
// A column added to the row type but not to the list above would be silently left out: this does not compile then.
const everyActivityColumn: [Exclude<keyof ActivityRow, (typeof ACTIVITY_COLUMNS)[number]>] extends [never]
  ? true
  : never = true;
void everyActivityColumn;

/**
 * Rows per INSERT statement, at most, when activity batches are written. A batch goes out as INSERTs of 64, 32, …, 1
 * rows (at most seven distinct statements, each prepared once) rather than one statement run per row: what goes
 * with each run (the query object, the call into better-sqlite3, the statement's start and reset) is paid once per
 * up to 64 rows. Under the proxy's load (one row per request) that took a proxied request from 310.0k to 301.7k
 * instructions (counted with callgrind). 64 rows bind 640 values, far below SQLite's limit of 32 766.
 */
const ACTIVITY_ROWS_PER_INSERT = 64;
const activityInserts = new Map<number, string>();
function activityInsertSql(rows: number): string {
  let sql = activityInserts.get(rows);
  if (!sql) {
    const values = `(${ACTIVITY_COLUMNS.map(() => '?').join(', ')})`;
    sql = `insert into "activity" (${ACTIVITY_COLUMNS.map((c) => `"${c}"`).join(', ')}) values ${Array<string>(rows).fill(values).join(', ')}`;
    activityInserts.set(rows, sql);
  }
  return sql;
}

/** The page cache of the store's connection, in KiB. */
export const PAGE_CACHE_KIB = 2000;

/** The one connection, with each distinct SQL text prepared once (Kysely's own driver prepares per query). */
class SqliteConnection implements DatabaseConnection {
  private statements = new Map<string, Database.Statement>();
  /** The prepared statements that write rows (INSERT, UPDATE, DELETE, a WITH that does one of them). */
  private writes = new WeakSet<Database.Statement>();

  constructor(readonly raw: Database.Database) {}

  private prepared(sql: string): Database.Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      if (this.statements.size >= MAX_CACHED_STATEMENTS) this.statements.clear();
      stmt = this.raw.prepare(sql);
      if (!stmt.readonly && /^\s*(insert|update|delete|replace|with)\b/i.test(sql)) this.writes.add(stmt);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  runSync<R>(q: CompiledQuery): QueryResult<R> {
    const stmt = this.prepared(q.sql);
    if (stmt.reader) return { rows: stmt.all(q.parameters) as R[] };
    const { changes } = stmt.run(q.parameters);
    return { rows: [], numAffectedRows: BigInt(changes) };
  }

  /**
   * A write outside a transaction (a delivery's outcome, a lease renewed) is its own `BEGIN IMMEDIATE … COMMIT`:
   * SQLite's implicit transaction would wait for another process's write lock inside SQLite, asleep on the event
   * loop (busy_timeout), where this one waits on timers (beginImmediate). Reads never wait for the write lock (WAL).
   */
  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    if (this.raw.inTransaction || !this.writes.has(this.prepared(q.sql))) return this.runSync<R>(q);
    await beginImmediate(this.raw);
    try {
      const result = this.runSync<R>(q);
      this.raw.exec('COMMIT');
      return result;
    } catch (e) {
      if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
      throw e;
    }
  }

  // eslint-disable-next-line @typescript-eslint/require-await, require-yield -- Kysely's interface; this driver never streams
  async *streamQuery(): AsyncIterableIterator<QueryResult<never>> {
    throw new Error('the store does not stream query results');
  }
}

/** How long a transaction waits for another process's write lock (SQLite's busy_timeout is the same). */
const WRITE_LOCK_WAIT_MS = 5_000;
const BUSY_TIMEOUT = `busy_timeout = ${WRITE_LOCK_WAIT_MS}`;

/**
 * `BEGIN IMMEDIATE` once, without waiting: false when another connection (the key tool, a second instance on the
 * same file, a bulk writer) holds the write lock. SQLite's own wait for it (busy_timeout) sleeps in the calling
 * thread, which for the service is the event loop: every request stood still, up to 100 ms a sleep, while another
 * process wrote (bench/scale.ts's fan-out phase, a million events written by another process).
 */
function tryBeginImmediate(raw: Database.Database): boolean {
  raw.pragma('busy_timeout = 0');
  try {
    beginStatement(raw).run();
    return true;
  } catch (e) {
    if ((e as { code?: unknown }).code === 'SQLITE_BUSY') return false;
    throw e;
  } finally {
    raw.pragma(BUSY_TIMEOUT);
  }
}

const beginStatements = new WeakMap<Database.Database, Database.Statement>();
const beginStatement = (raw: Database.Database) => {
  let stmt = beginStatements.get(raw);
  if (!stmt) beginStatements.set(raw, (stmt = raw.prepare('BEGIN IMMEDIATE')));
  return stmt;
};

/** `BEGIN IMMEDIATE`, waiting for another process's write lock on timers (see tryBeginImmediate), then failing. */
async function beginImmediate(raw: Database.Database): Promise<void> {
  const deadline = Date.now() + WRITE_LOCK_WAIT_MS;
  for (let delay = 1; !tryBeginImmediate(raw); delay = Math.min(delay * 2, 20)) {
    if (Date.now() > deadline) {
      throw Object.assign(new Error(`the store's write lock stayed taken for ${WRITE_LOCK_WAIT_MS} ms`), {
        code: 'SQLITE_BUSY',
      });
    }
    await sleep(delay);
  }
}

/**
 * better-sqlite3 has one connection and runs each statement synchronously; a transaction is an async callback,
 * so the connection is handed to one user at a time. Transactions begin IMMEDIATE: they take the write lock at
 * once (waiting on timers, up to 5 s, for another process: see beginImmediate), so a transaction that reads and then writes cannot fail
 * half-way because another process wrote in between.
 */
class SqliteDriver implements Driver {
  private busy: Promise<void> | undefined;
  private release: (() => void) | undefined;

  constructor(private readonly connection: SqliteConnection) {}

  /** No one holds the connection: no transaction is open on it. */
  get idle(): boolean {
    return this.busy === undefined;
  }

  async init() {}

  async acquireConnection(): Promise<DatabaseConnection> {
    while (this.busy) await this.busy;
    this.busy = new Promise((resolve) => (this.release = resolve));
    return this.connection;
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- Kysely's driver interface is async; better-sqlite3 answers at once, and async turns a throw into the rejection Kysely expects
  async releaseConnection() {
    const release = this.release;
    this.busy = undefined;
    this.release = undefined;
    release?.();
  }

  async beginTransaction() {
    await beginImmediate(this.connection.raw);
  }
  async commitTransaction(c: DatabaseConnection) {
    await c.executeQuery(CompiledQuery.raw('COMMIT'));
  }
  async rollbackTransaction(c: DatabaseConnection) {
    await c.executeQuery(CompiledQuery.raw('ROLLBACK'));
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- Kysely's driver interface is async; better-sqlite3 answers at once, and async turns a throw into the rejection Kysely expects
  async destroy() {
    if (this.connection.raw.open) this.connection.raw.close();
  }
}

class SqliteBackend implements Backend {
  readonly kind = 'sqlite' as const;
  readonly db: Db;
  private readonly raw: Database.Database;
  private readonly connection: SqliteConnection;
  private readonly driver: SqliteDriver;
  private readonly q;
  private readonly dataVersion: Database.Statement;
  private lastDataVersion: unknown;
  private upkeep?: CheckpointUpkeep;
  /** The store's transactions, committed in groups (see group-commit.ts). */
  readonly groups: GroupCommit;
  private readonly walIndex: WalIndexHeader;
  /**
   * Other processes on the same file are seen through `PRAGMA data_version`, which changes when another
   * connection commits: checked once per request (see ChangeFeed.pollOnce), a change drops every cache, since it
   * cannot tell what changed. The pragma runs only when the WAL index's header moved since the last check (one
   * `pread`, see wal-index.ts). This process's own writes are announced by the store itself.
   */
  readonly changes = new ChangeFeed({
    poll: () => {
      if (!this.changes.live || !this.raw.open || !this.walIndex.maybeChanged()) return;
      this.checkDataVersion();
    },
  });

  /** Runs `PRAGMA data_version` after a look at the WAL index's header, and settles on that header. */
  private checkDataVersion(): void {
    const v = this.dataVersion.get();
    this.walIndex.settle();
    if (v !== this.lastDataVersion) {
      this.lastDataVersion = v;
      // Another connection committed (the key tool, another instance, a bulk writer): its pages count towards the
      // checkpoint upkeep now. Counted only after this store's own next commit, they could be found by SQLite's own
      // mark inside that commit first, which then copies them all on the event loop and syncs the file while the
      // disk still writes out the other process's pages (the likely cause of a 426 ms pause after a key rotation in
      // bench/scale.ts; inferred from where it happened, not sampled).
      this.countWal(this.walIndex.lastFrames());
      this.changes.emit(EVERYTHING);
    }
  }

  constructor(private readonly path: string) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // Only the service's user may read the store (SQLite gives the -wal and -shm files the same mode).
    closeSync(openSync(path, 'a', 0o600));
    this.raw = new Database(path);
    this.raw.pragma('journal_mode = WAL');
    // NORMAL is durable against process crashes (the WAL is fsynced at checkpoints); FULL only adds
    // protection against power loss at the cost of an fsync per commit.
    this.raw.pragma('synchronous = NORMAL');
    this.raw.pragma('foreign_keys = ON');
    this.raw.pragma(BUSY_TIMEOUT);
    // SQLite's own default page cache (2 MB) rather than better-sqlite3's (16 MB). The rows read on every request
    // are cached by the service itself (see changes.ts); what fills SQLite's cache under load is the activity
    // table, appended to on every call and read only by the dashboard. With 16 MB those appends grew the RSS under
    // load by 15-18 MB; the smaller cache cost the proxy 0-4 % more CPU
    // per request in the same measurements (SQLite reads some evicted pages again).
    this.raw.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    this.dataVersion = this.raw.prepare('PRAGMA data_version').pluck();
    // Next to the file SQLite opens: the database's real path, where it is a symbolic link.
    this.walIndex = new WalIndexHeader(`${realpathSync(path)}-shm`);
    this.connection = new SqliteConnection(this.raw);
    this.driver = new SqliteDriver(this.connection);
    this.db = new Kysely<Tables>({
      dialect: {
        createAdapter: () => new SqliteAdapter(),
        createDriver: () => this.driver,
        createQueryCompiler: () => new SqliteQueryCompiler(),
        createIntrospector: (db) => new SqliteIntrospector(db),
      },
    });
    this.groups = new GroupCommit(this.db, undefined, () => this.countWal());
    groupTransactions(this.db, (fn) => this.groups.run(fn));
    const db = this.db;
    this.q = {
      acquire: prepare((a: { until: number; owner: string; id: string; now: number }) =>
        db
          .updateTable('connected_accounts')
          .set({ lock_until: a.until, lock_owner: a.owner })
          .where('id', '=', a.id)
          .where((eb) => eb.or([eb('lock_until', 'is', null), eb('lock_until', '<', a.now)])),
      ),
      takeOver: prepare((a: { until: number; owner: string; id: string; previous: string | null }) =>
        db
          .updateTable('connected_accounts')
          .set({ lock_until: a.until, lock_owner: a.owner })
          .where('id', '=', a.id)
          .where('lock_owner', '=', a.previous),
      ),
      owner: prepare((a: { id: string }) =>
        db.selectFrom('connected_accounts').select('lock_owner').where('id', '=', a.id),
      ),
      release: prepare((a: { id: string; owner: string }) =>
        db
          .updateTable('connected_accounts')
          .set({ lock_until: null, lock_owner: null })
          .where('id', '=', a.id)
          .where('lock_owner', '=', a.owner),
      ),
      touch: prepare((a: { id: string; at: number }) =>
        db
          .updateTable('connected_accounts')
          .set({ last_used_at: a.at })
          .where('id', '=', a.id)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', a.at)])),
      ),
    };
  }

  /**
   * A statement runs to completion synchronously, so while no transaction holds the connection it runs at
   * once, without Kysely's executor and connection hand-over (a few microseconds on every hot read).
   */
  async run<R>(db: Db, query: CompiledQuery<R>): Promise<QueryResult<R>> {
    if (db === this.db && this.driver.idle) return this.connection.runSync<R>(query);
    return db.executeQuery(query);
  }

  /**
   * The statements in one IMMEDIATE transaction; synchronous from BEGIN to COMMIT when the connection is free.
   */
  private async batch(db: Db, queries: CompiledQuery[]): Promise<void> {
    if (db === this.db && this.driver.idle && tryBeginImmediate(this.raw)) {
      try {
        for (const q of queries) this.connection.runSync(q);
        this.raw.exec('COMMIT');
      } catch (e) {
        if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
        throw e;
      }
    } else {
      await inTransaction(db, async (tx) => {
        for (const q of queries) await tx.executeQuery(q);
      });
    }
    this.countWal();
  }

  /** The WAL's frame count when last read (see countWal). */
  private walFrames = 0;

  /** Tells the checkpoint upkeep how many pages the WAL grew by since the last look (by anyone's commits). */
  private countWal(frames?: number): void {
    if (!this.upkeep) return;
    frames ??= this.walIndex.frames();
    if (frames === undefined) return;
    // Fewer than before: a checkpoint let the WAL start over, and these are all new.
    const grew = frames >= this.walFrames ? frames - this.walFrames : frames;
    this.walFrames = frames;
    if (grew) this.upkeep.wrote(grew);
  }

  async migrationScope(fn: (db: Db) => Promise<void>) {
    // Each migration's transaction begins IMMEDIATE, which already serialises processes sharing the file.
    await fn(this.db);
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- the dialect interface is async (PostgreSQL's is); better-sqlite3 runs the script at once
  async execScript(_tx: Db, script: string) {
    // Called inside the transaction, which holds the only connection: the raw handle is that connection.
    this.raw.exec(script);
  }

  /** A lease row: SQLite has no session locks that outlive a statement, and a lease survives a crash only until it expires or its owner is seen gone. */
  async withAccountLock<T>(id: string, fn: () => Promise<T>, waitMs: number): Promise<T> {
    const owner = leaseOwner();
    const deadline = Date.now() + waitMs;
    for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
      const now = Date.now();
      const acquired = await this.run(this.db, this.q.acquire.bind({ until: now + LEASE_MS, owner, id, now }));
      if (acquired.numAffectedRows === 1n) break;
      const [row] = (await this.run(this.db, this.q.owner.bind({ id }))).rows;
      if (!row) throw new Error(`account ${id} does not exist`);
      if (leaseOwnerGone(row.lock_owner)) {
        const taken = await this.run(
          this.db,
          this.q.takeOver.bind({ until: now + LEASE_MS, owner, id, previous: row.lock_owner }),
        );
        if (taken.numAffectedRows === 1n) break;
      }
      if (now > deadline) throw new LockTimeout(id);
      await sleep(delay);
    }
    try {
      return await fn();
    } finally {
      await this.run(this.db, this.q.release.bind({ id, owner }));
    }
  }

  async integrityCheck(): Promise<string[]> {
    const { rows } = await this.db.executeQuery<{ integrity_check: string }>(
      CompiledQuery.raw('PRAGMA integrity_check'),
    );
    const problems = rows.map((r) => r.integrity_check).filter((s) => s !== 'ok');
    const fk = await this.db.executeQuery(CompiledQuery.raw('PRAGMA foreign_key_check'));
    if (fk.rows.length) problems.push(`${fk.rows.length} foreign key violation(s)`);
    return problems;
  }

  async touchAccounts(db: Db, lastUsed: ReadonlyMap<string, number>) {
    await this.batch(
      db,
      [...lastUsed].map(([id, at]) => this.q.touch.bind({ id, at })),
    );
  }

  /** A batch of activity rows as multi-row INSERTs of 64, 32, …, 1 rows (see ACTIVITY_ROWS_PER_INSERT), in one transaction. */
  async insertActivity(db: Db, rows: readonly ActivityRow[]) {
    const queries: CompiledQuery[] = [];
    for (let i = 0; i < rows.length;) {
      let n = ACTIVITY_ROWS_PER_INSERT;
      while (n > rows.length - i) n >>= 1;
      const parameters: unknown[] = [];
      for (let j = i; j < i + n; j++) for (const column of ACTIVITY_COLUMNS) parameters.push(rows[j]![column]);
      queries.push(CompiledQuery.raw(activityInsertSql(n), parameters));
      i += n;
    }
    await this.batch(db, queries);
  }

  watchChanges(): Promise<void> {
    // A first read transaction makes sure the WAL index exists before the first look at it (a look that finds no
    // file gives the shortcut up for good).
    this.dataVersion.get();
    this.walIndex.maybeChanged();
    this.lastDataVersion = this.dataVersion.get();
    this.walIndex.settle();
    this.changes.live = true;
    return Promise.resolve();
  }

  /** WAL checkpoints move to a thread of their own while batched writes come fast (see wal-checkpointer.ts). */
  startUpkeep(onProblem: (message: string, e: Error) => void, options?: UpkeepOptions): void {
    if (this.upkeep || !this.raw.open) return;
    // What the WAL holds already is not new writing (a fresh store's migrations leave about 210 pages).
    const frames = (this.walFrames = this.walIndex.frames() ?? 0);
    this.upkeep = new CheckpointUpkeep(
      this.path,
      (pages) => {
        if (this.raw.open) this.raw.pragma(`wal_autocheckpoint = ${pages}`);
      },
      onProblem,
      options,
    );
    // Half of SQLite's own mark or more: a WAL left by a process that was killed (a restart after SIGKILL; its
    // recovery counts every frame as not yet copied) or written by another. The first commits would take it past the
    // mark before the upkeep counted them, and checkpoint it all on the event loop (the likely cause of a 571 ms
    // pause in the scale bench's delete, right after a restart that followed SIGKILL): the thread takes it.
    if (frames >= SQLITE_DEFAULT_PAGES / 2) this.upkeep.takeOver();
  }

  /** The checkpoint upkeep, once started (tests and diagnostics). */
  get checkpoints(): CheckpointUpkeep | undefined {
    return this.upkeep;
  }

  async close() {
    this.changes.live = false;
    // The thread's connection closes first: the last connection to close checkpoints and removes the WAL.
    await this.upkeep?.close();
    await this.db.destroy();
    if (this.raw.open) this.raw.close();
    this.walIndex.close();
  }
}

/** The embedded default store: one SQLite file in WAL mode. */
export class SqliteStore extends SqlStore {
  constructor(readonly path: string) {
    super(new SqliteBackend(path));
  }
}
