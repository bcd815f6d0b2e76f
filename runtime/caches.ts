/**
 * Every per-process cache of the service is one of these: an LRU (the `lru-cache` library) with a size limit from
 * the configuration, and for decrypted secrets a time to live, so that memory is bounded by settings rather than
 * by how many users a process has served. Each counts its hits, misses, evictions and operations; `/metrics`
 * reports them (runtime/metrics.ts) and the scale tests read the operation counts to check that an invalidation
 * costs O(1) per account (docs/scale.md).
 */
import { LRUCache } from 'lru-cache';

/** What lru-cache keeps: any value but undefined and null (its own constraint). */
type Key = NonNullable<unknown>;
type Value = NonNullable<unknown>;

export interface CacheOptions<K extends Key, V extends Value> {
  /** Entries kept at most; the least recently used goes first. */
  max: number;
  /** An entry is dropped this long after it was set (removed by a timer, not only when next read). */
  ttlMs?: number;
  /** Called when an entry leaves the cache for any reason (evicted, replaced, deleted, expired, cleared). */
  onRemove?: (value: V, key: K) => void;
}

export class BoundedCache<K extends Key, V extends Value> {
  private readonly lru: LRUCache<K, V>;
  hits = 0;
  misses = 0;
  /** Entries pushed out by the size limit or the time to live. */
  evictions = 0;
  /** Every get, set, delete and clear: what the scale tests count (a clear counts as one per entry it drops). */
  operations = 0;

  constructor(
    readonly name: string,
    readonly options: CacheOptions<K, V>,
  ) {
    const onRemove = options.onRemove;
    this.lru = new LRUCache<K, V>({
      max: Math.max(1, options.max),
      ...(options.ttlMs ? { ttl: options.ttlMs, ttlAutopurge: true } : {}),
      dispose: (value, key, reason) => {
        if (reason === 'evict' || reason === 'expire') this.evictions++;
        if (onRemove && reason !== 'set') onRemove(value, key);
      },
    });
  }

  get max(): number {
    return this.lru.max;
  }

  get size(): number {
    return this.lru.size;
  }

  /** The value, counted as a hit or a miss, and made the most recently used. */
  get(key: K): V | undefined {
    this.operations++;
    const v = this.lru.get(key);
    if (v === undefined) this.misses++;
    else this.hits++;
    return v;
  }

  /** The value without counting it or changing its place (to find what else to drop on an invalidation). */
  peek(key: K): V | undefined {
    this.operations++;
    return this.lru.peek(key);
  }

  /** `ttlMs`: this entry's own time to live (a DNS answer's), in place of the cache's. */
  set(key: K, value: V, ttlMs?: number): void {
    this.operations++;
    this.lru.set(key, value, ttlMs === undefined ? undefined : { ttl: ttlMs });
  }

  delete(key: K): boolean {
    this.operations++;
    return this.lru.delete(key);
  }

  clear(): void {
    this.operations += this.lru.size + 1;
    this.lru.clear();
  }

  keys(): IterableIterator<K> {
    return this.lru.keys();
  }
}

/** A cache of any kind, as the metrics and the tests read it. */
export type AnyCache = BoundedCache<string, NonNullable<unknown>>;

/**
 * The caches of one service instance (the account service's, the token verifier's, the MCP sessions'): reported by
 * that instance's `/metrics` together with the process-wide ones below.
 */
export class CacheSet {
  private readonly own: Array<AnyCache> = [];

  create<K extends Key, V extends Value>(name: string, options: CacheOptions<K, V>): BoundedCache<K, V> {
    const cache = new BoundedCache<K, V>(name, options);
    this.own.push(cache as unknown as AnyCache);
    return cache;
  }

  /** This instance's caches, then the process-wide ones (those made so far). */
  all(): Array<AnyCache> {
    return [...this.own, ...processWide()];
  }
}

/** Limits of the process-wide caches, which module-level code keeps (parsed URLs, DNS answers, discovery documents). */
export interface ProcessCacheLimits {
  /** Parsed base URLs and DNS answers: keyed by hosts that account fields name (a support desk's domain). */
  hosts: number;
  /** OAuth discovery documents, by connection. */
  connections: number;
}

const limits: ProcessCacheLimits = { hosts: 10_000, connections: 10_000 };
const lazy: Array<{ cache?: AnyCache }> = [];

function processWide(): Array<AnyCache> {
  return lazy.flatMap((e) => (e.cache ? [e.cache] : []));
}

/**
 * A process-wide cache, made on first use with the limit the configuration gives (module code runs before the
 * configuration is read). Returns the function to call for it on each use.
 */
export function processCache<K extends Key, V extends Value>(
  name: string,
  limit: keyof ProcessCacheLimits,
  options: Omit<CacheOptions<K, V>, 'max'> = {},
): () => BoundedCache<K, V> {
  const entry: { cache?: BoundedCache<K, V> } = {};
  lazy.push(entry as { cache?: AnyCache });
  return () => (entry.cache ??= new BoundedCache<K, V>(name, { ...options, max: limits[limit] }));
}

/**
 * Sets the process-wide limits (the service does at start, from its configuration). A cache whose limit changes
 * starts over empty with the new one; several services in one process (tests) share the last limits set.
 */
export function setProcessCacheLimits(next: ProcessCacheLimits): void {
  const changed = next.hosts !== limits.hosts || next.connections !== limits.connections;
  Object.assign(limits, next);
  if (!changed) return;
  for (const entry of lazy) {
    entry.cache?.clear();
    entry.cache = undefined;
  }
}
