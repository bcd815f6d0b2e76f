import { sql } from 'kysely';
import { inTransaction } from '../backend.ts';
import { decodeCursor } from '../cursor.ts';
import { ACCOUNT_COLUMNS, SqlStoreBase, type EventColumns, type OutboxColumns } from './base.ts';
import { escapeLike, toAccount, type Row } from '../rows.ts';
import type { Account, AccountPatch, AccountQuery, AccountStatus, AccountStore, WebhookEvent } from '../types.ts';
import { outboxRow } from './webhooks.ts';

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
  auth_kind: a.authKind ?? null,
  version: a.version,
  lock_until: null,
  lock_owner: null,
  created_at: a.createdAt,
  updated_at: a.updatedAt,
});

/** A new account and its events, as createAccountWithEvents writes them. */
interface NewAccount {
  row: ReturnType<typeof accountRow>;
  events: OutboxColumns[];
}

/** New accounts per statement, at most (16 arrays of this many values, and two events each). */
const NEW_ACCOUNTS_PER_STATEMENT = 200;

/**
 * The new accounts asked for in one turn of the event loop, written by one statement on PostgreSQL: one commit,
 * and one turn at the lock PostgreSQL takes to queue the change notifications of a committing transaction (which
 * it holds through the commit's WAL flush: one account a commit, the commits of every instance waited there in
 * turn). If the statement fails (an account's connection deleted meanwhile), each account goes again alone, so
 * that only its own caller sees its error.
 */
class NewAccountBatch {
  private queue: Array<{ entry: NewAccount; resolve: (r: Row | undefined) => void; reject: (e: unknown) => void }> = [];
  private scheduled = false;

  constructor(private readonly write: (entries: readonly NewAccount[]) => Promise<Array<Row | undefined>>) {}

  add(entry: NewAccount): Promise<Row | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ entry, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const taken = this.queue.splice(0, NEW_ACCOUNTS_PER_STATEMENT);
    this.scheduled = this.queue.length > 0;
    if (this.scheduled) setImmediate(() => void this.flush());
    try {
      const rows = await this.write(taken.map((t) => t.entry));
      taken.forEach((t, i) => t.resolve(rows[i]));
    } catch (e) {
      if (taken.length === 1) return taken[0]!.reject(e);
      for (const t of taken) this.write([t.entry]).then((r) => t.resolve(r[0]), t.reject);
    }
  }
}

const newAccountBatches = new WeakMap<object, NewAccountBatch>();
/** The store's batch of new accounts (one per backend: per store, whichever transaction-bound view asks). */
function newAccountBatch(
  backend: object,
  write: (entries: readonly NewAccount[]) => Promise<Array<Row | undefined>>,
): NewAccountBatch {
  let batch = newAccountBatches.get(backend);
  if (!batch) newAccountBatches.set(backend, (batch = new NewAccountBatch(write)));
  return batch;
}

// The prepared insert (base.ts) names its columns: the same ones as accountRow, or this fails to compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const ACCOUNT_ROW_HAS_THE_PREPARED_COLUMNS: Same<
  keyof ReturnType<typeof accountRow>,
  (typeof ACCOUNT_COLUMNS)[number]
> = true;

/** Accounts per INSERT statement: 16 values each. */
const ACCOUNTS_PER_INSERT = 500;

/** Connected accounts: their counts, reads and writes, last use and lock (the per-request path). */
export abstract class AccountsGroup extends SqlStoreBase implements AccountStore {
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
    const [inserted] = (await this.backend.run(this.db, this.q.insertAccountIfAbsent.bind(accountRow(a)))).rows;
    if (inserted) {
      this.changed('connected_accounts', a.id);
      return { account: toAccount(inserted), created: true };
    }
    return { account: (await this.findAccount(a.connectionId, a.identifier))!, created: false };
  }
  async createAccountWithEvents(a: Account, events: readonly WebhookEvent[]) {
    let inserted: Row | undefined;
    if (this.kind === 'postgres') {
      const entry = { row: accountRow(a), events: events.map(outboxRow) };
      // Inside a transaction the statement is its own; otherwise it joins the accounts of this turn.
      inserted = this.db.isTransaction
        ? (await this.insertAccountsWithEvents([entry]))[0]
        : await newAccountBatch(this.backend, (entries) => this.insertAccountsWithEvents(entries)).add(entry);
    } else {
      inserted = await inTransaction(this.db, async (db) => {
        const [row] = (await this.backend.run(db, this.q.insertAccountIfAbsent.bind(accountRow(a)))).rows;
        if (row && events.length) {
          await db
            .insertInto('webhook_outbox')
            .values(events.map(outboxRow))
            .onConflict((oc) => oc.column('id').doNothing())
            .execute();
        }
        return row;
      });
    }
    if (!inserted) return undefined;
    this.changed('connected_accounts', a.id);
    return toAccount(inserted);
  }
  /** PostgreSQL: the one statement for `entries`; for each, its row if it was new, else undefined. */
  private async insertAccountsWithEvents(entries: readonly NewAccount[]): Promise<Array<Row | undefined>> {
    const column = <C extends (typeof ACCOUNT_COLUMNS)[number]>(c: C) => entries.map((e) => e.row[c]);
    const events = entries.flatMap((e) => e.events.map((ev) => ({ ...ev, account_id: e.row.id })));
    const event = <K extends keyof EventColumns>(k: K) => events.map((e) => e[k]);
    const accounts = Object.fromEntries(ACCOUNT_COLUMNS.map((c) => [c, column(c)])) as {
      [C in (typeof ACCOUNT_COLUMNS)[number]]: unknown[];
    };
    const { rows } = await this.backend.run(
      this.db,
      this.q.insertAccountsWithEvents.bind({
        ...accounts,
        event_id: event('id'),
        event_type: event('type'),
        event_payload: event('payload'),
        event_created_at: event('created_at'),
        event_ordering_key: event('ordering_key'),
        event_account_id: event('account_id'),
      }),
    );
    const byId = new Map(rows.map((r) => [r.id as string, r as Row]));
    return entries.map((e) => byId.get(e.row.id));
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
        // Issue 38, several auth kinds per connection (migration 019).
        auth_kind: patch.authKind,
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
}
