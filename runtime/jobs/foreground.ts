/**
 * The requests in flight, for the background work to give way to. Work proportional to the population (a
 * connection's accounts deleted, the webhook outbox moved into deliveries, expired rows swept) goes in batches
 * sized by time (./batch-size.ts). Between two batches it used to yield one turn of the event loop; a request
 * takes several turns (its body, the store, the provider's answer, the response), and a batch could run at each of
 * them: on SQLite, where a batch holds the event loop, a tool call beside a connection delete could wait for
 * several (bench/scale.ts, the delete of 1,000,000 accounts: calls 3.24x their quiet p99, code b5164fc).
 *
 * Now a batch starts when no request is in flight, or once it has waited `maxWaitMs`: a request that is being
 * served finishes without a batch in between (at most one that had already started), and under a load that never
 * pauses the background work still moves, a batch per `maxWaitMs`. Event streams that stay open (an MCP client's
 * GET stream) are let go of once open (`release`): they are not work in progress.
 *
 * Only where a batch holds the event loop (SQLite). On PostgreSQL a batch is mostly waiting for the database, and
 * requests go on meanwhile; there giving way only slowed the work (a connection delete of 1,000,000 accounts beside
 * a steady client went from about 4,500 to 420 accounts a second), so the service passes a `maxWaitMs` of 0 and
 * a batch waits one turn, as before.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long a batch waits for a pause in the requests, at most (where batches hold the event loop: SQLite). */
export const GIVE_WAY_MAX_MS = 50;

/** A response that can end: node's HTTP/1 and HTTP/2 responses. */
interface Closable {
  once(event: 'close', listener: () => void): unknown;
}

export class Foreground {
  private inFlight = 0;
  private readonly released = new WeakSet<Closable>();
  private readonly waiting = new Set<() => void>();
  /** Batches that waited for a pause, and those that waited `maxWaitMs` without one (for tests and /metrics). */
  readonly stats = { waits: 0, timedOut: 0 };

  /** @param maxWaitMs how long a batch waits for a pause at most (tests give Infinity). */
  constructor(private readonly maxWaitMs = GIVE_WAY_MAX_MS) {}

  /** Counts the request until its response closes (ends, or its connection goes). */
  track(res: Closable): void {
    this.inFlight++;
    res.once('close', () => {
      if (!this.released.has(res)) this.done();
    });
  }

  /** The response stays open (an event stream): it no longer counts as a request in flight. */
  release(res: Closable): void {
    if (this.released.has(res)) return;
    this.released.add(res);
    this.done();
  }

  /** Requests being served now. */
  get active(): number {
    return this.inFlight;
  }

  /**
   * Resolves at the next turn of the event loop with no request in flight, or after `maxWaitMs`: what a batch of
   * background work awaits before it starts.
   */
  async gap(): Promise<void> {
    await nextTurn();
    if (this.inFlight === 0 || this.maxWaitMs <= 0) return;
    this.stats.waits++;
    const deadline = performance.now() + this.maxWaitMs;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) {
        this.stats.timedOut++;
        return;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiting.delete(wake);
          resolve();
        };
        const timer = Number.isFinite(left) ? setTimeout(wake, left) : undefined;
        this.waiting.add(wake);
      });
      // Requests that arrived in the same turn as the last one ended are served first.
      await nextTurn();
      if (this.inFlight === 0) return;
    }
  }

  private done(): void {
    if (--this.inFlight > 0) return;
    for (const wake of [...this.waiting]) wake();
  }
}
