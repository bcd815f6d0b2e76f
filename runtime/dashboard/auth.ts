/**
 * Dashboard sign-in: the admin account, server-side sessions, signed cookies and CSRF tokens.
 *
 * - The session cookie holds `<id>.<mac>`: a random 256-bit id and an HMAC of it under the dashboard's
 *   cookie key. The store keeps only SHA-256(id), with the session's expiry; sign-out deletes the row.
 * - CSRF tokens are HMACs too: of the session id for signed-in forms, of a random pre-session nonce (its
 *   own cookie) for the sign-in form. A page from another origin can neither read the cookie nor compute
 *   the token, and nothing needs storing per form.
 * - The cookie key (32 random bytes) lives sealed in the store's meta table, so every process behind one
 *   store accepts the same cookies and key rotation re-encrypts it.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ConfigError, MIN_PASSWORD_LENGTH, type Config } from '../config.ts';
import type { Sealer } from '../crypto/sealer.ts';
import { aad } from '../crypto/aad.ts';
import type { DashboardRole, Store } from '../store/types.ts';
import { newId, randomSecret } from '../ids.ts';
import { reserveAll, Throttle } from '../auth/throttle.ts';
import { dummyHash, HashBusyError, HashGate, hashPassword, verifyPassword } from './password.ts';

export const ADMIN_USERNAME = 'admin';
export { MIN_PASSWORD_LENGTH };
const KEY_META = 'dashboard_cookie_key';
const SIGN_IN_FORM_TTL_SECONDS = 3600;

export interface SignedInSession {
  id: string;
  idHash: string;
  userId: string;
  username: string;
  /** Read from the user's row at each request: a changed role applies at once. */
  role: DashboardRole;
  csrf: string;
  expiresAt: number;
}

/** A refusal with `retryAfterSeconds` is a throttle (429); with `busy` too, the service's hashing is full (503). */
export type SignInResult = { ok: true; cookie: string } | { ok: false; retryAfterSeconds?: number; busy?: boolean };

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim();
    if (!out.has(name)) out.set(name, part.slice(i + 1).trim());
  }
  return out;
}

export class DashboardAuth {
  /** Sign-in attempts per username, and more leniently per address (shared through the store). */
  readonly userThrottle: Throttle;
  readonly addressThrottle: Throttle;
  /** Bounds the password hashing that unauthenticated requests can cause. */
  readonly hashGate = new HashGate();
  readonly sessionCookie: string;
  readonly signInCookie: string;
  private readonly secure: boolean;

  private constructor(
    private store: Store,
    private key: Buffer,
    private sessionTtlMs: number,
    publicUrl: string,
  ) {
    this.secure = publicUrl.startsWith('https:');
    this.userThrottle = new Throttle(store, 'dashboard-user:', { free: 5 });
    this.addressThrottle = new Throttle(store, 'dashboard-address:', { free: 20 });
    // The __Host- prefix makes browsers refuse the cookie unless it is Secure, host-only and Path=/.
    this.sessionCookie = this.secure ? '__Host-acs_dashboard' : 'acs_dashboard';
    this.signInCookie = this.secure ? '__Host-acs_dashboard_sign_in' : 'acs_dashboard_sign_in';
  }

  /**
   * Settles once the admin account is in place: created on the first start, or its password set to ADMIN_PASSWORD
   * when that changed. With the generated password when this start created the account without ADMIN_PASSWORD,
   * to be printed once. Sign-ins wait for it.
   *
   * It runs after the service answers: it costs one or two scrypt hashes (about 0.1 s of a pool thread each, and
   * 32 MiB), which the start does not wait for; nothing but a dashboard sign-in depends on it.
   */
  adminReady!: Promise<string | undefined>;

  /** Loads (or creates) the cookie key, and starts making sure the admin account exists (see adminReady). */
  static async init(store: Store, sealer: Sealer, config: Config): Promise<DashboardAuth> {
    const configured = config.adminPassword;
    if (configured !== undefined && configured.length < MIN_PASSWORD_LENGTH) {
      throw new ConfigError('ADMIN_PASSWORD', `must have at least ${MIN_PASSWORD_LENGTH} characters`);
    }
    const sealed = await store.initMeta(KEY_META, sealer.seal(randomBytes(32).toString('base64'), aad.meta(KEY_META)));
    const key = Buffer.from(sealer.open(sealed, aad.meta(KEY_META)), 'base64');
    const auth = new DashboardAuth(store, key, config.dashboardSessionTtlSeconds * 1000, config.publicUrl);
    auth.adminReady = auth.ensureAdmin(configured);
    // Its failure is reported by whoever awaits it (the start's log, a sign-in); not an unhandled rejection.
    auth.adminReady.catch(() => {});
    return auth;
  }

  private async ensureAdmin(configured: string | undefined): Promise<string | undefined> {
    const existing = await this.store.getDashboardUserByName(ADMIN_USERNAME);
    const now = Date.now();
    if (configured !== undefined) {
      // ADMIN_PASSWORD is authoritative: changing it (to recover a lost password) signs the old sessions out.
      if (!existing) {
        await this.store.createDashboardUser({
          id: newId('du'),
          username: ADMIN_USERNAME,
          passwordHash: await hashPassword(configured),
          role: 'admin',
          oidcSubject: null,
          createdAt: now,
          updatedAt: now,
        });
      } else {
        if (!(await verifyPassword(configured, existing.passwordHash))) {
          await this.store.setDashboardPassword(existing.id, await hashPassword(configured), now);
        }
        // The recovery account: ADMIN_PASSWORD makes `admin` an admin again if it was demoted.
        if (existing.role !== 'admin') await this.store.setDashboardUserRole(existing.id, 'admin', now);
      }
      return undefined;
    }
    // Without ADMIN_PASSWORD, an admin is generated only when there is no admin at all (the first start): an
    // `admin` user removed on purpose does not come back.
    if (existing || (await this.store.listDashboardUsers()).some((u) => u.role === 'admin')) return undefined;
    const password = randomSecret(18);
    const created = await this.store.createDashboardUser({
      id: newId('du'),
      username: ADMIN_USERNAME,
      passwordHash: await hashPassword(password),
      role: 'admin',
      oidcSubject: null,
      createdAt: now,
      updatedAt: now,
    });
    // Another process sharing the store may have created it first; then that one prints its password.
    return created ? password : undefined;
  }

  private mac(purpose: string, value: string): string {
    return createHmac('sha256', this.key).update(`${purpose}:${value}`).digest('base64url');
  }

  private cookie(name: string, value: string, maxAgeSeconds: number): string {
    const attrs = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`];
    if (this.secure) attrs.push('Secure');
    return attrs.join('; ');
  }

  clearCookie(name: string): string {
    return this.cookie(name, '', 0);
  }

  /** The sign-in form's nonce from its cookie, or a new one with the Set-Cookie header to send. */
  signInNonce(cookieHeader: string | undefined): { nonce: string; setCookie?: string } {
    const raw = parseCookies(cookieHeader).get(this.signInCookie);
    const nonce = raw ? this.unsign('sign-in-cookie', raw) : undefined;
    if (nonce) return { nonce };
    const fresh = randomSecret(24);
    return {
      nonce: fresh,
      setCookie: this.cookie(
        this.signInCookie,
        `${fresh}.${this.mac('sign-in-cookie', fresh)}`,
        SIGN_IN_FORM_TTL_SECONDS,
      ),
    };
  }

  signInCsrf(nonce: string): string {
    return this.mac('sign-in-csrf', nonce);
  }

  /** True when the form's token belongs to the nonce in this browser's sign-in cookie. */
  checkSignInCsrf(cookieHeader: string | undefined, token: unknown): boolean {
    const raw = parseCookies(cookieHeader).get(this.signInCookie);
    const nonce = raw ? this.unsign('sign-in-cookie', raw) : undefined;
    return !!nonce && typeof token === 'string' && safeEqual(token, this.signInCsrf(nonce));
  }

  private unsign(purpose: string, raw: string): string | undefined {
    const i = raw.lastIndexOf('.');
    if (i <= 0) return undefined;
    const value = raw.slice(0, i);
    return safeEqual(raw.slice(i + 1), this.mac(purpose, value)) ? value : undefined;
  }

  /**
   * Checks a username and password (throttled per username and per address) and opens a session.
   * The attempt is counted before the password is hashed, and the hashing is bounded (HashGate).
   * Unknown names cost the same scrypt work as known ones.
   */
  async signIn(username: string, password: string, remote: string, now = Date.now()): Promise<SignInResult> {
    const userKey = username.toLowerCase();
    const throttles = [
      [this.userThrottle, userKey],
      [this.addressThrottle, remote],
    ] as const;
    try {
      // Refused at once when the hashing is full: a burst costs no store work beyond this point.
      this.hashGate.admit({ user: userKey, address: remote });
    } catch (e) {
      if (!(e instanceof HashBusyError)) throw e;
      return { ok: false, retryAfterSeconds: e.retryAfterSeconds, busy: e.scope === 'service' };
    }
    const wait = await reserveAll(throttles, now);
    if (wait > 0) return { ok: false, retryAfterSeconds: Math.ceil(wait / 1000) };
    await this.adminReady;
    let ok: boolean;
    let user: Awaited<ReturnType<Store['getDashboardUserByName']>>;
    try {
      ({ user, ok } = await this.hashGate.run({ user: userKey, address: remote }, async () => {
        const found = await this.store.getDashboardUserByName(username);
        // A user without a password (made by OpenID Connect sign-in) costs the same scrypt work as an unknown name.
        const matches =
          found && found.passwordHash.startsWith('scrypt$')
            ? await verifyPassword(password, found.passwordHash)
            : (await verifyPassword(password, await dummyHash()), false);
        return { user: found, ok: matches };
      }));
    } catch (e) {
      if (!(e instanceof HashBusyError)) throw e;
      // Not checked, so not counted: the attempt may come back.
      for (const [t, key] of throttles) await t.settleSuccess(key, 'refund', now);
      return { ok: false, retryAfterSeconds: e.retryAfterSeconds, busy: e.scope === 'service' };
    }
    if (!user || !ok) return { ok: false };
    await this.userThrottle.settleSuccess(userKey, 'forget', now);
    await this.addressThrottle.settleSuccess(remote, 'refund', now);
    return { ok: true, cookie: await this.openSession(user.id, now) };
  }

  /** Opens a session for the user (signed in by password, invitation or OpenID Connect); the Set-Cookie value. */
  async openSession(userId: string, now = Date.now()): Promise<string> {
    await this.store.deleteExpiredDashboardSessions(now);
    const id = randomSecret(32);
    await this.store.createDashboardSession({
      idHash: sha256(id),
      userId,
      createdAt: now,
      expiresAt: now + this.sessionTtlMs,
    });
    return this.cookie(this.sessionCookie, `${id}.${this.mac('session', id)}`, Math.floor(this.sessionTtlMs / 1000));
  }

  /** A short-lived signed cookie holding `value` (the OpenID Connect sign-in's state); see readSigned. */
  signedCookie(name: string, purpose: string, value: string, maxAgeSeconds: number): string {
    const b = Buffer.from(value, 'utf8').toString('base64url');
    return this.cookie(name, `${b}.${this.mac(purpose, b)}`, maxAgeSeconds);
  }

  /** The value of a cookie made by signedCookie, if its signature holds. */
  readSigned(cookieHeader: string | undefined, name: string, purpose: string): string | undefined {
    const raw = parseCookies(cookieHeader).get(name);
    const b = raw ? this.unsign(purpose, raw) : undefined;
    return b === undefined ? undefined : Buffer.from(b, 'base64url').toString('utf8');
  }

  /** Whether the dashboard is served over https (cookie names with __Host-). */
  get secureCookies(): boolean {
    return this.secure;
  }

  /** The signed-in session behind the request's cookie, if its signature holds and it is live in the store. */
  async session(cookieHeader: string | undefined, now = Date.now()): Promise<SignedInSession | undefined> {
    const raw = parseCookies(cookieHeader).get(this.sessionCookie);
    const id = raw ? this.unsign('session', raw) : undefined;
    if (!id) return undefined;
    // A changed ADMIN_PASSWORD ends the old sessions: none is honoured before that is done.
    await this.adminReady;
    const idHash = sha256(id);
    const stored = await this.store.getDashboardSession(idHash, now);
    if (!stored) return undefined;
    return {
      id,
      idHash,
      userId: stored.userId,
      username: stored.username,
      role: stored.role,
      csrf: this.mac('csrf', id),
      expiresAt: stored.expiresAt,
    };
  }

  checkCsrf(session: SignedInSession, token: unknown): boolean {
    return typeof token === 'string' && safeEqual(token, session.csrf);
  }

  async signOut(session: SignedInSession): Promise<void> {
    await this.store.deleteDashboardSession(session.idHash);
  }
}
