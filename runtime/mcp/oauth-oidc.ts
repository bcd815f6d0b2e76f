/**
 * Signing the end user in for the OAuth-protected MCP endpoint (issue 39): the client application's own OpenID
 * provider, per MCP server (`oauth_identity_provider` in the API) or for the whole service (MCP_OAUTH_OIDC_*). The
 * OpenID Connect client side is oauth4webapi's: discovery (cached, bounded), the authorization request with state,
 * nonce and PKCE S256, the callback's validation (state; RFC 9207 `iss` when the provider advertises it), the code
 * exchange and the ID token's checks (issuer, audience, nonce, expiry). The identifier is the configured claim of the
 * ID token, or of the userinfo answer when the ID token lacks it (providers put profile claims there).
 *
 * Every request to the provider goes through the upstream layer: a provider host that resolves to a private address
 * is refused unless UPSTREAM_ALLOWED_HOSTS lists it, and only a listed host may be reached over plain http.
 */
import * as oauth from 'oauth4webapi';
import type { BoundedCache } from '../caches.ts';
import { aad } from '../crypto/aad.ts';
import { oauthFetch } from '../oauth/endpoints.ts';
import type { Services } from '../services.ts';
import type { McpOAuthSettings, McpServerConfig } from '../store/types.ts';
import { CLAIM_NAME, issuerProblem } from '../config.ts';
import { ServiceError } from '../../core/errors.ts';
import { hostAndPort, listedHost } from '../upstream/address-guard.ts';
import { OAuthProblem } from './oauth-clients.ts';

/** The identity provider an MCP server's end users sign in at. */
export interface IdentityProvider {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  identifierClaim: string;
  /** Where the setting comes from, for messages. */
  from: 'server' | 'service';
}

/** Profile claims that come with the `email` or `profile` scope (OpenID Connect Core §5.4). */
const EMAIL_CLAIMS = new Set(['email', 'email_verified']);
const PROFILE_CLAIMS = new Set([
  'name',
  'family_name',
  'given_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'updated_at',
]);

export function callbackUrl(publicUrl: string): string {
  return `${publicUrl}/oauth/mcp/callback`;
}

/** What the provider answered: the identifier, or why there is none. */
export class SignInFailed extends Error {}

export class OidcSignIn {
  private readonly discovered: BoundedCache<string, oauth.AuthorizationServer>;

  constructor(private readonly s: Services) {
    this.discovered = s.caches.create('mcp_oauth_oidc_discovery', { max: 100, ttlMs: 3_600_000 });
  }

  /** The server's provider, else the service's; undefined when neither is set. */
  async providerFor(server: McpServerConfig): Promise<IdentityProvider | undefined> {
    const own = await this.s.store.getMcpOAuthSettings(server.id);
    if (own) {
      const secret = own.oidcClientSecretSealed
        ? this.s.sealer.open(own.oidcClientSecretSealed, aad.mcpOidcClientSecret(server.id))
        : undefined;
      return {
        issuer: own.oidcIssuer,
        clientId: own.oidcClientId,
        ...(secret ? { clientSecret: secret } : {}),
        identifierClaim: own.identifierClaim,
        from: 'server',
      };
    }
    const service = this.s.config.mcpOAuth.oidc;
    return service ? { ...service, from: 'service' } : undefined;
  }

  private options(issuer: URL): { [oauth.allowInsecureRequests]?: boolean; [oauth.customFetch]: typeof fetch } {
    const listed = listedHost(issuer, this.s.config.upstreamAllowedHosts);
    if (issuer.protocol !== 'https:' && !listed)
      throw new OAuthProblem(
        'server_error',
        `The identity provider ${issuer.origin} is not https; plain http is only for a host listed in UPSTREAM_ALLOWED_HOSTS`,
        500,
      );
    const customFetch = oauthFetch(listed ? [hostAndPort(issuer)] : []);
    return issuer.protocol === 'https:'
      ? { [oauth.customFetch]: customFetch }
      : { [oauth.allowInsecureRequests]: true, [oauth.customFetch]: customFetch };
  }

  private async metadata(idp: IdentityProvider): Promise<oauth.AuthorizationServer> {
    const cached = this.discovered.get(idp.issuer);
    if (cached) return cached;
    const issuer = new URL(idp.issuer);
    let as: oauth.AuthorizationServer;
    try {
      const res = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...this.options(issuer) });
      as = await oauth.processDiscoveryResponse(issuer, res);
    } catch (e) {
      if (e instanceof OAuthProblem) throw e;
      throw new OAuthProblem(
        'temporarily_unavailable',
        `The identity provider ${idp.issuer} could not be discovered: ${(e as Error).message}`,
        503,
      );
    }
    if (!as.authorization_endpoint || !as.token_endpoint)
      throw new OAuthProblem(
        'server_error',
        `The identity provider ${idp.issuer} advertises no authorization or token endpoint`,
        500,
      );
    this.discovered.set(idp.issuer, as);
    return as;
  }

  /** The provider's authorization URL for one sign-in: state, nonce and the PKCE verifier are the caller's. */
  async authorizationUrl(idp: IdentityProvider, state: string, nonce: string, verifier: string): Promise<string> {
    const as = await this.metadata(idp);
    const scopes = new Set(['openid']);
    if (EMAIL_CLAIMS.has(idp.identifierClaim)) scopes.add('email');
    if (PROFILE_CLAIMS.has(idp.identifierClaim)) scopes.add('profile');
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('client_id', idp.clientId);
    url.searchParams.set('redirect_uri', callbackUrl(this.s.config.publicUrl));
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', [...scopes].join(' '));
    url.searchParams.set('state', state);
    url.searchParams.set('nonce', nonce);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    return url.href;
  }

  /**
   * The provider's answer at the callback: validated (state, `iss`), the code exchanged, the ID token checked; the
   * end user's identifier. An error the provider sent comes back as an OAuthProblem with its code (access_denied).
   */
  async identifierFrom(
    idp: IdentityProvider,
    params: URLSearchParams,
    expected: { state: string; nonce: string; verifier: string },
  ): Promise<string> {
    const as = await this.metadata(idp);
    const client: oauth.Client = { client_id: idp.clientId };
    const clientAuth = idp.clientSecret ? oauth.ClientSecretBasic(idp.clientSecret) : oauth.None();
    const options = this.options(new URL(idp.issuer));
    let callback: URLSearchParams;
    try {
      callback = oauth.validateAuthResponse(as, client, params, expected.state);
    } catch (e) {
      if (e instanceof oauth.AuthorizationResponseError)
        throw new OAuthProblem(
          e.error === 'access_denied' ? 'access_denied' : 'server_error',
          `The identity provider refused the sign-in: ${e.error}${e.error_description ? ` (${e.error_description})` : ''}`,
        );
      throw new SignInFailed(`The identity provider's answer is not valid: ${(e as Error).message}`);
    }
    let claims: Record<string, unknown>;
    let accessToken: string;
    try {
      const res = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        clientAuth,
        callback,
        callbackUrl(this.s.config.publicUrl),
        expected.verifier,
        options,
      );
      const result = await oauth.processAuthorizationCodeResponse(as, client, res, {
        expectedNonce: expected.nonce,
        requireIdToken: true,
      });
      claims = oauth.getValidatedIdTokenClaims(result) as unknown as Record<string, unknown>;
      accessToken = result.access_token;
    } catch (e) {
      throw new SignInFailed(`The identity provider's code exchange failed: ${(e as Error).message}`);
    }
    let value = claims[idp.identifierClaim];
    if (value === undefined && as.userinfo_endpoint) {
      try {
        const res = await oauth.userInfoRequest(as, client, accessToken, options);
        const info = await oauth.processUserInfoResponse(as, client, String(claims.sub), res);
        value = (info as Record<string, unknown>)[idp.identifierClaim];
      } catch (e) {
        throw new SignInFailed(`The identity provider's userinfo request failed: ${(e as Error).message}`);
      }
    }
    if (typeof value === 'number') value = String(value);
    if (typeof value !== 'string' || !value)
      throw new SignInFailed(
        `The identity provider's answer has no "${idp.identifierClaim}" claim (the claim this MCP server takes the identifier from)`,
      );
    // eslint-disable-next-line no-control-regex
    if (value.length > 255 || /[\u0000-\u001f\u007f]/.test(value))
      throw new SignInFailed(
        `The "${idp.identifierClaim}" claim is not a usable identifier (1-255 characters without control characters)`,
      );
    return value;
  }
}

/** The API's `oauth_identity_provider` input, as given. */
export interface IdentityProviderInput {
  issuer: string;
  client_id: string;
  client_secret?: string | null;
  identifier_claim?: string;
}

/**
 * The settings an API input makes (null: none of its own), checked: the issuer an https URL (plain http only for a
 * host in UPSTREAM_ALLOWED_HOSTS), a client secret left out kept when issuer and client id stay. Throws invalid_input.
 */
export function identityProviderSettings(
  s: Services,
  serverId: string,
  input: IdentityProviderInput | null,
  current: McpOAuthSettings | undefined,
): McpOAuthSettings | null {
  if (input === null) return null;
  const field = 'oauth_identity_provider';
  const bad = (sub: string, message: string) =>
    new ServiceError(400, 'invalid_input', `Invalid MCP server: ${field}.${sub} ${message}`, [
      { field: `${field}.${sub}`, message },
    ]);
  const problem = issuerProblem(input.issuer);
  if (problem) throw bad('issuer', problem);
  const issuer = new URL(input.issuer);
  if (issuer.protocol !== 'https:' && !listedHost(issuer, s.config.upstreamAllowedHosts))
    throw bad('issuer', 'must be https (plain http only for a host listed in UPSTREAM_ALLOWED_HOSTS)');
  if (!input.client_id.trim()) throw bad('client_id', 'must not be empty');
  const claim = input.identifier_claim ?? 'sub';
  if (!CLAIM_NAME.test(claim))
    throw bad('identifier_claim', 'must be a claim name (letters, digits, _.:-, at most 64)');
  const keep =
    input.client_secret === undefined &&
    current &&
    current.oidcIssuer === input.issuer &&
    current.oidcClientId === input.client_id;
  return {
    serverId,
    oidcIssuer: input.issuer,
    oidcClientId: input.client_id,
    oidcClientSecretSealed: keep
      ? current.oidcClientSecretSealed
      : input.client_secret
        ? s.sealer.seal(input.client_secret, aad.mcpOidcClientSecret(serverId))
        : null,
    identifierClaim: claim,
    updatedAt: Date.now(),
  };
}

/** The API's view of a server's own provider (never the secret). */
export function identityProviderView(v: McpOAuthSettings | undefined) {
  return v
    ? {
        issuer: v.oidcIssuer,
        client_id: v.oidcClientId,
        identifier_claim: v.identifierClaim,
        client_secret_set: v.oidcClientSecretSealed !== null,
      }
    : null;
}
