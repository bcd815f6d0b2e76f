import { mkdtempSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Sealer, DecryptError } from '../../runtime/crypto/sealer.ts';
import { keyFilePath, loadKeyring, parseKeyList } from '../../runtime/crypto/keys.ts';

const key = () => randomBytes(32);

describe('Sealer (AES-256-GCM)', () => {
  const sealer = new Sealer({ activeKid: 'k1', keys: new Map([['k1', key()]]) });

  it('round-trips with a fresh IV every time', () => {
    const a = sealer.seal('secret', 'account:1:secrets');
    const b = sealer.seal('secret', 'account:1:secrets');
    expect(a).not.toBe(b);
    expect(a.startsWith('v1.k1.')).toBe(true);
    expect(sealer.open(a, 'account:1:secrets')).toBe('secret');
    expect(a).not.toContain('secret');
  });

  it('refuses a ciphertext moved to another record', () => {
    const sealed = sealer.seal('secret', 'account:1:secrets');
    expect(() => sealer.open(sealed, 'account:2:secrets')).toThrow(DecryptError);
    expect(() => sealer.open(sealed, 'account:2:secrets')).toThrow(/belongs to another record/);
  });

  it('refuses a tampered ciphertext with a clear error', () => {
    const sealed = sealer.seal('secret', 'a');
    const parts = sealed.split('.');
    const data = Buffer.from(parts[3]!, 'base64url');
    data[0] = data[0]! ^ 1;
    parts[3] = data.toString('base64url');
    expect(() => sealer.open(parts.join('.'), 'a')).toThrow(/tampered/);
    expect(() => sealer.open('garbage', 'a')).toThrow(/malformed/);
  });

  it('names a missing key', () => {
    const other = new Sealer({ activeKid: 'k9', keys: new Map([['k9', key()]]) });
    expect(() => other.open(sealer.seal('x', 'a'), 'a')).toThrow(/uses key "k1", which is not configured/);
  });

  it('opens values of every configured key and seals with the active one', () => {
    const k1 = key();
    const old = new Sealer({ activeKid: 'k1', keys: new Map([['k1', k1]]) });
    const both = new Sealer({
      activeKid: 'k2',
      keys: new Map([
        ['k2', key()],
        ['k1', k1],
      ]),
    });
    expect(both.open(old.seal('x', 'a'), 'a')).toBe('x');
    expect(Sealer.kidOf(both.seal('x', 'a'))).toBe('k2');
  });
});

describe('keyring', () => {
  it('creates the key file with mode 0600 only on first start', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-keys-'));
    expect(() => loadKeyring({ dataDir: dir, mayCreate: false })).toThrow(/No encryption key/);
    const first = loadKeyring({ dataDir: dir, mayCreate: true });
    expect(first.created).toBe(true);
    expect(statSync(keyFilePath(dir)).mode & 0o777).toBe(0o600);
    const again = loadKeyring({ dataDir: dir, mayCreate: true });
    expect(again.created).toBe(false);
    expect(again.keyring.activeKid).toBe(first.keyring.activeKid);
  });

  it('refuses a key file other users can read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-keys-'));
    writeFileSync(keyFilePath(dir), JSON.stringify({ active: 'k', keys: { k: key().toString('base64') } }));
    chmodSync(keyFilePath(dir), 0o644);
    expect(() => loadKeyring({ dataDir: dir, mayCreate: false })).toThrow(/chmod 600/);
  });

  it('parses ENCRYPTION_KEYS with the first key active', () => {
    const k = parseKeyList(`new:${key().toString('base64')},old:${key().toString('base64')}`);
    expect(k.activeKid).toBe('new');
    expect([...k.keys.keys()]).toEqual(['new', 'old']);
    expect(() => parseKeyList('bad')).toThrow(/kid:base64key/);
    expect(() => parseKeyList(`k:${randomBytes(16).toString('base64')}`)).toThrow(/32 bytes/);
  });
});

describe('ids', () => {
  it('are unique, prefixed, base 36, and evenly spread', async () => {
    const { newId, requestId } = await import('../../runtime/ids.ts');
    const ids = Array.from({ length: 20_000 }, () => newId('exe'));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^exe_[0-9a-z]{25}$/.test(id))).toBe(true);
    const counts = new Map<string, number>();
    for (const id of ids) for (const c of id.slice(4)) counts.set(c, (counts.get(c) ?? 0) + 1);
    const expected = (ids.length * 25) / 36;
    for (const n of counts.values()) expect(Math.abs(n - expected) / expected).toBeLessThan(0.1);
    expect(requestId()).toMatch(/^[0-9a-f]{16}$/);
  });

  it('sortable ones have the same form, sort by time and stay unique within a millisecond', async () => {
    const { newSortableId } = await import('../../runtime/ids.ts');
    const now = Date.UTC(2026, 10, 24);
    const same = Array.from({ length: 20_000 }, () => newSortableId('prx', now));
    expect(new Set(same).size).toBe(same.length);
    expect(same.every((id) => /^prx_[0-9a-z]{25}$/.test(id))).toBe(true);
    expect(new Set(same.map((id) => id.slice(0, 13))).size).toBe(1);
    // Ordered by time, whatever the random part: as strings, which is how the store's index compares them.
    const times = [now - 86_400_000, now - 1, now, now + 1, now + 3_600_000];
    const ids = times.map((t) => newSortableId('prx', t));
    expect([...ids].sort()).toEqual(ids);
    expect(newSortableId('exe', 0)).toMatch(/^exe_000000000[0-9a-z]{16}$/);
    // The random part is spread evenly over the alphabet, as newId's is.
    const counts = new Map<string, number>();
    for (const id of same) for (const c of id.slice(13)) counts.set(c, (counts.get(c) ?? 0) + 1);
    const expected = (same.length * 16) / 36;
    expect(counts.size).toBe(36);
    for (const n of counts.values()) expect(Math.abs(n - expected) / expected).toBeLessThan(0.1);
  });
});
