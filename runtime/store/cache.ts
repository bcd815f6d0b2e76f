import { LRUCache } from 'lru-cache';
import type { BoundedCache, CacheSet } from '../caches.ts';
import type { ChangeFeed } from './changes.ts';

/**
 * Rows read through the store (connections, connected accounts), kept in a bounded LRU until the store's change
 * feed says they may have changed (changes.ts): at once for this process's writes, within the notification delay
 * (milliseconds) for another process's on PostgreSQL, and before the next read for another process's on SQLite.
 * While the feed is not live (not started, or its PostgreSQL connection is down) nothing is served from memory.
 *
 * Rows are kept by id, and found by their other unique key (a connection's name; an account's connection and
 * identifier) through an index of key to id: invalidating a row is two deletes whatever the cache holds, and an
 * index entry whose row is gone or changed key just misses.
 *
 * A read that was under way when its row was invalidated is returned but not kept: each invalidation is stamped
 * with a generation, kept for the most recent ids (`RECENT`); a read keeps its row only if that row was not
 * invalidated since the read began. When a stamp has been pushed out, reads older than it keep nothing.
 */
export class RowCache<V extends { id: string }> {
  private readonly byId: BoundedCache<string, V>;
  private readonly idByKey: BoundedCache<string, string>;
  private generation = 0;
  /** Generation of each recent invalidation, by id. */
  private readonly invalidated: LRUCache<string, number>;
  /** The newest generation among invalidations no longer in `invalidated` (and of the last clear). */
  private forgottenUpTo = 0;

  constructor(
    private readonly feed: ChangeFeed,
    caches: CacheSet,
    name: string,
    max: number,
    private readonly keyOf: (row: V) => string,
  ) {
    this.byId = caches.create<string, V>(name, { max });
    this.idByKey = caches.create<string, string>(`${name}_by_key`, { max });
    this.invalidated = new LRUCache<string, number>({
      max: RECENT,
      dispose: (generation, _id, reason) => {
        if (reason === 'evict' && generation > this.forgottenUpTo) this.forgottenUpTo = generation;
      },
    });
  }

  /** The row by id; with a `scope`, the feed is polled once for that scope (see ChangeFeed.pollOnce). */
  get(id: string, scope?: object): V | undefined {
    this.feed.pollOnce(scope);
    if (!this.feed.live) return undefined;
    return this.byId.get(id);
  }

  /** The row by its other key. */
  getByKey(key: string, scope?: object): V | undefined {
    this.feed.pollOnce(scope);
    if (!this.feed.live) return undefined;
    const id = this.idByKey.get(key);
    if (id === undefined) return undefined;
    const row = this.byId.get(id);
    return row !== undefined && this.keyOf(row) === key ? row : undefined;
  }

  /** The row without checking the feed or counting a hit. */
  peek(id: string): V | undefined {
    return this.byId.peek(id);
  }

  /** The current generation, to pass to `keep` after a read. */
  get current(): number {
    return this.generation;
  }

  /** Keeps a row read when the generation was `since`, unless it was invalidated meanwhile. */
  keep(row: V, since: number): void {
    if (!this.feed.live) return;
    const stamp = this.invalidated.get(row.id);
    if ((stamp ?? this.forgottenUpTo) > since) return;
    this.byId.set(row.id, row);
    this.idByKey.set(this.keyOf(row), row.id);
  }

  /** Drops one row: O(1), whatever the cache holds. */
  invalidate(id: string): void {
    this.invalidated.set(id, ++this.generation);
    this.byId.delete(id);
  }

  clear(): void {
    this.forgottenUpTo = ++this.generation;
    this.invalidated.clear();
    this.byId.clear();
    this.idByKey.clear();
  }

  get size(): number {
    return this.byId.size;
  }
}

/** Invalidation stamps kept per cache: far more than the reads that can be under way at once. */
const RECENT = 4_096;
