/**
 * Changes to the rows the service caches (connections, connected accounts, API credentials, meta), as the store
 * sees them: those made through this store at once (after their transaction commits), and those made by other
 * processes sharing the database — on PostgreSQL pushed by LISTEN/NOTIFY (triggers of migration 007), on SQLite
 * found by `poll()` through `PRAGMA data_version`, which changes whenever another connection commits.
 *
 * A cache built on this feed serves entries only while `live` (every change made elsewhere will reach it) and drops
 * them on every change that could concern them; see runtime/accounts/cache.ts.
 */

/** The tables whose rows are cached. `'*'` as the table: anything may have changed (drop every cache). */
export type ChangedTable = 'connections' | 'connected_accounts' | 'api_credentials' | 'meta';

export interface Change {
  table: ChangedTable | '*';
  /** The row's id (`meta`: its key); `'*'`: every row of the table. */
  id: string;
}

export type ChangeListener = (change: Change) => void;

export const EVERYTHING: Change = Object.freeze({ table: '*', id: '*' });

export class ChangeFeed {
  private listeners = new Set<ChangeListener>();
  /** Whether changes made by other processes reach this feed right now (false before `start` and while reconnecting). */
  live = false;
  /** Changes seen, for tests and diagnostics. */
  received = 0;

  /**
   * @param source.poll checks, synchronously and cheaply, for changes that are not pushed (SQLite), and reports
   *   them through `emit`.
   * @param source.sync resolves once every change committed before the call has been emitted (PostgreSQL: a
   *   notification of its own, delivered after those of every transaction committed before it).
   */
  constructor(private readonly source: { poll?: () => void; sync?: () => Promise<void> } = {}) {}

  subscribe(fn: ChangeListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  emit(change: Change): void {
    this.received++;
    for (const fn of this.listeners) fn(change);
  }

  /** Looks for changes made elsewhere that are not pushed to this process (SQLite); a no-op on PostgreSQL. */
  poll(): void {
    this.source.poll?.();
  }

  private polledFor = new WeakSet<object>();

  /**
   * `poll()`, once per `scope` (an HTTP request): the first read a request makes looks for changes made elsewhere,
   * and its later reads see the state as of that look. A request's reads are then consistent with each other, and
   * everything committed before the request arrived is seen, at the cost of one check per request rather than one
   * per read (PRAGMA data_version is a few microseconds). Without a scope, every call polls.
   */
  pollOnce(scope: object | undefined): void {
    if (scope !== undefined) {
      if (this.polledFor.has(scope)) return;
      this.polledFor.add(scope);
    }
    this.poll();
  }

  /** Resolves once every change committed anywhere before the call has reached the listeners. */
  async sync(): Promise<void> {
    this.poll();
    await this.source.sync?.();
  }

  /** Parses a notification payload `table:id` (ids never contain a colon before the table's). */
  static parse(payload: string): Change {
    const i = payload.indexOf(':');
    const table = payload.slice(0, i);
    if (i < 0 || !['connections', 'connected_accounts', 'api_credentials', 'meta'].includes(table)) return EVERYTHING;
    return { table: table as ChangedTable, id: payload.slice(i + 1) };
  }
}
