import { sql } from 'kysely';
import type { Backend, Db } from '../backend.ts';
import type { ChangedTable } from '../changes.ts';
import { prepare } from '../prepared.ts';

/** The columns of an account row as the store writes it (accounts.ts, accountRow). */
export const ACCOUNT_COLUMNS = [
  'id',
  'connection_id',
  'identifier',
  'status',
  'verification_pending_since',
  'fields',
  'secrets_sealed',
  'token_expires_at',
  'last_used_at',
  'last_error',
  'auth_kind',
  'version',
  'lock_until',
  'lock_owner',
  'created_at',
  'updated_at',
] as const;

/** Each account column's PostgreSQL type, for the array a batch of accounts sends it as. */
const ACCOUNT_COLUMN_TYPES: Record<(typeof ACCOUNT_COLUMNS)[number], string> = {
  id: 'text',
  connection_id: 'text',
  identifier: 'text',
  status: 'text',
  verification_pending_since: 'bigint',
  fields: 'text',
  secrets_sealed: 'text',
  token_expires_at: 'bigint',
  last_used_at: 'bigint',
  last_error: 'text',
  auth_kind: 'text',
  version: 'bigint',
  lock_until: 'bigint',
  lock_owner: 'text',
  created_at: 'bigint',
  updated_at: 'bigint',
};

/** An event of a new account, as a batch of new accounts writes it: its outbox row and its account. */
export interface EventColumns extends OutboxColumns {
  account_id: string;
}

/** An outbox row's columns (webhooks.ts writes them). */
export interface OutboxColumns {
  id: string;
  type: string;
  payload: string;
  created_at: number;
  ordering_key: string | null;
}

/** The hot reads (and an upsert's insert), built and compiled once per store (see prepared.ts). */
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
    // An upsert's insert of a new account (getOrCreateAccount): 16 columns, built and compiled once.
    insertAccountIfAbsent: prepare((a: Record<(typeof ACCOUNT_COLUMNS)[number], unknown>) =>
      db
        .insertInto('connected_accounts')
        .values(Object.fromEntries(ACCOUNT_COLUMNS.map((c) => [c, a[c]])) as never)
        .onConflict((oc) => oc.columns(['connection_id', 'identifier']).doNothing())
        .returningAll(),
    ),
    // PostgreSQL only: new accounts and their events in one statement, each account's events written only if that
    // account is new (createAccountWithEvents, which puts together the accounts asked for in one turn): one round
    // trip and one commit for them all, where BEGIN, two inserts and COMMIT were four for each (issue 35, upserts).
    insertAccountsWithEvents: prepare(
      (
        a: { [C in (typeof ACCOUNT_COLUMNS)[number]]: unknown[] } & {
          [K in keyof EventColumns as `event_${K}`]: unknown[];
        },
      ) => {
        const accounts = sql.join(ACCOUNT_COLUMNS.map((c) => sql`${a[c]}::${sql.raw(ACCOUNT_COLUMN_TYPES[c])}[]`));
        const query = sql<Record<string, unknown>>`
          WITH a AS (
            INSERT INTO connected_accounts (${sql.join(ACCOUNT_COLUMNS.map((c) => sql.id(c)))})
            SELECT * FROM unnest(${accounts})
            ON CONFLICT (connection_id, identifier) DO NOTHING RETURNING *
          ), e AS (
            INSERT INTO webhook_outbox (id, type, payload, created_at, ordering_key)
            SELECT u.id, u.type, u.payload, u.created_at, u.ordering_key
            FROM unnest(${a.event_id}::text[], ${a.event_type}::text[], ${a.event_payload}::text[],
              ${a.event_created_at}::bigint[], ${a.event_ordering_key}::text[], ${a.event_account_id}::text[])
              AS u (id, type, payload, created_at, ordering_key, account_id)
            JOIN a ON a.id = u.account_id
            ON CONFLICT (id) DO NOTHING
          )
          SELECT * FROM a`;
        return { compile: () => query.compile(db) };
      },
    ),
    credentialById: prepare((a: { id: string }) => db.selectFrom('api_credentials').selectAll().where('id', '=', a.id)),
    credentialByClientId: prepare((a: { clientId: string }) =>
      db.selectFrom('api_credentials').selectAll().where('client_id', '=', a.clientId),
    ),
  };
}
export type HotQueries = ReturnType<typeof hotQueries>;

/** A unique constraint refused the write (SQLite's SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/**
 * What every group of the store's methods works on: the backend, the database handle (the store's root or a
 * transaction), the hot queries, and the changes to announce. `SqlStore` (../sql-store.ts) extends it, and so does
 * each group in this folder, whose methods are copied onto `SqlStore`'s own prototype: one object, one prototype,
 * no call in between.
 */
export abstract class SqlStoreBase {
  readonly kind: 'sqlite' | 'postgres';
  protected readonly db: Db;
  protected readonly q: HotQueries;
  /** In a transaction: the changes it made, announced once it has committed. */
  protected readonly pending: Array<[ChangedTable, string]> | undefined;

  constructor(
    protected readonly backend: Backend,
    bound?: { db: Db; queries: HotQueries; pending: Array<[ChangedTable, string]> },
  ) {
    this.kind = backend.kind;
    this.db = bound?.db ?? backend.db;
    this.q = bound?.queries ?? hotQueries(backend.db);
    this.pending = bound?.pending;
  }

  /**
   * Announces a write to a cached table to this process's caches at once (other processes learn of it from the
   * database: NOTIFY, or SQLite's data_version). Called after the write; in a transaction, after the commit, so
   * that no cache reloads the row before the change is visible.
   */
  protected changed(table: ChangedTable, id: string): void {
    if (this.pending) this.pending.push([table, id]);
    else this.backend.changes.emit({ table, id });
  }

  /**
   * Accounts per connection, read from the counters the triggers keep (migrations 009b and 014): a few rows per
   * connection, whatever the population.
   */
  protected async accountCounts(connectionId?: string): Promise<Map<string, number>> {
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
  protected async foldAccountCounts(): Promise<void> {
    if (this.kind !== 'postgres') return;
    await sql`WITH moved AS (DELETE FROM account_count_deltas RETURNING connection_id, status, d)
      INSERT INTO account_counts (connection_id, status, n)
        SELECT connection_id, status, sum(d) FROM moved GROUP BY connection_id, status
      ON CONFLICT (connection_id, status) DO UPDATE SET n = account_counts.n + EXCLUDED.n`.execute(this.db);
    await sql`DELETE FROM account_counts c
      WHERE NOT EXISTS (SELECT 1 FROM connections WHERE id = c.connection_id)`.execute(this.db);
  }
}
