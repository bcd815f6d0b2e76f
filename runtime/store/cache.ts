import type { ChangeFeed } from './changes.ts';

/**
 * Rows read through the store, kept until the store's change feed says they may have changed (changes.ts):
 * at once for this process's writes, within the notification delay (milliseconds) for another process's on
 * PostgreSQL, and before the next read for another process's on SQLite. While the feed is not live (not started,
 * or its PostgreSQL connection is down) nothing is served from memory.
 *
 * A read that was under way when an invalidation arrived is returned but not kept (the generation check), so an
 * old row read just before a change can never be cached after it.
 */
export class RowCache<V> {
  private entries = new Map<string, V>();
  private generation = 0;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly maxEntries = 50_000,
  ) {}

  /**
   * The cached value. `polled`: the caller polled the feed itself just before (synchronously), so that one
   * request's several reads (a connection and its account) check for other processes' changes once.
   */
  get(key: string, polled = false): V | undefined {
    if (!polled) this.feed.poll();
    if (!this.feed.live) return undefined;
    return this.entries.get(key);
  }

  /** The cached value without checking the feed (to find what else to drop on an invalidation). */
  peek(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** The cached value, or `load()`'s, kept unless an invalidation happened meanwhile. Misses are not kept. */
  async load(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const value = await load();
    if (value !== undefined && generation === this.generation) this.set(key, value);
    return value;
  }

  /** Keeps `value` under several keys (a row found by id and by name), if no invalidation came since `generation`. */
  setAll(keys: string[], value: V, generation: number): void {
    if (generation !== this.generation) return;
    for (const key of keys) this.set(key, value);
  }

  /** The current generation, to pass to `setAll` after a read. */
  get current(): number {
    return this.generation;
  }

  private set(key: string, value: V): void {
    if (!this.feed.live) return;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, value);
  }

  delete(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
