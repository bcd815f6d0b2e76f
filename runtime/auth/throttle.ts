/**
 * Failed-attempt throttling for credential checks (`/oauth/token`, dashboard sign-in), kept in the store so every
 * process on it shares one count per key.
 *
 * - **Counted before the check.** `reserve` counts an attempt before the secret or password is checked (and
 *   refuses it while the key is blocked); `settle` then forgives a success. Simultaneous attempts cannot all
 *   pass a check made before any of them failed: each one is a compare-and-set on the stored count.
 * - **Blocks** begin after `free` attempts and double with each further one — 1 s, 2 s, 4 s, … — up to
 *   `maxBlockMs` (15 minutes).
 * - **Slow decay.** The count does not reset when a block ends: it drops by one for every `decayMs` (15 minutes)
 *   without an attempt. A guesser who waits out each block keeps it at the cap (about four guesses an hour),
 *   while a user who mistyped a few times is forgiven within the hour.
 */
import type { Store, ThrottleState } from '../store/types.ts';

export interface ThrottleOptions {
  /** Attempts allowed before the first block. */
  free: number;
  maxBlockMs?: number;
  decayMs?: number;
}

export const MAX_BLOCK_MS = 15 * 60_000;

export class Throttle {
  private readonly free: number;
  private readonly maxBlockMs: number;
  private readonly decayMs: number;
  private lastSweep = 0;

  constructor(
    private readonly store: Store,
    /** Names the keys of this throttle in the shared table (`client:`, `address:` …). */
    private readonly scope: string,
    options: ThrottleOptions,
  ) {
    this.free = options.free;
    this.maxBlockMs = options.maxBlockMs ?? MAX_BLOCK_MS;
    this.decayMs = options.decayMs ?? MAX_BLOCK_MS;
  }

  /** The block that follows the `count`-th attempt (0 while within the free ones). */
  blockAfter(count: number): number {
    if (count <= this.free) return 0;
    return Math.min(this.maxBlockMs, 1000 * 2 ** Math.min(30, count - this.free - 1));
  }

  private decayed(s: ThrottleState, now: number): number {
    return Math.max(0, s.count - Math.floor(Math.max(0, now - s.lastAt) / this.decayMs));
  }

  /** Milliseconds the key must still wait, or 0. */
  async blockedFor(key: string, now = Date.now()): Promise<number> {
    const s = await this.store.getThrottle(this.scope + key);
    return s ? Math.max(0, s.blockedUntil - now) : 0;
  }

  /**
   * Counts an attempt for `key` before it is checked. Returns 0 when it may go ahead, or the milliseconds the key
   * is still blocked (the attempt is then not counted and must be refused).
   */
  async reserve(key: string, now = Date.now()): Promise<number> {
    const k = this.scope + key;
    for (;;) {
      const s = await this.store.getThrottle(k);
      if (s && s.blockedUntil > now) return s.blockedUntil - now;
      const count = (s ? this.decayed(s, now) : 0) + 1;
      const block = this.blockAfter(count);
      const next = { count, lastAt: now, blockedUntil: block ? now + block : 0, version: (s?.version ?? 0) + 1 };
      if (await this.store.compareAndSetThrottle(k, s?.version, next)) break;
    }
    if (now - this.lastSweep > this.decayMs) {
      this.lastSweep = now;
      // States that have decayed to nothing and block nothing: forgotten.
      void this.store.deleteStaleThrottles(now - this.decayMs * (this.free + 20)).catch(() => {});
    }
    return 0;
  }

  /**
   * After a reserved attempt succeeded: `forget` clears the key (the right secret for a client id or user name),
   * otherwise the one attempt is taken back (an address that signed in is not a guesser for it).
   */
  async settleSuccess(key: string, mode: 'forget' | 'refund', now = Date.now()): Promise<void> {
    const k = this.scope + key;
    for (;;) {
      const s = await this.store.getThrottle(k);
      if (!s) return;
      let next: ThrottleState | null = null;
      if (mode === 'refund') {
        const count = Math.max(0, this.decayed(s, now) - 1);
        next = count
          ? {
              count,
              lastAt: s.lastAt,
              blockedUntil: this.blockAfter(count) ? s.blockedUntil : 0,
              version: s.version + 1,
            }
          : null;
      }
      if (await this.store.compareAndSetThrottle(k, s.version, next)) return;
    }
  }
}

/**
 * Several throttles an attempt must pass at once (a user name and an address). Reserves in each; when one is
 * blocked, the attempt is refused with the longest wait (what was already counted stays counted).
 */
export async function reserveAll(
  entries: ReadonlyArray<readonly [Throttle, string]>,
  now = Date.now(),
): Promise<number> {
  let wait = 0;
  for (const [t, key] of entries) {
    wait = Math.max(wait, await t.blockedFor(key, now));
  }
  if (wait > 0) return wait;
  for (const [t, key] of entries) {
    wait = Math.max(wait, await t.reserve(key, now));
    if (wait > 0) return wait;
  }
  return 0;
}
