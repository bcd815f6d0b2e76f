import { randomBytes } from 'node:crypto';

/** A random id with a readable prefix, e.g. `conn_0k3j5…`: 128 random bits in base 36. */
export function newId(prefix: string): string {
  const n = BigInt(`0x${randomBytes(16).toString('hex')}`);
  return `${prefix}_${n.toString(36).padStart(25, '0')}`;
}

/** A URL-safe random secret of the given number of bytes. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
