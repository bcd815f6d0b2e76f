import * as oauth from 'oauth4webapi';
import { UpstreamFailure } from '../../core/errors.ts';
import type { OAuthEndpoints } from './endpoints.ts';
import { requestOptions } from './endpoints.ts';

export interface TokenSet {
  access_token: string;
  refresh_token?: string;
  token_type?: string;
  scope?: string;
  /** Epoch ms, or null when the provider gave no expiry. */
  expiresAt: number | null;
  /** Non-secret values lifted from the token response (e.g. a per-customer API base URL). */
  fields: Record<string, string>;
}

/** Why a token request failed: the grant is dead (re-authorize), or the provider had a passing problem. */
export class TokenRequestError extends Error {
  constructor(
    readonly kind: 'invalid_grant' | 'rejected' | 'transient',
    message: string,
    readonly oauthError?: string,
  ) {
    super(message);
  }
}

/**
 * Providers may add an OpenID id_token (e.g. when `openid` is among the scopes); this service is not an
 * identity product and never uses it, and validating it would fail for multi-tenant issuers, so drop it.
 */
async function withoutIdToken(res: Response): Promise<Response> {
  if (!res.ok || !(res.headers.get('content-type') ?? '').includes('json')) return res;
  const text = await res.text();
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    if ('id_token' in body) delete body.id_token;
    return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
  } catch {
    return new Response(text, { status: res.status, headers: res.headers });
  }
}

function toTokenSet(ep: OAuthEndpoints, r: oauth.TokenEndpointResponse): TokenSet {
  const fields: Record<string, string> = {};
  for (const [field, key] of Object.entries(ep.tokenResponseFields)) {
    const v = (r as Record<string, unknown>)[key];
    if (typeof v === 'string' && v) fields[field] = v.replace(/\/+$/, '');
  }
  return {
    access_token: r.access_token,
    refresh_token: typeof r.refresh_token === 'string' ? r.refresh_token : undefined,
    token_type: r.token_type,
    scope: typeof r.scope === 'string' ? r.scope : undefined,
    expiresAt: typeof r.expires_in === 'number' ? Date.now() + r.expires_in * 1000 : null,
    fields,
  };
}

/**
 * Why a token request failed. A host the upstream layer refused (not public, and not configured) is passed on as
 * that refusal: it is neither a dead grant nor a passing outage.
 */
function classify(e: unknown): TokenRequestError | UpstreamFailure {
  if (e instanceof UpstreamFailure && e.code === 'upstream_host_not_public') return e;
  if (e instanceof oauth.ResponseBodyError) {
    if (e.error === 'invalid_grant')
      return new TokenRequestError(
        'invalid_grant',
        `invalid_grant${e.error_description ? `: ${e.error_description}` : ''}`,
        e.error,
      );
    if (e.status >= 500 || e.error === 'temporarily_unavailable' || e.error === 'server_error') {
      return new TokenRequestError('transient', `${e.error}: ${e.error_description ?? ''}`.trim(), e.error);
    }
    return new TokenRequestError(
      'rejected',
      `${e.error}${e.error_description ? `: ${e.error_description}` : ''}`,
      e.error,
    );
  }
  if (e instanceof oauth.OperationProcessingError) {
    const status = (e.cause as { status?: number } | undefined)?.status;
    if (status === undefined || status >= 500 || status === 429) {
      return new TokenRequestError(
        'transient',
        `the token endpoint answered unusably${status ? ` (HTTP ${status})` : ''}: ${e.message}`,
      );
    }
    return new TokenRequestError('rejected', `the token endpoint answered HTTP ${status}: ${e.message}`);
  }
  return new TokenRequestError('transient', `the token endpoint could not be reached: ${(e as Error)?.message ?? e}`);
}

export function authorizationUrl(
  ep: OAuthEndpoints,
  redirectUri: string,
  state: string,
  codeChallenge?: string,
): string {
  const url = new URL(ep.as.authorization_endpoint!);
  const p = url.searchParams;
  p.set('client_id', ep.client.client_id);
  p.set('response_type', 'code');
  p.set('redirect_uri', redirectUri);
  if (ep.scopes.length) p.set('scope', ep.scopes.join(ep.scopeSeparator));
  p.set('state', state);
  if (codeChallenge) {
    p.set('code_challenge', codeChallenge);
    p.set('code_challenge_method', 'S256');
  }
  if (ep.resource) p.set('resource', ep.resource);
  for (const [k, v] of Object.entries(ep.authorizeParams)) p.set(k, v);
  return url.toString();
}

/**
 * Exchanges the code of a callback. The state was already checked (and consumed) by the caller, so
 * oauth4webapi validates the rest of the callback (error parameters, RFC 9207 `iss` when advertised).
 */
export async function exchangeCode(
  ep: OAuthEndpoints,
  callback: URLSearchParams,
  redirectUri: string,
  verifier: string | undefined,
): Promise<TokenSet> {
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(ep.as, ep.client, callback, oauth.skipStateCheck);
  } catch (e) {
    throw new TokenRequestError(
      'rejected',
      `the callback is not a valid authorization response: ${(e as Error).message}`,
    );
  }
  try {
    const res = await oauth.authorizationCodeGrantRequest(
      ep.as,
      ep.client,
      ep.clientAuth,
      params,
      redirectUri,
      verifier ?? oauth.nopkce,
      {
        ...requestOptions(ep),
        ...(ep.resource ? { additionalParameters: { resource: ep.resource } } : {}),
      },
    );
    return toTokenSet(ep, await oauth.processAuthorizationCodeResponse(ep.as, ep.client, await withoutIdToken(res)));
  } catch (e) {
    throw classify(e);
  }
}

export async function refreshTokens(ep: OAuthEndpoints, refreshToken: string): Promise<TokenSet> {
  try {
    const res = await oauth.refreshTokenGrantRequest(ep.as, ep.client, ep.clientAuth, refreshToken, {
      ...requestOptions(ep),
      ...(ep.resource ? { additionalParameters: { resource: ep.resource } } : {}),
    });
    return toTokenSet(ep, await oauth.processRefreshTokenResponse(ep.as, ep.client, await withoutIdToken(res)));
  } catch (e) {
    throw classify(e);
  }
}
