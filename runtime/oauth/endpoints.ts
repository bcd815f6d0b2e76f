import * as oauth from 'oauth4webapi';
import type { OAuth2AuthSpec } from '../../core/spec-model.ts';
import type { ConnectorDefinition } from '../../core/tool-types.ts';
import type { Connection, Store } from '../store/types.ts';
import { DecryptError, type Sealer } from '../crypto/sealer.ts';
import { authFor, configuredHosts, isMcpAuth, isOAuth2, listedOverride } from '../connectors/catalog.ts';
import { ServiceError } from '../../core/errors.ts';
import { discoverMcpAuthorization } from './mcp-auth.ts';
import { aad } from '../crypto/aad.ts';
import { hostAndPort } from '../upstream/address-guard.ts';
import { upstreamFetch, type Fetch, type FetchPolicy } from '../upstream/fetch.ts';

/** Everything needed to run an authorization-code flow and refresh tokens for one connection. */
export interface OAuthEndpoints {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  clientAuth: oauth.ClientAuth;
  /** http:// endpoints are only reachable through connection overrides (tests, self-hosted providers). */
  insecure: boolean;
  scopes: string[];
  scopeSeparator: string;
  pkce: boolean;
  authorizeParams: Record<string, string>;
  /** RFC 8707 resource indicator, sent on authorize, token and refresh requests (MCP). */
  resource?: string;
  tokenResponseFields: Record<string, string>;
  /** How token (and registration) requests are sent: the upstream layer, with this connection's configured hosts. */
  fetch: Fetch;
}

export function redirectUriFor(publicUrl: string, connectionId: string): string {
  return `${publicUrl}/sso/v1/oauth/${connectionId}/callback`;
}

/** oauth4webapi's options for a request to the authorization server: through the upstream layer's fetch. */
export function requestOptions(ep: Pick<OAuthEndpoints, 'insecure' | 'fetch'>): {
  [oauth.allowInsecureRequests]?: boolean;
  [oauth.customFetch]: Fetch;
} {
  return ep.insecure
    ? { [oauth.allowInsecureRequests]: true, [oauth.customFetch]: ep.fetch }
    : { [oauth.customFetch]: ep.fetch };
}

/**
 * Token, refresh and registration requests: the 30 s a token exchange was always given, and a 1 MiB answer; each on
 * a connection of its own. A refresh sent on a kept-alive connection that the server closes at that moment fails
 * with a reset, and cannot be sent again safely (the server may have rotated the refresh token); a new connection
 * per token request, a few per account per day, avoids that race altogether.
 */
const TOKEN_POLICY = {
  connectTimeoutMs: 10_000,
  responseTimeoutMs: 20_000,
  maxBytes: 1 << 20,
  reuseConnections: false,
};

type Limits = Omit<FetchPolicy, 'configuredHosts' | 'limitNote'>;

/** The upstream policy of a request to an authorization server or for discovery. */
export function oauthPolicy(configured: readonly string[], limits: Limits = TOKEN_POLICY): FetchPolicy {
  return { ...limits, configuredHosts: configured, limitNote: 'the limit for OAuth and discovery answers' };
}

/**
 * A fetch to an authorization server through the upstream layer: hosts outside `configured` must resolve to public
 * addresses (checked at the socket's DNS lookup), and every request has timeouts and a size limit.
 */
export function oauthFetch(configured: readonly string[], limits: Limits = TOKEN_POLICY): Fetch {
  return upstreamFetch(oauthPolicy(configured, limits));
}

/**
 * The hosts a connection's OAuth requests may reach whatever they resolve to: the connector's and the connection's
 * configured hosts (see `configuredHosts`) and their authorization and token endpoints.
 */
export function oauthHosts(
  connector: ConnectorDefinition,
  connection: Connection,
  allowedHosts: readonly string[],
): string[] {
  const auth = authFor(connector, connection.authKind);
  const urls = [
    // The connection's own endpoints only when the operator lists their hosts (UPSTREAM_ALLOWED_HOSTS).
    ...[connection.oauth.authorize_url, connection.oauth.token_url].filter((u) => listedOverride(u, allowedHosts)),
    ...(isOAuth2(auth) ? [auth.authorize_url, auth.token_url] : []),
    ...(isMcpAuth(auth) ? [auth.resource] : []),
  ];
  const hosts = configuredHosts(connector, connection, {}, allowedHosts);
  for (const url of urls) {
    if (!url) continue;
    try {
      hosts.push(hostAndPort(new URL(url)));
    } catch {
      // Not a URL: it names no host to exempt (the request to it fails on its own).
    }
  }
  return [...new Set(hosts)];
}

export interface EndpointDeps {
  sealer: Sealer;
  publicUrl: string;
  /** UPSTREAM_ALLOWED_HOSTS: the connection overrides' hosts that may resolve to private addresses. */
  upstreamAllowedHosts: readonly string[];
  /** Stores a dynamic client registration; returns the connection as stored (see `registrationWriter`). */
  updateRegistration(connection: Connection, sealed: string): Promise<Connection>;
}

/**
 * `updateRegistration` over a store. The first registration stored wins: one made from a connection read before
 * another registration was stored is dropped, and the stored connection returned, so that concurrent
 * authorizations end up using the same client.
 */
export function registrationWriter(
  store: Store,
  invalidate: (connectionId: string) => void,
): EndpointDeps['updateRegistration'] {
  return async (c, sealed) => {
    const fresh = await store.getConnection(c.id);
    if (!fresh) return c;
    if (fresh.registrationSealed !== c.registrationSealed) return fresh;
    const updated = await store.updateConnection(c.id, { registrationSealed: sealed }, Date.now());
    invalidate(c.id);
    return updated ?? fresh;
  };
}

export async function endpointsFor(
  connector: ConnectorDefinition,
  connection: Connection,
  deps: EndpointDeps,
): Promise<OAuthEndpoints> {
  const auth = authFor(connector, connection.authKind);
  const hosts = oauthHosts(connector, connection, deps.upstreamAllowedHosts);
  if (isOAuth2(auth)) return staticEndpoints(auth, connection, deps.sealer, hosts);
  if (isMcpAuth(auth)) return discoverMcpAuthorization(auth, connection, deps, hosts);
  throw new ServiceError(400, 'not_oauth', `Connection ${connection.name} uses ${auth.kind} credentials, not OAuth`);
}

function staticEndpoints(
  auth: OAuth2AuthSpec,
  connection: Connection,
  sealer: Sealer,
  hosts: readonly string[],
): OAuthEndpoints {
  if (!connection.clientId) {
    throw new ServiceError(
      409,
      'connection_incomplete',
      `Connection ${connection.name} has no client_id; set it on the connection first`,
    );
  }
  const authorizeUrl = connection.oauth.authorize_url ?? auth.authorize_url;
  const tokenUrl = connection.oauth.token_url ?? auth.token_url;
  let secret: string | undefined;
  try {
    secret = connection.clientSecretSealed
      ? sealer.open(connection.clientSecretSealed, aad.clientSecret(connection.id))
      : undefined;
  } catch (e) {
    if (!(e instanceof DecryptError)) throw e;
    throw new ServiceError(
      409,
      'credentials_unreadable',
      `The stored client secret of connection ${connection.name} cannot be decrypted: it was altered, copied from another record, or sealed with a key this service does not have. Set it again (PATCH /v1/connections/${connection.name}); an operator can list affected records with "npm run keys -- verify".`,
    );
  }
  if (!secret) {
    throw new ServiceError(
      409,
      'connection_incomplete',
      `Connection ${connection.name} has no client_secret; set it on the connection first`,
    );
  }
  return {
    as: { issuer: new URL(authorizeUrl).origin, authorization_endpoint: authorizeUrl, token_endpoint: tokenUrl },
    client: { client_id: connection.clientId },
    clientAuth:
      auth.token_auth === 'client_secret_basic' ? oauth.ClientSecretBasic(secret) : oauth.ClientSecretPost(secret),
    insecure: authorizeUrl.startsWith('http:') || tokenUrl.startsWith('http:'),
    scopes: connection.scopes.length ? connection.scopes : auth.scopes.default,
    scopeSeparator: auth.scopes.separator ?? ' ',
    pkce: auth.pkce !== false,
    authorizeParams: auth.authorize_params ?? {},
    tokenResponseFields: auth.token_response_fields ?? {},
    fetch: oauthFetch(hosts),
  };
}
