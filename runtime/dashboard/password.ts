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
