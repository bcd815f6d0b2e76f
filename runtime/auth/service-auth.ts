import { CacheSet, type BoundedCache } from '../caches.ts';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import type { Store } from '../store/types.ts';
import type { ApiCredential } from '../store/types.ts';
import type { Sealer } from '../crypto/sealer.ts';
import { newId, randomSecret } from '../ids.ts';
import { ServiceError, unauthorized } from '../../core/errors.ts';
import { ALL_SCOPES, SCOPES, type Scope } from '../../core/api/scopes.ts';
import { reserveAll, Throttle } from './throttle.ts';
import { aad } from '../crypto/aad.ts';
import { INITIAL_KID, newSigningKey, parseKeySet, sealKeySet, SIGNING_KEY_META } from './signing-keys.ts';

/** A token names a signing key this process does not have, or one past its retirement time. */
class RetiredKey extends Error {}

export const TOKEN_AUDIENCE = 'agent-connector-service';

export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashClientSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface NewCredential {
  credential: ApiCredential;
  clientSecret: string;
}

/** What a credential may do: its scopes (or `*`, every scope) and, optionally, the only connections it reaches. */
export interface CredentialAccess {
  scopes: readonly Scope[] | '*';
  connectionNames: readonly string[] | null;
}

export async function createApiCredential(
  store: Store,
  name: string,
  given?: { clientId?: string; clientSecret?: string },
  access: CredentialAccess = { scopes: ALL_SCOPES, connectionNames: null },
): Promise<NewCredential> {
  const clientSecret = given?.clientSecret ?? `acs_sk_${randomSecret(32)}`;
  if (clientSecret.length < 24) throw new Error('a client secret must have at least 24 characters');
  const credential: ApiCredential = {
    id: newId('cred'),
    clientId: given?.clientId ?? `acs_${randomBytes(12).toString('hex')}`,
    secretHash: hashClientSecret(clientSecret),
    name,
    createdAt: Date.now(),
    revokedAt: null,
    lastUsedAt: null,
    scopes: access.scopes === ALL_SCOPES ? ALL_SCOPES : [...new Set(access.scopes)],
    connectionNames: access.connectionNames ? [...new Set(access.connectionNames)] : null,
  };
  await store.createApiCredential(credential);
  return { credential, clientSecret };
}

export interface TokenClaims {
  credentialId: string;
  clientId: string;
  expiresAt: number;
  /** The scopes the token carries (its credential's): `*`, or a set. */
  scopes: ReadonlySet<string> | '*';
  /** The only connections the token reaches; undefined: every one. */
  connections: ReadonlySet<string> | undefined;
}

/** True when the claims hold `scope`. */
export function holdsScope(claims: Pick<TokenClaims, 'scopes'>, scope: Scope): boolean {
  return claims.scopes === ALL_SCOPES || claims.scopes.has(scope);
}

/**
 * The 403 of a token without the scope a route or method needs, naming it (and, per RFC 6750 section 3.1, in the
 * WWW-Authenticate header).
 */
export function insufficientScope(scope: Scope): ServiceError {
  return new ServiceError(
    403,
    'insufficient_scope',
    `This API credential does not hold the scope "${scope}", which this call needs; create a credential that holds it (POST /v1/api-credentials with "scopes")`,
    { required_scope: scope },
    { 'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
  );
}

/**
 * Refuses a connection the token's credential is not restricted to (when it is restricted at all). `scope` is what
 * carries the claims: the request being served (`access`), or the claims themselves.
 */
export function checkConnection(scope: object | undefined, name: string): void {
  const access = (scope as { access?: TokenClaims } | undefined)?.access;
  if (access?.connections && !access.connections.has(name)) throw connectionNotAllowed(name);
}

/**
 * What a new credential may hold when `creator` makes it: the scopes and connections asked for, each within the
 * creator's own (a scope it lacks: 403 `insufficient_scope` naming it; a connection outside its restriction: 403
 * `connection_not_allowed`). Not asked: the creator's. `*` only from a credential that holds every scope.
 */
export function grantable(
  creator: Pick<TokenClaims, 'scopes' | 'connections'> | undefined,
  asked: { scopes?: readonly string[] | null; connectionNames?: readonly string[] | null },
): CredentialAccess {
  const held = creator?.scopes ?? ALL_SCOPES;
  let scopes: readonly Scope[] | '*';
  if (!asked.scopes) scopes = held === ALL_SCOPES ? ALL_SCOPES : ([...held] as Scope[]);
  else if (asked.scopes.includes(ALL_SCOPES)) {
    if (held !== ALL_SCOPES) throw insufficientScope(SCOPES.find((sc) => !held.has(sc))!);
    scopes = ALL_SCOPES;
  } else {
    for (const sc of asked.scopes) if (!holdsScope({ scopes: held }, sc as Scope)) throw insufficientScope(sc as Scope);
    scopes = asked.scopes as Scope[];
  }
  const within = creator?.connections;
  let connectionNames: readonly string[] | null = asked.connectionNames ?? (within ? [...within] : null);
  if (connectionNames && !connectionNames.length) connectionNames = null;
  if (within) {
    if (!connectionNames) connectionNames = [...within];
    for (const n of connectionNames) if (!within.has(n)) throw connectionNotAllowed(n);
  }
  return { scopes, connectionNames };
}

/** The 403 of a token restricted to other connections. */
export function connectionNotAllowed(name: string): ServiceError {
  return new ServiceError(
    403,
    'connection_not_allowed',
    `This API credential is restricted to other connections; it may not use the connection "${name}"`,
    { connection_name: name },
  );
}

interface VerifiedToken extends TokenClaims {
  /** The signing key that verified it: the token stops verifying when that key is revoked or retires. */
  kid: string;
}

/**
 * The tokens this process verified, by their signature: the last of a JWT's three parts, 43 characters for HS256,
 * where the whole token is several hundred. A map keyed by the whole token hashes all of it on every request (a
 * header's string is new each time, its hash not yet computed): about 4 thousand instructions per request under
 * callgrind, 1.5 % of a proxied one (bench/RESULTS.md). An entry answers only for the very token it was stored with (a
 * whole-string comparison), so two tokens that shared a signature could at worst replace each other's entry, and the
 * token not found is verified again.
 */
class VerifiedTokens {
  constructor(private readonly bySignature: BoundedCache<string, { token: string; claims: VerifiedToken }>) {}

  get size(): number {
    return this.bySignature.size;
  }
  get(token: string): VerifiedToken | undefined {
    const entry = this.bySignature.get(signatureOf(token));
    return entry !== undefined && entry.token === token ? entry.claims : undefined;
  }
  set(token: string, claims: VerifiedToken): void {
    this.bySignature.set(signatureOf(token), { token, claims });
  }
  delete(token: string): void {
    const signature = signatureOf(token);
    if (this.bySignature.get(signature)?.token === token) this.bySignature.delete(signature);
  }
  /** Forgets every token whose claims match (a revocation: rare, and bounded by the cache's size). */
  deleteWhere(match: (claims: VerifiedToken) => boolean): void {
    for (const signature of [...this.bySignature.keys()]) {
      const entry = this.bySignature.peek(signature);
      if (entry && match(entry.claims)) this.bySignature.delete(signature);
    }
  }
  clear(): void {
    this.bySignature.clear();
  }
}

/** A JWT's signature part (what follows its last dot; the whole string when it has none). */
const signatureOf = (token: string) => token.slice(token.lastIndexOf('.') + 1);

/** The signing keys as this process uses them: the active one signs, each one verifies until it retires. */
interface LoadedKeys {
  active: { kid: string; key: Uint8Array };
  byKid: Map<string, { key: Uint8Array; retireAt: number }>;
  /** The stored form, to tell whether a reload changed anything. */
  stored: string;
}

/**
 * Issues and verifies the service's short-lived bearer tokens (HS256 JWTs). The signing keys are random,
 * stored sealed in the store (signing-keys.ts), so every process behind the same store accepts the same tokens. A
 * revoked credential's tokens stop working at once in this process, and in others as soon as the store's change feed
 * tells them (runtime/store/changes.ts: milliseconds); `revocationCacheMs` bounds a credential's cached state
 * when the feed is not live. A signing key rotated by `npm run keys -- rotate-signing` reaches every process the
 * same way: the next token is signed with the new key, and tokens of a revoked or retired key stop verifying.
 */
export class ServiceTokens {
  private keys!: LoadedKeys;
  /** Set by a change to the signing keys (or to anything, when the feed cannot tell): read them before next use. */
  private keysStale = false;
  private keysReadAt = 0;
  private keysLoading: Promise<void> | undefined;
  private verified: VerifiedTokens;
  private credentialState: BoundedCache<string, { revoked: boolean; checkedAt: number }>;
  /** Bumped on every credential change: a state read while one arrived is used but not kept. */
  private credentialGeneration = 0;
  /** Failed attempts per client id (protects each credential) and, more leniently, per address. */
  readonly clientThrottle: Throttle;
  readonly addressThrottle: Throttle;

  constructor(
    private store: Store,
    private sealer: Sealer,
    private issuer: string,
    readonly ttlSeconds: number,
    private revocationCacheMs = 5_000,
    cache: { caches: CacheSet; max: number } = { caches: new CacheSet(), max: 10_000 },
  ) {
    this.verified = new VerifiedTokens(cache.caches.create('verified_tokens', { max: cache.max }));
    this.credentialState = cache.caches.create('credential_states', { max: cache.max });
    this.clientThrottle = new Throttle(store, 'client:', { free: 5 });
    this.addressThrottle = new Throttle(store, 'token-address:', { free: 30 });
    store.changes.subscribe((c) => {
      if (c.table === '*' || (c.table === 'meta' && (c.id === '*' || c.id === SIGNING_KEY_META))) this.keysStale = true;
      if (c.table === '*' || c.table === 'api_credentials') this.credentialGeneration++;
      if (c.table === '*' || (c.table === 'api_credentials' && c.id === '*')) this.credentialState.clear();
      else if (c.table === 'api_credentials') this.credentialState.delete(c.id);
    });
  }

  async init(): Promise<void> {
    await this.store.initMeta(SIGNING_KEY_META, sealKeySet(this.sealer, { active: newSigningKey(), previous: [] }));
    await this.loadKeys();
  }

  private async loadKeys(): Promise<void> {
    // Cleared before the read: a change that lands during it marks the keys stale again.
    this.keysStale = false;
    const readAt = Date.now();
    try {
      const sealed = await this.store.getMeta(SIGNING_KEY_META);
      if (!sealed) throw new Error(`the token-signing keys (meta ${SIGNING_KEY_META}) are missing from the store`);
      const stored = this.sealer.open(sealed, aad.meta(SIGNING_KEY_META));
      if (stored === this.keys?.stored) return void (this.keysReadAt = readAt);
      const set = parseKeySet(stored);
      const decode = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));
      const byKid = new Map<string, { key: Uint8Array; retireAt: number }>();
      const active = { kid: set.active.kid, key: decode(set.active.key) };
      byKid.set(active.kid, { key: active.key, retireAt: Infinity });
      for (const k of set.previous) byKid.set(k.kid, { key: decode(k.key), retireAt: k.retireAt ?? 0 });
      this.keys = { active, byKid, stored };
      this.keysReadAt = readAt;
      // Tokens verified with a key that is gone must be checked again.
      this.verified.clear();
    } catch (e) {
      this.keysStale = true;
      throw e;
    }
  }

  /** The signing keys, read again first if they changed (or, while the change feed is not live, every few seconds). */
  private async currentKeys(now: number, scope?: object): Promise<LoadedKeys> {
    this.store.changes.pollOnce(scope);
    if (this.keysStale || (!this.store.changes.live && now - this.keysReadAt > this.revocationCacheMs)) {
      this.keysLoading ??= this.loadKeys().finally(() => (this.keysLoading = undefined));
      await this.keysLoading;
    }
    return this.keys;
  }

  /** Checks client credentials (throttled) and issues a token. */
  async exchange(
    clientId: string,
    clientSecret: string,
    remote: string,
  ): Promise<{ token: string; expiresIn: number }> {
    const now = Date.now();
    // Counted before the check, so simultaneous guesses cannot all pass a block that the first failures set.
    const wait = await reserveAll(
      [
        [this.addressThrottle, remote],
        [this.clientThrottle, clientId],
      ],
      now,
    );
    if (wait > 0) {
      throw new ServiceError(429, 'too_many_attempts', 'Too many failed attempts; try again later', undefined, {
        'retry-after': String(Math.ceil(wait / 1000)),
      });
    }
    const credential = clientId ? await this.store.getApiCredentialByClientId(clientId) : undefined;
    // Hash even when the client is unknown so timing does not reveal which client ids exist.
    const ok = credential
      ? secretMatches(clientSecret, credential.secretHash)
      : (secretMatches(clientSecret, '00'.repeat(32)), false);
    if (!credential || !ok || credential.revokedAt) {
      throw new ServiceError(401, 'invalid_client', 'Unknown client or wrong secret');
    }
    await this.clientThrottle.settleSuccess(clientId, 'forget', now);
    await this.addressThrottle.settleSuccess(remote, 'refund', now);
    void this.store.touchApiCredential(credential.id, now).catch(() => {});
    const { active } = await this.currentKeys(now);
    // The token carries what the credential may do, so checking a route's scope needs no read.
    const token = await new SignJWT({
      cid: credential.clientId,
      scope: credential.scopes === ALL_SCOPES ? ALL_SCOPES : credential.scopes.join(' '),
      ...(credential.connectionNames ? { conn: credential.connectionNames } : {}),
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: active.kid })
      .setSubject(credential.id)
      .setIssuer(this.issuer)
      .setAudience(TOKEN_AUDIENCE)
      .setIssuedAt()
      .setJti(randomBytes(12).toString('base64url'))
      .setExpirationTime(Math.floor(now / 1000) + this.ttlSeconds)
      .sign(active.key);
    return { token, expiresIn: this.ttlSeconds };
  }

  /**
   * Verifies a bearer token: signature (HS256 only), issuer, audience, expiry, and the credential not revoked.
   * `scope`, the request being served: the store's change feed is polled once for it (see ChangeFeed.pollOnce).
   */
  async verify(token: string, scope: object = {}): Promise<TokenClaims> {
    // Without a request to poll for, this call is the scope: the change feed is polled once, not twice.
    const known = this.knownClaims(token, scope);
    if (known) return known;
    const now = Date.now();
    const keys = await this.currentKeys(now, scope);
    let claims = this.verified.get(token);
    if (claims && (claims.expiresAt <= now || !((keys.byKid.get(claims.kid)?.retireAt ?? 0) > now))) {
      this.verified.delete(token);
      claims = undefined;
    }
    if (!claims) {
      let kid = INITIAL_KID;
      try {
        const { payload } = await jwtVerify(
          token,
          (header) => {
            kid = header.kid ?? INITIAL_KID;
            const key = keys.byKid.get(kid);
            if (!key || key.retireAt <= now) throw new RetiredKey();
            return key.key;
          },
          {
            algorithms: ['HS256'],
            issuer: this.issuer,
            audience: TOKEN_AUDIENCE,
            requiredClaims: ['sub', 'exp', 'iat'],
          },
        );
        claims = {
          credentialId: String(payload.sub),
          // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the claim is this service's own string, in a token it signed and verified
          clientId: String(payload.cid ?? ''),
          expiresAt: payload.exp! * 1000,
          // A token signed before scopes existed has none: its credential was migrated to every scope (010).
          scopes:
            typeof payload.scope !== 'string' || payload.scope === ALL_SCOPES
              ? ALL_SCOPES
              : new Set(payload.scope.split(' ').filter(Boolean)),
          connections: Array.isArray(payload.conn) ? new Set(payload.conn.map(String)) : undefined,
          kid,
        };
      } catch (e) {
        if (e instanceof joseErrors.JWTExpired)
          throw unauthorized('The bearer token has expired; request a new one at /oauth/token');
        if (e instanceof RetiredKey)
          throw unauthorized(
            'The bearer token was signed with a key this service no longer accepts (replaced or revoked); request a new one at /oauth/token',
          );
        throw unauthorized('The bearer token is invalid');
      }
      this.verified.set(token, claims);
    }
    let state = this.credentialState.get(claims.credentialId);
    if (!state || now - state.checkedAt > this.revocationCacheMs) {
      const generation = this.credentialGeneration;
      const credential = await this.store.getApiCredential(claims.credentialId);
      state = { revoked: !credential || credential.revokedAt !== null, checkedAt: now };
      if (generation === this.credentialGeneration) this.credentialState.set(claims.credentialId, state);
    }
    if (state.revoked) throw unauthorized('The API credential behind this token was revoked');
    return claims;
  }

  /**
   * What `verify` would answer, when it can answer from what this process already knows: the token verified before,
   * not expired, its key still accepted, the signing keys and the credential's state fresh (the change feed polled
   * for `scope` first, as `verify` does). Undefined whenever any of that needs a look, or the answer would be a
   * refusal: `verify` then decides. The API's routes call it first, so that a request with a known token waits for
   * no promise before its handler runs.
   */
  knownClaims(token: string, scope?: object): TokenClaims | undefined {
    this.store.changes.pollOnce(scope);
    const now = Date.now();
    if (this.keysStale || (!this.store.changes.live && now - this.keysReadAt > this.revocationCacheMs))
      return undefined;
    const claims = this.verified.get(token);
    if (!claims || claims.expiresAt <= now || !((this.keys.byKid.get(claims.kid)?.retireAt ?? 0) > now))
      return undefined;
    const state = this.credentialState.get(claims.credentialId);
    if (!state || state.revoked || now - state.checkedAt > this.revocationCacheMs) return undefined;
    return claims;
  }

  /** Called on revocation so this process refuses the credential's tokens immediately. */
  forgetCredential(credentialId: string): void {
    this.credentialState.set(credentialId, { revoked: true, checkedAt: Date.now() });
    this.verified.deleteWhere((c) => c.credentialId === credentialId);
  }
}
