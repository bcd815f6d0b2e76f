import type { Logger } from './log.ts';
import type { ActivityRecord, Store } from './store/types.ts';

/**
 * Records tool executions and proxy calls (no payloads, no secrets) for the dashboard's activity page.
 * Writes are batched off the request path: one batch insert a second (`intervalMs`), or at once when `batchSize`
 * records are waiting, so a busy second does not pile up. The batch is kept small because SQLite writes it on the
 * event loop: 250 rows hold it up for about a millisecond, where 1 000 held every request in flight for several
 * (the proxy's p99 under load), and a transaction's own cost over 250 rows is negligible.
 * `flush()` on shutdown writes what is left (the service awaits it before exiting on SIGTERM). Only while the store
 * refuses writes does the bounded buffer drop the oldest.
 */
export class ActivityRecorder {
  private buffer: ActivityRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private store: Store,
    private log: Logger,
    private intervalMs = 1_000,
    private maxBuffer = 10_000,
    private batchSize = 250,
  ) {}

  record(r: ActivityRecord): void {
    if (this.buffer.length >= this.maxBuffer) this.buffer.shift();
    this.buffer.push(r);
    if (this.buffer.length >= this.batchSize && !this.flushing) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // Until no write is under way: a caller returning while another's batch is still being written could let the
    // store close under it (shutdown).
    while (this.flushing) await this.flushing;
    if (!this.buffer.length) return;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.store
      .recordActivity(batch)
      .catch((e: Error) => this.log.error({ err: e.message }, 'could not record activity'))
      .finally(() => (this.flushing = undefined));
    await this.flushing;
  }
}
