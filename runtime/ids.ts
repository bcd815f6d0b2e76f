import { randomBytes, randomFillSync } from 'node:crypto';

// Ids are made on every request (request ids, execution ids); drawing their randomness from a pooled
// buffer replaces a syscall-backed randomBytes() call per id with a slice of a 4 KiB refill.
const POOL = Buffer.alloc(4096);
let offset = POOL.length;

function take(n: number): Buffer {
  if (offset + n > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const out = POOL.subarray(offset, offset + n);
  offset += n;
  return out;
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** A random id with a readable prefix, e.g. `conn_0k3j5…`: 25 base-36 characters (about 129 random bits). */
export function newId(prefix: string): string {
  const bytes = take(25);
  let out = `${prefix}_`;
  // 252 is the largest multiple of 36 below 256: rejecting bytes above it keeps every character uniform.
  for (let i = 0; i < 25; i++) {
    let b = bytes[i]!;
    while (b >= 252) b = take(1)[0]!;
    out += ALPHABET[b % 36];
  }
  return out;
}

/**
 * A random id that sorts by creation time, in the same form as `newId` (prefix, 25 base-36 characters): the
 * time in milliseconds (9 characters, enough until the year 5188), then 16 random characters (about 82 bits).
 * For the ids of records written on every call (tool executions, proxied requests): the index of a key made of
 * random characters takes each new row at a random place, so an insert touches pages all over an index that
 * grows without bound (measured in bench/RESULTS.md: an activity row cost SQLite about 15 µs at 200 000 rows and
 * more as the table grew, against 3 µs for a key that only grows); a time-ordered key appends at the end.
 */
export function newSortableId(prefix: string, now = Date.now()): string {
  const bytes = take(16);
  let out = `${prefix}_${now.toString(36).padStart(9, '0')}`;
  for (let i = 0; i < 16; i++) {
    let b = bytes[i]!;
    while (b >= 252) b = take(1)[0]!;
    out += ALPHABET[b % 36];
  }
  return out;
}

/** A short random request id (64 bits, hex). */
export function requestId(): string {
  return take(8).toString('hex');
}

/** A URL-safe random secret of the given number of bytes (not pooled: secrets get their own draw). */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
