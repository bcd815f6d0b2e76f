/**
 * The keys that sign the service's own bearer tokens (HS256, issued at /oauth/token), kept sealed in the store's
 * meta row `service_token_key` so every process on the store signs and verifies alike.
 *
 * The row holds one active key, which signs, and the keys it replaced, each with a retirement time until which
 * tokens it signed still verify (`npm run keys -- rotate-signing` sets it to now + the token lifetime, so no token
 * outlives it; `--revoke-old` keeps no previous key, so their tokens fail at once). Tokens name their key in the
 * JWT header (`kid`). A store created before rotation existed holds a bare key: it becomes the key `initial`, which
 * also verifies the tokens it signed without a `kid`.
 */
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/types.ts';
import type { Sealer } from '../crypto/sealer.ts';
import { aad } from '../crypto/aad.ts';

export const SIGNING_KEY_META = 'service_token_key';
/** The id of a key stored before keys had ids; tokens without a `kid` were signed by it. */
export const INITIAL_KID = 'initial';

export interface SigningKey {
  kid: string;
  /** 32 random bytes, base64. */
  key: string;
  /** Epoch ms after which tokens signed with this key no longer verify; absent for the active key. */
  retireAt?: number;
}

export interface SigningKeySet {
  active: SigningKey;
  previous: SigningKey[];
}

export function newSigningKey(): SigningKey {
  return { kid: `s${randomBytes(6).toString('base64url')}`, key: randomBytes(32).toString('base64') };
}

/** The stored form (before sealing). */
export function serializeKeySet(set: SigningKeySet): string {
  return JSON.stringify({ v: 1, active: set.active, previous: set.previous });
}

/** Reads the stored form, also a bare key from before rotation existed. */
export function parseKeySet(text: string): SigningKeySet {
  if (!text.startsWith('{')) return { active: { kid: INITIAL_KID, key: text }, previous: [] };
  const parsed = JSON.parse(text) as { v?: number; active?: SigningKey; previous?: SigningKey[] };
  if (parsed.v !== 1 || !parsed.active?.kid || !parsed.active.key || !Array.isArray(parsed.previous)) {
    throw new Error(`the stored token-signing keys (meta ${SIGNING_KEY_META}) are not in a known format`);
  }
  return { active: parsed.active, previous: parsed.previous };
}

export function sealKeySet(sealer: Sealer, set: SigningKeySet): string {
  return sealer.seal(serializeKeySet(set), aad.meta(SIGNING_KEY_META));
}

export function openKeySet(sealer: Sealer, sealed: string): SigningKeySet {
  return parseKeySet(sealer.open(sealed, aad.meta(SIGNING_KEY_META)));
}

export interface SigningRotation {
  active: string;
  /** Previous keys that still verify, with their retirement times. */
  kept: Array<{ kid: string; retireAt: number }>;
  /** Previous keys dropped: revoked by `revokeOld`, or past their retirement time. */
  dropped: string[];
}

/**
 * Replaces the active signing key with a new one. The replaced key verifies the tokens it signed until
 * `now + maxTokenLifetimeMs` (the longest any of them lives), unless `revokeOld`, which drops it and every other
 * previous key at once. Keys past their retirement time are dropped too. A compare-and-set write: a rotation that
 * races another one reads again and applies on top of it. Running instances pick the change up through the store's
 * change feed (see ServiceTokens).
 */
export async function rotateSigningKey(
  store: Store,
  sealer: Sealer,
  opts: { now: number; maxTokenLifetimeMs: number; revokeOld: boolean },
): Promise<SigningRotation> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const sealed = await store.getMeta(SIGNING_KEY_META);
    if (!sealed) throw new Error('the store has no token-signing key yet: start the service once, then rotate');
    const current = openKeySet(sealer, sealed);
    const candidates = [{ ...current.active, retireAt: opts.now + opts.maxTokenLifetimeMs }, ...current.previous];
    const kept = opts.revokeOld ? [] : candidates.filter((k) => (k.retireAt ?? 0) > opts.now);
    const next: SigningKeySet = { active: newSigningKey(), previous: kept };
    const cell = { table: 'meta' as const, column: 'value', id: SIGNING_KEY_META, value: sealKeySet(sealer, next) };
    if (await store.replaceSealed(cell, sealed)) {
      return {
        active: next.active.kid,
        kept: kept.map((k) => ({ kid: k.kid, retireAt: k.retireAt ?? 0 })),
        dropped: candidates.filter((k) => !kept.includes(k)).map((k) => k.kid),
      };
    }
  }
  throw new Error('the token-signing keys kept changing during the rotation (another rotation running?); run it again');
}
