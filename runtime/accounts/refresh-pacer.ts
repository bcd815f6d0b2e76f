import type { BoundedCache, CacheSet } from '../caches.ts';
import type { RefreshPacing } from '../config.ts';
import { UpstreamFailure } from '../../core/errors.ts';

/** What came of a request to a token endpoint. */
export type RefreshOutcome = 'success' | 'refused' | 'failed';

/** Outcomes a connection needs before it can be paced, and the weight of the newest in its failure share. */
const MIN_OUTCOMES = 16;
const WEIGHT = 1 / 16;
/** Paced while at least this share of its recent refreshes was refused or failed. */
const FAILING = 0.5;

interface Health {
  /** Share of recent refreshes that were refused or failed, weighted towards the newest (0 … 1). */
  failing: number;
  outcomes: number;
}

interface Gate {
  running: number;
  waiting: Array<() => void>;
}

/**
 * A bulkhead for token refreshes, per connection. A refresh runs at once while the connection's token endpoint
 * answers normally, however many there are: a million users' hourly tokens need hundreds a second, and each
 * mostly waits for the provider. When most of a connection's recent refreshes were refused (`invalid_grant`: a
 * provider revoking grants in bulk) or failed (the endpoint down), its refreshes run `concurrency` at a time and the
 * rest wait in a bounded queue. Each of those costs CPU for little (a refused refresh writes the account, its
 * event and a reconnect link), and without a bound a burst of them on one connection held every other request on
 * the event loop. Pacing changes no outcome: each refresh still runs, in turn; a successful one counts towards
 * ending it. The health of each connection is kept in a bounded LRU (one lost is a connection starting afresh);
 * a gate exists only while refreshes are running or waiting on it.
 */
export class RefreshPacer {
  private readonly health: BoundedCache<string, Health>;
  /**
   * Connections with a refresh running or waiting, and only those (release() deletes an idle gate): bounded by the
   * refreshes in flight, which requests in flight bound, not by how many connections or accounts exist.
   */
  private readonly gates = new Map<string, Gate>();
  /** Refreshes that waited for a slot, and those answered 503 because the queue was full (read by /metrics). */
  readonly counters = { waited: 0, refused_queue_full: 0 };

  constructor(
    private readonly pacing: RefreshPacing,
    caches: CacheSet,
    connections: number,
  ) {
    this.health = caches.create('refresh_health', { max: connections });
  }

  /** Whether the connection's refreshes are paced now. */
  paced(connectionId: string): boolean {
    const h = this.health.get(connectionId);
    return h !== undefined && h.outcomes >= MIN_OUTCOMES && h.failing >= FAILING;
  }

  /** Counts what a refresh on the connection came to. */
  record(connectionId: string, outcome: RefreshOutcome): void {
    const h = this.health.get(connectionId) ?? { failing: 0, outcomes: 0 };
    h.failing += ((outcome === 'success' ? 0 : 1) - h.failing) * WEIGHT;
    h.outcomes = Math.min(h.outcomes + 1, MIN_OUTCOMES);
    this.health.set(connectionId, h);
    // Healthy again: whoever waits may go.
    if (outcome === 'success' && !this.paced(connectionId)) this.release(connectionId, Infinity);
  }

  /** Runs `refresh` now, or when a slot of the connection's paced gate frees up. */
  async run<T>(connectionId: string, refresh: () => Promise<T>): Promise<T> {
    let gate = this.gates.get(connectionId);
    if (!gate) this.gates.set(connectionId, (gate = { running: 0, waiting: [] }));
    if (gate.running >= this.pacing.concurrency && this.paced(connectionId)) {
      if (gate.waiting.length >= this.pacing.queue) {
        this.counters.refused_queue_full++;
        throw new UpstreamFailure(
          'refresh_paced',
          'Most token refreshes on this connection are being refused or are failing, and too many are waiting their turn; try again shortly',
          503,
        );
      }
      this.counters.waited++;
      // Resolved by release(), which hands over a slot it has already counted as running.
      await new Promise<void>((resolve) => gate.waiting.push(resolve));
    } else gate.running++;
    try {
      return await refresh();
    } finally {
      gate.running--;
      this.release(connectionId, this.paced(connectionId) ? this.pacing.concurrency - gate.running : Infinity);
    }
  }

  /** Hands up to `slots` free slots to waiting refreshes; forgets the gate once nothing runs or waits on it. */
  private release(connectionId: string, slots: number): void {
    const gate = this.gates.get(connectionId);
    if (!gate) return;
    for (let n = 0; n < slots && gate.waiting.length; n++) {
      gate.running++;
      gate.waiting.shift()!();
    }
    if (gate.running === 0 && gate.waiting.length === 0) this.gates.delete(connectionId);
  }

  /** Refreshes running and waiting on the connection's gate (tests). */
  load(connectionId: string): { running: number; waiting: number } {
    const gate = this.gates.get(connectionId);
    return { running: gate?.running ?? 0, waiting: gate?.waiting.length ?? 0 };
  }
}
