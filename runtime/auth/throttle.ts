/**
 * Failed-attempt throttling for credential checks. After `free` failures within `windowMs` a key is blocked
 * for an exponentially growing time (capped), so brute force on /oauth/token is slowed to a crawl without
 * locking out a legitimate client for long.
 */
export class Throttle {
  private failures = new Map<string, { count: number; first: number; blockedUntil: number }>();

  constructor(
    private readonly free = 5,
    private readonly windowMs = 60_000,
    private readonly maxBlockMs = 15 * 60_000,
  ) {}

  /** Milliseconds the key must still wait, or 0. */
  blockedFor(key: string, now = Date.now()): number {
    const f = this.failures.get(key);
    if (!f) return 0;
    return Math.max(0, f.blockedUntil - now);
  }

  fail(key: string, now = Date.now()): void {
    let f = this.failures.get(key);
    if (!f || now - f.first > Math.max(this.windowMs, f.blockedUntil - f.first)) {
      f = { count: 0, first: now, blockedUntil: 0 };
      this.failures.set(key, f);
    }
    f.count++;
    if (f.count > this.free) {
      const block = Math.min(this.maxBlockMs, 1000 * 2 ** (f.count - this.free - 1));
      f.blockedUntil = now + block;
    }
    if (this.failures.size > 100_000) this.sweep(now);
  }

  succeed(key: string): void {
    this.failures.delete(key);
  }

  private sweep(now: number) {
    for (const [k, f] of this.failures)
      if (f.blockedUntil < now && now - f.first > this.windowMs) this.failures.delete(k);
  }
}
