import type { ChangeFeed, ChangedTable } from './changes.ts';
import { migrate } from './migrate.ts';
import { inTransaction } from './backend.ts';
import { SqlStoreBase } from './groups/base.ts';
import { MetaAndCredentialsGroup } from './groups/meta-and-credentials.ts';
import { AuditGroup } from './groups/audit.ts';
import { ConnectionsGroup } from './groups/connections.ts';
import { AccountsGroup } from './groups/accounts.ts';
import { OAuthLinksGroup } from './groups/oauth-links.ts';
import { ActivityGroup } from './groups/activity.ts';
import { DashboardGroup } from './groups/dashboard.ts';
import { McpGroup } from './groups/mcp.ts';
import { WebhooksGroup } from './groups/webhooks.ts';
import { TriggersGroup } from './groups/triggers.ts';
import { SealedGroup } from './groups/sealed.ts';
import type { Store, StoreTransaction } from './types.ts';

export { inTransaction, type ActivityRow, type Backend, type Db } from './backend.ts';

/**
 * The one store: every query written once with the Kysely query builder, compiled for SQLite or PostgreSQL by
 * the backend's dialect. An instance bound to a transaction (see `transaction`) runs the same methods inside it.
 *
 * The class holds what concerns the store as a whole; the methods of each table group are written in
 * `groups/*.ts` (see README.md) and copied onto this class's prototype below, so that a call on the hot path
 * (an account's lookup, its last use) finds its method on the prototype as before, with no call in between.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface below
export class SqlStore extends SqlStoreBase implements Store {
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
}

// The class and this interface are one type: the interface declares the methods that the loop below puts on the
// class's prototype, each group's exactly as written there.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the loop below defines its methods
export interface SqlStore
  extends
    MetaAndCredentialsGroup,
    AuditGroup,
    ConnectionsGroup,
    AccountsGroup,
    OAuthLinksGroup,
    ActivityGroup,
    DashboardGroup,
    McpGroup,
    WebhooksGroup,
    TriggersGroup,
    SealedGroup {}

const GROUPS = [
  MetaAndCredentialsGroup,
  AuditGroup,
  ConnectionsGroup,
  AccountsGroup,
  OAuthLinksGroup,
  ActivityGroup,
  DashboardGroup,
  McpGroup,
  WebhooksGroup,
  TriggersGroup,
  SealedGroup,
];
for (const group of GROUPS) {
  for (const name of Object.getOwnPropertyNames(group.prototype)) {
    if (name === 'constructor') continue;
    // Two groups defining one method (a merge that added it twice) would leave one of them unused.
    if (Object.hasOwn(SqlStore.prototype, name)) throw new Error(`SqlStore.${name} is defined twice`);
    Object.defineProperty(SqlStore.prototype, name, Object.getOwnPropertyDescriptor(group.prototype, name)!);
  }
}
