/**
 * Batches sized by time. Work proportional to the population (a connection's accounts deleted, the outbox moved into
 * deliveries) goes in batches, one transaction each, with a yield to the event loop between them. How long a batch
 * takes depends on the store and its size (on SQLite a batch holds the event loop: deleting 500 accounts of a
 * connection holding a million took about 120 ms, each row touching the table's eight indexes, the cascades'
 * indexes and the counts; bench/scale.ts), so a fixed count either stalls every other request or crawls.
 *
 * A batch that took longer than the budget makes the next one smaller in proportion, down to MIN_BATCH; one that
 * took under half of it makes the next one twice as large, up to the configured size.
 */

/**
 * How long one batch's transaction should hold the store (on SQLite the event loop too), in ms. A request that
 * arrives during a batch waits for it: with 25 ms, tool calls beside a delete of a million accounts had a p99 of
 * 1.9–2.4× their quiet figure (13–19 ms); with 10 ms, 1.14×, and the delete took 41 s instead of 31 s (bench/scale.ts).
 */
export const BATCH_BUDGET_MS = 10;
/** The smallest batch: below it the per-transaction cost dominates. */
export const MIN_BATCH = 10;

/** The next batch's size after one of `size` took `tookMs`, at most `max`. */
export function nextBatchSize(size: number, tookMs: number, budgetMs: number, max: number): number {
  if (tookMs > budgetMs) return Math.max(MIN_BATCH, Math.min(size - 1, Math.floor((size * budgetMs) / tookMs)));
  if (tookMs < budgetMs / 2) return Math.min(max, size * 2);
  return size;
}
