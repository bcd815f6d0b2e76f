import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashes for dashboard sign-in: scrypt from node:crypto, stored as
 * `scrypt$<log2 N>$<r>$<p>$<salt>$<hash>` (base64url) so the cost can be raised later without breaking
 * existing hashes. N=2^15, r=8, p=3 is OWASP's scrypt setting with 32 MiB of memory per hash, which
 * bounds what concurrent sign-in attempts can allocate.
 */
const COST = { logN: 15, r: 8, p: 3 };
const KEY_BYTES = 32;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** logN, r, p, maxmem: 128 * r * 2 ** logN * 2 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, COST.logN, COST.r, COST.p);
  return ['scrypt', COST.logN, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Compares in constant time; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![logN, r, p].every((n) => Number.isInteger(n) && n > 0) || logN > 20 || r > 32 || p > 16) return false;
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (expected.length !== KEY_BYTES) return false;
  const actual = await derive(password, Buffer.from(parts[4]!, 'base64url'), logN, r, p);
  return timingSafeEqual(actual, expected);
}

let dummy: Promise<string> | undefined;
/** A hash to check against when the username is unknown, so timing does not reveal which names exist. */
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  return dummy;
}

/** Refused before any hashing: too many hashes at once (for this user, this address, or the whole service). */
export class HashBusyError extends Error {
  constructor(
    readonly scope: 'user' | 'address' | 'service',
    readonly retryAfterSeconds: number,
  ) {
    super(`too many password checks in progress (${scope})`);
  }
}

/**
 * Bounds password hashing. Each scrypt holds one of libuv's four pool threads (and 32 MiB) for tens of
 * milliseconds to seconds, and the pool also serves file I/O and `dns.lookup`: an unbounded burst of sign-ins
 * would queue every other use behind it, and take the CPU from the event loop. One hash runs at a time (a core
 * and three pool threads stay for everything else), at most `queueLimit` wait, and each user name and each
 * address may have at most `perKey` checks in flight; beyond that an attempt is refused at once, without hashing
 * — `admit` says so before the attempt costs anything else.
 */
export class HashGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly inFlight = new Map<string, number>();

  constructor(
    readonly concurrency = 1,
    readonly queueLimit = 8,
    readonly perKey = 2,
  ) {}

  /** Throws HashBusyError when a check for these keys would be refused now. */
  admit(keys: { user: string; address: string }): void {
    if ((this.inFlight.get(`u:${keys.user}`) ?? 0) >= this.perKey) throw new HashBusyError('user', 1);
    if ((this.inFlight.get(`a:${keys.address}`) ?? 0) >= this.perKey) throw new HashBusyError('address', 1);
    if (this.running >= this.concurrency && this.waiting.length >= this.queueLimit)
      throw new HashBusyError('service', 2);
  }

  /** Runs `hash` under the limits, or throws HashBusyError without running it. */
  async run<T>(keys: { user: string; address: string }, hash: () => Promise<T>): Promise<T> {
    const userKey = `u:${keys.user}`;
    const addressKey = `a:${keys.address}`;
    this.admit(keys);
    const add = (k: string, d: number) => {
      const n = (this.inFlight.get(k) ?? 0) + d;
      if (n > 0) this.inFlight.set(k, n);
      else this.inFlight.delete(k);
    };
    add(userKey, 1);
    add(addressKey, 1);
    try {
      if (this.running >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
      else this.running++;
      try {
        return await hash();
      } finally {
        const next = this.waiting.shift();
        if (next) next();
        else this.running--;
      }
    } finally {
      add(userKey, -1);
      add(addressKey, -1);
    }
  }
}
