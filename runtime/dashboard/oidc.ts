/**
 * Dashboard sign-in through the company's OpenID provider (issue 37, item 4; DASHBOARD_OIDC_*).
 *
 * The OpenID Connect client side is oauth4webapi's, as for the MCP endpoint's end users (runtime/mcp/oauth-oidc.ts):
 * discovery (cached, bounded), the authorization code flow with PKCE S256, state and nonce, the callback's validation
 * (state; RFC 9207 `iss` when the provider advertises it), the code exchange and the ID token's checks (signature
 * against the provider's JWKS, issuer, audience, nonce, expiry). State, nonce and verifier travel in a short-lived
 * cookie signed with the dashboard's cookie key, bound to the browser that started the sign-in.
 *
 * Who may sign in, and as what, is decided at every sign-in from the ID token (or userinfo) claims:
 * - with DASHBOARD_OIDC_ALLOWED_DOMAINS, the e-mail must be verified (`email_verified`) and in one of the domains;
 * - the role is the highest one DASHBOARD_OIDC_ROLES maps the user's groups to, else DASHBOARD_OIDC_DEFAULT_ROLE,
 *   else the user is refused. It is written to the user's row each time, so a user removed from the admin group is
 *   an admin no more from their next sign-in.
 * Users are found by `oidc_subject` (issuer and `sub`), never by e-mail: a password user of the same name is not
 * taken over.
 */
import * as oauth from 'oauth4webapi';
import type { BoundedCache } from '../caches.ts';
import type { DashboardOidcSettings } from '../config.ts';
import { oauthFetch } from '../oauth/endpoints.ts';
import type { Services } from '../services.ts';
import type { DashboardRole, DashboardUser } from '../store/types.ts';
import { hostAndPort, listedHost } from '../upstream/address-guard.ts';
import { newId, randomSecret } from '../ids.ts';
import { allows } from './roles.ts';

export const OIDC_START_PATH = '/dashboard/oidc/start';
export const OIDC_CALLBACK_PATH = '/dashboard/oidc/callback';
const STATE_PURPOSE = 'dashboard-oidc-state';
const STATE_TTL_SECONDS = 600;
/** Stored as the password hash of users made by OpenID Connect: no password ever verifies against it. */
const NO_PASSWORD = 'oidc:no-password';

/** Why a sign-in was refused: `reason` goes to the audit log, `message` to the page. */
export class OidcRefusal extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly actor = '(unknown)',
    readonly status = 403,
  ) {
    super(message);
  }
}

interface PendingSignIn {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
}

export interface OidcSignedIn {
  user: DashboardUser;
  created: boolean;
  previousRole?: DashboardRole;
  email?: string;
}

/** The role groups give: the highest role a mapped group gives, else the default role; undefined: none. */
export function roleForGroups(
  settings: Pick<DashboardOidcSettings, 'roles' | 'defaultRole'>,
  groups: readonly string[],
): DashboardRole | undefined {
  let best: DashboardRole | undefined;
  for (const g of groups) {
    const r = settings.roles.get(g);
    if (r && (!best || allows(r, best))) best = r;
  }
  return best ?? settings.defaultRole;
}

export class DashboardOidc {
  private readonly discovered: BoundedCache<string, oauth.AuthorizationServer>;
  readonly stateCookie: string;

  constructor(
    private readonly s: Services,
    readonly settings: DashboardOidcSettings,
  ) {
    this.discovered = s.caches.create('dashboard_oidc_discovery', { max: 1, ttlMs: 3_600_000 });
    this.stateCookie = s.dashboard.secureCookies ? '__Host-acs_dashboard_oidc' : 'acs_dashboard_oidc';
  }

  get callbackUrl(): string {
    return `${this.s.config.publicUrl}${OIDC_CALLBACK_PATH}`;
  }

  private options(): { [oauth.allowInsecureRequests]?: boolean; [oauth.customFetch]: typeof fetch } {
    const issuer = new URL(this.settings.issuer);
    const listed = listedHost(issuer, this.s.config.upstreamAllowedHosts);
    if (issuer.protocol !== 'https:' && !listed)
      throw new OidcRefusal(
        'provider_unavailable',
        `The identity provider ${issuer.origin} is not https; plain http is only for a host listed in UPSTREAM_ALLOWED_HOSTS.`,
        '(unknown)',
        500,
      );
    const customFetch = oauthFetch(listed ? [hostAndPort(issuer)] : []);
    return issuer.protocol === 'https:'
      ? { [oauth.customFetch]: customFetch }
      : { [oauth.allowInsecureRequests]: true, [oauth.customFetch]: customFetch };
  }

  private async metadata(): Promise<oauth.AuthorizationServer> {
    const cached = this.discovered.get(this.settings.issuer);
    if (cached) return cached;
    const issuer = new URL(this.settings.issuer);
    let as: oauth.AuthorizationServer;
    try {
      const res = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...this.options() });
      as = await oauth.processDiscoveryResponse(issuer, res);
    } catch (e) {
      if (e instanceof OidcRefusal) throw e;
      throw new OidcRefusal(
        'provider_unavailable',
        `The identity provider ${this.settings.issuer} could not be reached: ${(e as Error).message}`,
        '(unknown)',
        503,
      );
    }
    if (!as.authorization_endpoint || !as.token_endpoint || !as.jwks_uri)
      throw new OidcRefusal(
        'provider_unavailable',
        `The identity provider ${this.settings.issuer} advertises no authorization, token or JWKS endpoint`,
        '(unknown)',
        503,
      );
    this.discovered.set(this.settings.issuer, as);
    return as;
  }

  /** The provider's authorization URL for a new sign-in, and the state cookie to set with the redirect. */
  async start(next: string): Promise<{ url: string; setCookie: string }> {
    const as = await this.metadata();
    const pending: PendingSignIn = {
      state: oauth.generateRandomState(),
      nonce: oauth.generateRandomNonce(),
      verifier: oauth.generateRandomCodeVerifier(),
      next,
    };
    const scopes = ['openid', 'email', 'profile'];
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('client_id', this.settings.clientId);
    url.searchParams.set('redirect_uri', this.callbackUrl);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', scopes.join(' '));
    url.searchParams.set('state', pending.state);
    url.searchParams.set('nonce', pending.nonce);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(pending.verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    return {
      url: url.href,
      setCookie: this.s.dashboard.signedCookie(
        this.stateCookie,
        STATE_PURPOSE,
        JSON.stringify(pending),
        STATE_TTL_SECONDS,
      ),
    };
  }

  /** The sign-in started in this browser (from its signed cookie), if any. */
  pending(cookieHeader: string | undefined): PendingSignIn | undefined {
    const raw = this.s.dashboard.readSigned(cookieHeader, this.stateCookie, STATE_PURPOSE);
    if (!raw || raw.length > 2000) return undefined;
    try {
      const v = JSON.parse(raw) as PendingSignIn;
      return typeof v.state === 'string' && typeof v.nonce === 'string' && typeof v.verifier === 'string'
        ? { state: v.state, nonce: v.nonce, verifier: v.verifier, next: typeof v.next === 'string' ? v.next : '' }
        : undefined;
    } catch {
      return undefined;
    }
  }

  /** The provider's claims for this callback: validated, code exchanged, ID token checked. Throws OidcRefusal. */
  private async claims(params: URLSearchParams, pending: PendingSignIn): Promise<Record<string, unknown>> {
    const as = await this.metadata();
    const client: oauth.Client = { client_id: this.settings.clientId };
    const clientAuth = this.settings.clientSecret ? oauth.ClientSecretBasic(this.settings.clientSecret) : oauth.None();
    const options = this.options();
    let callback: URLSearchParams;
    try {
      callback = oauth.validateAuthResponse(as, client, params, pending.state);
    } catch (e) {
      if (e instanceof oauth.AuthorizationResponseError)
        throw new OidcRefusal(
          'provider_refused',
          `The identity provider refused the sign-in: ${e.error}${e.error_description ? ` (${e.error_description})` : ''}`,
        );
      throw new OidcRefusal('invalid_response', `The identity provider's answer is not valid: ${(e as Error).message}`);
    }
    let claims: Record<string, unknown>;
    let accessToken: string;
    try {
      const res = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        clientAuth,
        callback,
        this.callbackUrl,
        pending.verifier,
        options,
      );
      const result = await oauth.processAuthorizationCodeResponse(as, client, res, {
        expectedNonce: pending.nonce,
        requireIdToken: true,
      });
      claims = { ...(oauth.getValidatedIdTokenClaims(result) as unknown as Record<string, unknown>) };
      accessToken = result.access_token;
    } catch (e) {
      const why =
        e instanceof oauth.ResponseBodyError
          ? `${e.error}${e.error_description ? ` (${e.error_description})` : ''}`
          : (e as Error).message;
      throw new OidcRefusal('invalid_response', `The identity provider's code exchange failed: ${why}`);
    }
    // Providers often put e-mail and groups in the userinfo answer rather than the ID token.
    const missing = ['email', 'email_verified', this.settings.groupsClaim].some((c) => claims[c] === undefined);
    if (missing && as.userinfo_endpoint) {
      try {
        const res = await oauth.userInfoRequest(as, client, accessToken, options);
        const info = (await oauth.processUserInfoResponse(as, client, String(claims.sub), res)) as Record<
          string,
          unknown
        >;
        for (const [k, v] of Object.entries(info)) if (claims[k] === undefined) claims[k] = v;
      } catch (e) {
        throw new OidcRefusal(
          'invalid_response',
          `The identity provider's userinfo request failed: ${(e as Error).message}`,
        );
      }
    }
    return claims;
  }

  /**
   * Completes a sign-in at the callback: the user (found by issuer and subject, else created) with the role their
   * groups give now. Throws OidcRefusal naming why when the provider's answer is not valid or nothing allows them.
   */
  async finish(params: URLSearchParams, pending: PendingSignIn, now = Date.now()): Promise<OidcSignedIn> {
    const claims = await this.claims(params, pending);
    const sub = claims.sub;
    if (typeof sub !== 'string' || !sub || sub.length > 255)
      throw new OidcRefusal('invalid_response', 'The identity provider sent no usable subject ("sub").');
    const email =
      typeof claims.email === 'string' && claims.email.length <= 254 && /^[^\s@]+@[^\s@]+$/.test(claims.email)
        ? claims.email
        : undefined;
    const actor = (email ?? sub).slice(0, 200);
    if (this.settings.allowedDomains.length > 0) {
      if (!email)
        throw new OidcRefusal(
          'no_email',
          'Your identity provider sent no e-mail address, and this dashboard admits only addresses of certain domains.',
          actor,
        );
      if (claims.email_verified !== true)
        throw new OidcRefusal(
          'email_not_verified',
          `Your e-mail address ${email} is not verified at your identity provider, and this dashboard admits only verified addresses.`,
          actor,
        );
      const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
      if (!this.settings.allowedDomains.includes(domain))
        throw new OidcRefusal(
          'domain_not_allowed',
          `The e-mail domain ${domain} is not one this dashboard admits. Ask an admin of the dashboard if you need access.`,
          actor,
        );
    }
    const raw = claims[this.settings.groupsClaim];
    const groups = (Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : [])
      .filter((g): g is string => typeof g === 'string')
      .slice(0, 1000);
    const role = roleForGroups(this.settings, groups);
    if (!role)
      throw new OidcRefusal(
        'no_role',
        'None of your groups gives access to this dashboard. Ask an admin of the dashboard if you need access.',
        actor,
      );
    const subject = `${this.settings.issuer} ${sub}`;
    const existing = await this.s.store.getDashboardUserBySubject(subject);
    if (existing) {
      if (existing.role === role) return { user: existing, created: false, ...(email ? { email } : {}) };
      const changed = await this.s.store.setDashboardUserRole(existing.id, role, now);
      if (changed === 'last_admin')
        throw new OidcRefusal(
          'last_admin',
          'Your groups no longer make you an admin, but you are the dashboard’s last admin: an admin role must stay. Ask for the admin group back, or make another admin first.',
          actor,
        );
      if (changed === 'not_found') throw new OidcRefusal('invalid_response', 'Your user was removed meanwhile.', actor);
      return {
        user: { ...existing, role, updatedAt: now },
        created: false,
        previousRole: existing.role,
        ...(email ? { email } : {}),
      };
    }
    // Named by the e-mail only when the provider vouches for it, so nobody can take a colleague's name by claiming
    // their address; else by the subject.
    const username = (email && claims.email_verified === true ? email : sub).slice(0, 200);
    const user: DashboardUser = {
      id: newId('du'),
      username,
      passwordHash: `${NO_PASSWORD}:${randomSecret(8)}`,
      role,
      oidcSubject: subject,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await this.s.store.createDashboardUser(user))) {
      // Another sign-in of the same subject just made it, or a user of that name exists (a password user).
      const raced = await this.s.store.getDashboardUserBySubject(subject);
      if (raced) return { user: raced, created: false, ...(email ? { email } : {}) };
      throw new OidcRefusal(
        'username_taken',
        `A dashboard user named ${username} already exists and signs in with a password. An admin can remove that user so that you can sign in through your identity provider.`,
        actor,
        409,
      );
    }
    return { user, created: true, ...(email ? { email } : {}) };
  }
}
