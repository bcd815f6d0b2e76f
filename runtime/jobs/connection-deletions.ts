/**
 * Connection deletes, in the background. A connection may hold a million accounts: removing them and writing a
 * `connected_account.deleted` event for each cannot happen in the request, nor in one transaction that would hold
 * SQLite's one connection (and the event loop with it) for minutes.
 *
 * The request marks the connection (the store hides it from every read at once and frees its name) and records a
 * deletion; then batches of accounts go (sized by time, at most `batchSize`: ./batch-size.ts), each batch in one
 * transaction with its accounts' events
 * (multi-row inserts) and the deletion's progress, waiting for a pause in the requests between batches (./foreground.ts). A crash keeps all of
 * a batch or none of it, so after a restart the work resumes where the last committed batch left it: no account is
 * left behind or reported twice. The last step deletes the connection row once no account is left, in one
 * transaction with the deletion marked done.
 *
 * One instance works on a deletion at a time: it holds a lease, renewed with every batch, taken over when it
 * expires or (same host) when its holder no longer runs. Every instance looks for unfinished deletions at start and
 * every few seconds, so a deletion whose instance died is resumed by whichever instance comes first.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { BATCH_BUDGET_MS, nextBatchSize } from './batch-size.ts';
import { Foreground } from './foreground.ts';
import { notFound } from '../../core/errors.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';
import { leaseOwner, leaseOwnerGone } from '../store/lease.ts';
import type { Account, AccountKey, Connection, ConnectionDeletion, Store } from '../store/types.ts';
import { accountEvent } from '../webhooks/events.ts';

/** The first batch of a deletion, before any batch has been timed (at most BATCH_SIZE). */
export const FIRST_BATCH = 100;

/** A lease not renewed for this long is free for another instance (a batch renews it). */
const LEASE_MS = 30_000;
/** How often an instance looks for deletions nobody works on (another instance died). */
const LOOK_EVERY_MS = 5_000;

class LeaseLost extends Error {}

/** The last of the accounts in `(created_at, id)` order; undefined for none. */
function lastInOrder(accounts: readonly Account[]): AccountKey | undefined {
  let last: AccountKey | undefined;
  for (const a of accounts)
    if (!last || a.createdAt > last.createdAt || (a.createdAt === last.createdAt && a.id > last.id))
      last = { createdAt: a.createdAt, id: a.id };
  return last;
}

export interface DeletionDeps {
  store: Store;
  log: Logger;
  batchSize: number;
  /** How long a batch should take at most, in ms (batch-size.ts; tests give 0 or Infinity). */
  batchBudgetMs?: number;
  /** After a batch committed its events (the webhook worker's poke). */
  onEvents: () => void;
  /** The requests in flight, which each next batch waits for a pause in (./foreground.ts). */
  foreground?: Foreground;
}

export class ConnectionDeletions {
  /** The deletions this instance works on now, by id (a handful at most: one per connection being deleted). */
  private readonly working = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  private readonly foreground: Foreground;

  constructor(private readonly d: DeletionDeps) {
    this.foreground = d.foreground ?? new Foreground();
  }

  /** Resumes the unfinished deletions now, and looks for any left behind every few seconds. */
  start(): void {
    this.timer = setInterval(() => this.resumeAll(), LOOK_EVERY_MS);
    this.timer.unref();
    this.resumeAll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.all(this.working.values());
  }

  /**
   * Starts deleting the connection and runs its first batch before answering: a connection with fewer accounts
   * than FIRST_BATCH is gone when this returns (status `done`); a larger one goes on in the background (`running`).
   */
  async request(connection: Connection): Promise<ConnectionDeletion> {
    const started = await this.d.store.startConnectionDeletion({
      id: newId('cdel'),
      connectionId: connection.id,
      requestedAt: Date.now(),
    });
    if (!started) throw notFound('Connection');
    await this.work(started, 1);
    return (await this.d.store.getConnectionDeletion(started.id)) ?? started;
  }

  get(id: string): Promise<ConnectionDeletion | undefined> {
    return this.d.store.getConnectionDeletion(id);
  }

  private resumeAll(): void {
    if (this.stopped) return;
    this.d.store
      .runningConnectionDeletions()
      .then((list) => {
        for (const deletion of list) if (!this.working.has(deletion.id)) void this.work(deletion);
      })
      .catch((e: unknown) => this.d.log.error({ err: (e as Error).message }, 'could not list connection deletions'));
  }

  /**
   * Works on the deletion until it is done, the lease is lost, or the service stops. With `firstBatches`, returns
   * after that many full batches (or at the end) and lets the rest go on in the background.
   */
  private work(deletion: ConnectionDeletion, firstBatches?: number): Promise<void> {
    let reached: () => void = () => {};
    const early = firstBatches === undefined ? undefined : new Promise<void>((r) => (reached = r));
    const task = this.run(deletion, firstBatches ?? Infinity, () => reached())
      .catch((e: unknown) => {
        if (!(e instanceof LeaseLost))
          this.d.log.error(
            { deletion: deletion.id, err: (e as Error).message },
            'connection deletion failed; retrying',
          );
      })
      .finally(() => {
        this.working.delete(deletion.id);
        reached();
      });
    this.working.set(deletion.id, task);
    return early ?? task;
  }

  private async run(deletion: ConnectionDeletion, firstBatches: number, reached: () => void): Promise<void> {
    const { store, batchSize } = this.d;
    const budget = this.d.batchBudgetMs ?? BATCH_BUDGET_MS;
    // The first batch is small: how long a batch takes on this store is not known yet (on SQLite 500 accounts of
    // a large connection took 120 ms, in the request or at a restart's resume); the next ones grow while fast.
    let size = Math.min(batchSize, FIRST_BATCH);
    const owner = leaseOwner();
    const now = Date.now();
    if (!(await store.claimConnectionDeletion(deletion.id, owner, now, now + LEASE_MS, leaseOwnerGone))) return;
    const connection = { name: deletion.connectionName, connector: deletion.connector };
    // Each batch goes on after the last account of the one before (store.takeAccountsOfConnection); the deletion
    // finishes only after a batch from the first account found none.
    let after: AccountKey | undefined;
    for (let batches = 1; !this.stopped; batches++) {
      const at = Date.now();
      const started = performance.now();
      const wanted = size;
      const from = after;
      const accounts = await store.transaction(async (tx) => {
        const accounts = await tx.takeAccountsOfConnection(deletion.connectionId, wanted, from);
        if (accounts.length) {
          await tx.addWebhookEvents(
            accounts.map((a) =>
              accountEvent('connected_account.deleted', a, connection, 'its connection was deleted', at),
            ),
          );
        }
        if (!(await tx.advanceConnectionDeletion(deletion.id, owner, accounts.length, at, at + LEASE_MS)))
          throw new LeaseLost();
        return accounts;
      });
      const taken = accounts.length;
      // After a short batch (the end of the pass), the next one starts from the first account again.
      after = taken === wanted ? lastInOrder(accounts) : undefined;
      if (taken) this.d.onEvents();
      else if (from === undefined && (await store.finishConnectionDeletion(deletion.id, owner, Date.now()))) {
        this.d.log.info(
          { deletion: deletion.id, connection: deletion.connectionName },
          'connection deleted with its accounts',
        );
        return;
      }
      // A full batch means more may follow: past the first ones, the rest goes on without the caller.
      if (taken === wanted && batches >= firstBatches) reached();
      size = nextBatchSize(size, performance.now() - started, budget, batchSize);
      // A short batch took the last accounts: the next step ends the deletion, which the request that asked for it
      // may be waiting for (a small connection is answered done), so it does not wait for that request to end.
      if (taken === wanted) await this.foreground.gap();
      else await nextTurn();
    }
  }
}
