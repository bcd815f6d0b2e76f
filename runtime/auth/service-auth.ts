import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import type { Store } from '../store/types.ts';
import type { ApiCredential } from '../store/types.ts';
import type { Sealer } from '../crypto/sealer.ts';
import { newId, randomSecret } from '../ids.ts';
import { ServiceError, unauthorized } from '../../core/errors.ts';
import { reserveAll, Throttle } from './throttle.ts';
import { aad } from '../crypto/aad.ts';

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

export async function createApiCredential(
  store: Store,
  name: string,
  given?: { clientId?: string; clientSecret?: string },
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
  };
  await store.createApiCredential(credential);
  return { credential, clientSecret };
}

export interface TokenClaims {
  credentialId: string;
  clientId: string;
  expiresAt: number;
}

/**
 * Issues and verifies the service's short-lived bearer tokens (HS256 JWTs). The signing key is random,
 * stored sealed in the store, so every process behind the same store accepts the same tokens. A revoked
 * credential's tokens stop working at once in this process, and in others as soon as the store's change feed
 * tells them (runtime/store/changes.ts: milliseconds); `revocationCacheMs` bounds a credential's cached state
 * when the feed is not live.
 */
export class ServiceTokens {
  private key!: Uint8Array;
  private verified = new Map<string, TokenClaims>();
  private credentialState = new Map<string, { revoked: boolean; checkedAt: number }>();
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
  ) {
    this.clientThrottle = new Throttle(store, 'client:', { free: 5 });
    this.addressThrottle = new Throttle(store, 'token-address:', { free: 30 });
    store.changes.subscribe((c) => {
      if (c.table === '*' || c.table === 'api_credentials') this.credentialGeneration++;
      if (c.table === '*' || (c.table === 'api_credentials' && c.id === '*')) this.credentialState.clear();
      else if (c.table === 'api_credentials') this.credentialState.delete(c.id);
    });
  }

  async init(): Promise<void> {
    const sealed = await this.store.initMeta(
      'service_token_key',
      this.sealer.seal(randomBytes(32).toString('base64'), aad.meta('service_token_key')),
    );
    this.key = Buffer.from(this.sealer.open(sealed, aad.meta('service_token_key')), 'base64');
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
    const token = await new SignJWT({ cid: credential.clientId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(credential.id)
      .setIssuer(this.issuer)
      .setAudience(TOKEN_AUDIENCE)
      .setIssuedAt()
      .setJti(randomBytes(12).toString('base64url'))
      .setExpirationTime(Math.floor(now / 1000) + this.ttlSeconds)
      .sign(this.key);
    return { token, expiresIn: this.ttlSeconds };
  }

  /**
   * Verifies a bearer token: signature (HS256 only), issuer, audience, expiry, and the credential not revoked.
   * `scope`, the request being served: the store's change feed is polled once for it (see ChangeFeed.pollOnce).
   */
  async verify(token: string, scope?: object): Promise<TokenClaims> {
    const now = Date.now();
    let claims = this.verified.get(token);
    if (!claims || claims.expiresAt <= now) {
      this.verified.delete(token);
      try {
        const { payload } = await jwtVerify(token, this.key, {
          algorithms: ['HS256'],
          issuer: this.issuer,
          audience: TOKEN_AUDIENCE,
          requiredClaims: ['sub', 'exp', 'iat'],
        });
        claims = {
          credentialId: String(payload.sub),
          // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the claim is this service's own string, in a token it signed and verified
          clientId: String(payload.cid ?? ''),
          expiresAt: payload.exp! * 1000,
        };
      } catch (e) {
        if (e instanceof joseErrors.JWTExpired)
          throw unauthorized('The bearer token has expired; request a new one at /oauth/token');
        throw unauthorized('The bearer token is invalid');
      }
      if (this.verified.size > 10_000) this.verified.clear();
      this.verified.set(token, claims);
    }
    this.store.changes.pollOnce(scope);
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

  /** Called on revocation so this process refuses the credential's tokens immediately. */
  forgetCredential(credentialId: string): void {
    this.credentialState.set(credentialId, { revoked: true, checkedAt: Date.now() });
    for (const [token, c] of this.verified) if (c.credentialId === credentialId) this.verified.delete(token);
  }
}
