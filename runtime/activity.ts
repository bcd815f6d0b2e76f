import type { Logger } from './log.ts';
import type { ActivityRecord, Store } from './store/types.ts';

/**
 * Records tool executions and proxy calls (no payloads, no secrets) for the dashboard's activity page.
 * Writes are batched off the request path: one insert per second at most, and a bounded buffer.
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
  ) {}

  record(r: ActivityRecord): void {
    if (this.buffer.length >= this.maxBuffer) this.buffer.shift();
    this.buffer.push(r);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.flushing) await this.flushing;
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
