import { randomBytes, randomFillSync } from 'node:crypto';

// Ids are made on every request (request ids, execution ids); drawing their randomness from a pooled
// buffer replaces a syscall-backed randomBytes() call per id with a few bytes of a 4 KiB refill. The bytes are read
// from the pool where they lie: a `subarray` view per id was a Buffer object made and dropped each time (0.8k of a
// proxied request's 288k instructions, which makes two ids).
const POOL = Buffer.alloc(4096);
let offset = POOL.length;

/** Where `n` unused random bytes start in POOL (refilled first when fewer are left); they count as used. */
function reserve(n: number): number {
  if (offset + n > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const at = offset;
  offset += n;
  return at;
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const ALPHABET_CODES = Buffer.from(ALPHABET, 'latin1');

/**
 * Where an id's characters are put together before they become one string. Built by `+=`, an id was a chain of
 * 17 or more string pieces (V8 joins strings longer than 12 characters by pointing at both halves rather than
 * copying them), about 800 bytes of heap for 29 characters: the proxy keeps each request's id until its activity
 * row is written, up to a few hundred of them at a time under load, and a young-generation collection copies every
 * piece of each. Written here and read back once, an id is one flat
 * string.
 */
const SCRATCH = Buffer.alloc(64);
/** Ids are made of prefixes the code names (`conn`, `prx`, …): longer ones take the slow path. */
const MAX_PREFIX = 24;

/** Writes `prefix_` at the start of SCRATCH; the offset after it. */
function writePrefix(prefix: string): number {
  const n = SCRATCH.write(prefix, 0, 'latin1');
  SCRATCH[n] = 0x5f; // _
  return n + 1;
}

/** Writes `count` characters drawn uniformly from ALPHABET at `at`; the offset after them. */
function writeRandom(at: number, count: number): number {
  for (let i = 0; i < count; i++) {
    let b: number;
    // 252 is the largest multiple of 36 below 256: rejecting bytes above it keeps every character uniform.
    do b = POOL[reserve(1)]!;
    while (b >= 252);
    SCRATCH[at + i] = ALPHABET_CODES[b % 36]!;
  }
  return at + count;
}

/** A random id with a readable prefix, e.g. `conn_0k3j5…`: 25 base-36 characters (about 129 random bits). */
export function newId(prefix: string): string {
  if (prefix.length > MAX_PREFIX) return `${prefix}_${newId('').slice(1)}`;
  const end = writeRandom(writePrefix(prefix), 25);
  return SCRATCH.toString('latin1', 0, end);
}

/** The width of the time in a sortable id: base 36, enough until the year 5188. */
const TIME_DIGITS = 9;
const TIME_LIMIT = 36 ** TIME_DIGITS;

/**
 * A random id that sorts by creation time, in the same form as `newId` (prefix, 25 base-36 characters): the
 * time in milliseconds (9 characters, enough until the year 5188), then 16 random characters (about 82 bits).
 * For the ids of records written on every call (tool executions, proxied requests): the index of a key made of
 * random characters takes each new row at a random place, so an insert touches pages all over an index that
 * grows without bound (measured with the bench: an activity row cost SQLite about 15 µs at 200 000 rows and
 * more as the table grew, against 3 µs for a key that only grows); a time-ordered key appends at the end.
 */
export function newSortableId(prefix: string, now = Date.now()): string {
  if (prefix.length > MAX_PREFIX || !(now >= 0 && now < TIME_LIMIT) || !Number.isInteger(now)) {
    return `${prefix}_${now.toString(36).padStart(TIME_DIGITS, '0')}${newId('').slice(1, 17)}`;
  }
  const start = writePrefix(prefix);
  let t = now;
  for (let i = TIME_DIGITS - 1; i >= 0; i--) {
    SCRATCH[start + i] = ALPHABET_CODES[t % 36]!;
    t = Math.floor(t / 36);
  }
  const end = writeRandom(start + TIME_DIGITS, 16);
  return SCRATCH.toString('latin1', 0, end);
}

/** A short random request id (64 bits, hex). */
export function requestId(): string {
  const at = reserve(8);
  return POOL.toString('hex', at, at + 8);
}

/** A URL-safe random secret of the given number of bytes (not pooled: secrets get their own draw). */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
