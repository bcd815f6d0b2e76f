import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { ChangeFeed } from './changes.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

export type ActivityRow = Database['activity'];

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

/** Where a database groups its transactions (see group-commit.ts): its root handle's runner. */
const groupRunners = new WeakMap<Db, <T>(fn: (tx: Db) => Promise<T>) => Promise<T>>();

/** Makes every transaction `inTransaction` begins on `db` (a root handle) go through `run`. */
export function groupTransactions(db: Db, run: <T>(fn: (tx: Db) => Promise<T>) => Promise<T>): void {
  groupRunners.set(db, run);
}

/**
 * Runs `fn` in a transaction, or in the current one when `db` is already bound to one. On a database that groups
 * its transactions (SQLite), the transaction is a member of the next group commit.
 */
export function inTransaction<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db);
  const grouped = groupRunners.get(db);
  return grouped ? grouped(fn) : db.transaction().execute(fn);
}
