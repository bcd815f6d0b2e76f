import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** Keys by id; new data is sealed with `activeKid`. */
export interface Keyring {
  activeKid: string;
  keys: ReadonlyMap<string, Buffer>;
}

export class DecryptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DecryptError';
  }
}

const VERSION = 'v1';

/**
 * AES-256-GCM with a fresh 96-bit IV per write. The associated data binds a ciphertext to the record and
 * column it belongs to (e.g. `account:<id>:secrets`), so a ciphertext copied to another row fails to open.
 * Format: `v1.<kid>.<iv>.<ciphertext+tag>` (base64url parts).
 */
export class Sealer {
  constructor(private keyring: Keyring) {
    const active = keyring.keys.get(keyring.activeKid);
    if (!active) throw new Error(`active key "${keyring.activeKid}" is not in the keyring`);
    for (const [kid, key] of keyring.keys) {
      if (key.length !== 32) throw new Error(`key "${kid}" must be 32 bytes (AES-256), got ${key.length}`);
      if (!/^[A-Za-z0-9_-]{1,32}$/.test(kid))
        throw new Error(`key id "${kid}" must be 1-32 characters of [A-Za-z0-9_-]`);
    }
  }

  get activeKid(): string {
    return this.keyring.activeKid;
  }

  seal(plaintext: string, aad: string): string {
    const key = this.keyring.keys.get(this.keyring.activeKid)!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${this.keyring.activeKid}.${iv.toString('base64url')}.${ct.toString('base64url')}`;
  }

  open(sealed: string, aad: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION) {
      throw new DecryptError(`sealed value for ${aad} is malformed (expected ${VERSION}.<kid>.<iv>.<data>)`);
    }
    const [, kid, ivText, dataText] = parts as [string, string, string, string];
    const key = this.keyring.keys.get(kid);
    if (!key) {
      throw new DecryptError(
        `sealed value for ${aad} uses key "${kid}", which is not configured (known: ${[...this.keyring.keys.keys()].join(', ')})`,
      );
    }
    const iv = Buffer.from(ivText, 'base64url');
    const data = Buffer.from(dataText, 'base64url');
    if (iv.length !== 12 || data.length < 16) throw new DecryptError(`sealed value for ${aad} is truncated`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(Buffer.from(aad, 'utf8'));
      decipher.setAuthTag(data.subarray(data.length - 16));
      return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
    } catch {
      throw new DecryptError(
        `sealed value for ${aad} failed authentication: it was tampered with, or belongs to another record`,
      );
    }
  }

  /**
   * A 32-byte key for one purpose (an HMAC key), derived from the active key with HKDF-SHA256: every instance that
   * shares the keyring derives the same key, and no purpose's key reveals another's or the sealing key. A rotation of
   * the active key changes it (what was signed before no longer verifies: use it only for short-lived values).
   */
  deriveKey(purpose: string): Buffer {
    const key = this.keyring.keys.get(this.keyring.activeKid)!;
    return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `acs:${purpose}`, 32));
  }

  /** The key id a sealed value was written with. */
  static kidOf(sealed: string): string | undefined {
    return sealed.split('.')[1];
  }
}
