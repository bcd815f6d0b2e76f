import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Keyring } from './sealer.ts';

export interface KeyFile {
  active: string;
  keys: Record<string, string>;
}

export function keyFilePath(dataDir: string): string {
  return join(dataDir, 'keys.json');
}

/** Parses ENCRYPTION_KEYS: "kid:base64[,kid:base64...]"; the first key is active. */
export function parseKeyList(text: string): Keyring {
  const keys = new Map<string, Buffer>();
  let activeKid: string | undefined;
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const idx = part.indexOf(':');
    if (idx <= 0) throw new Error('ENCRYPTION_KEYS must look like "kid:base64key[,kid2:base64key]"');
    const kid = part.slice(0, idx);
    const key = Buffer.from(part.slice(idx + 1), 'base64');
    if (key.length !== 32) throw new Error(`ENCRYPTION_KEYS: key "${kid}" must decode to 32 bytes, got ${key.length}`);
    keys.set(kid, key);
    activeKid ??= kid;
  }
  if (!activeKid) throw new Error('ENCRYPTION_KEYS is empty');
  return { activeKid, keys };
}

function toKeyring(file: KeyFile, path: string): Keyring {
  const keys = new Map(Object.entries(file.keys).map(([kid, b64]) => [kid, Buffer.from(b64, 'base64')] as const));
  if (!keys.has(file.active)) throw new Error(`${path}: active key "${file.active}" is missing`);
  return { activeKid: file.active, keys };
}

export function readKeyFile(path: string): KeyFile {
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077) {
    throw new Error(`${path} is readable by other users (mode ${mode.toString(8)}); run: chmod 600 ${path}`);
  }
  return JSON.parse(readFileSync(path, 'utf8')) as KeyFile;
}

/** Writes atomically (temp file + rename) with mode 0600. */
export function writeKeyFile(path: string, file: KeyFile): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

export function newKeyId(): string {
  return `k${new Date().toISOString().slice(0, 10).replace(/-/g, '')}${randomBytes(3).toString('hex')}`;
}

/**
 * The keyring: from ENCRYPTION_KEYS when set, else the key file under the data directory, which is created
 * (mode 0600) only when `mayCreate` — i.e. on first start with an empty store. Otherwise: no key, no start.
 */
export function loadKeyring(opts: { dataDir: string; encryptionKeys?: string; mayCreate: boolean }): {
  keyring: Keyring;
  source: 'env' | 'file';
  created: boolean;
} {
  if (opts.encryptionKeys) return { keyring: parseKeyList(opts.encryptionKeys), source: 'env', created: false };
  const path = keyFilePath(opts.dataDir);
  if (existsSync(path)) return { keyring: toKeyring(readKeyFile(path), path), source: 'file', created: false };
  if (!opts.mayCreate) {
    throw new Error(
      `No encryption key: ${path} is missing and ENCRYPTION_KEYS is not set, but the store already holds sealed credentials. ` +
        'Restore the key file or set ENCRYPTION_KEYS; the service will not start without the key.',
    );
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const kid = newKeyId();
  const file: KeyFile = { active: kid, keys: { [kid]: randomBytes(32).toString('base64') } };
  writeKeyFile(path, file);
  return { keyring: toKeyring(file, path), source: 'file', created: true };
}
