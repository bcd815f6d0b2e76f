import * as oauth from 'oauth4webapi';
import type { OAuth2McpAuthSpec } from '../../core/spec-model.ts';
import type { Connection } from '../store/types.ts';
import { ServiceError, UpstreamFailure } from '../../core/errors.ts';
import type { EndpointDeps, OAuthEndpoints } from './endpoints.ts';
import { oauthFetch, oauthPolicy, redirectUriFor, requestOptions } from './endpoints.ts';
import { aad } from '../crypto/aad.ts';
import { hostAndPort } from '../upstream/address-guard.ts';
import type { Fetch, FetchPolicy } from '../upstream/fetch.ts';
import { unauthenticatedChallenge } from '../upstream/mcp.ts';
import { setOwn } from '../../core/own.ts';
import { processCache } from '../caches.ts';

interface Registration {
  client_id: string;
  client_secret?: string;
  token_endpoint_auth_method: string;
  issuer: string;
  redirect_uri: string;
}

interface Discovered {
  as: oauth.AuthorizationServer;
  resource: string;
  /** Scopes from the 401 challenge, else the protected resource's scopes_supported. */
  scopes?: string[];
  /** The hosts the authorization server's endpoints may reach whatever they resolve to. */
  hosts: string[];
  at: number;
}

const CACHE_MS = 60 * 60_000;
/** By connection id: an LRU (CONNECTION_CACHE_SIZE), like the connections themselves. */
const discovered = processCache<string, Discovered>('discovery_documents', 'connections');

/** Discovery requests: the 10 s they were always given, and a 1 MiB answer. */
const DISCOVERY_POLICY = { connectTimeoutMs: 5_000, responseTimeoutMs: 5_000, maxBytes: 1 << 20 };

/** A refusal by the address guard: the one discovery failure that is reported as it is, never skipped over. */
const refusedHost = (e: unknown) => e instanceof UpstreamFailure && e.code === 'upstream_host_not_public';

async function getJson(
  url: string,
  insecure: boolean,
  fetchUpstream: Fetch,
): Promise<Record<string, unknown> | undefined> {
  if (!insecure && !url.startsWith('https:')) return undefined;
  const res = await fetchUpstream(url, { headers: { accept: 'application/json' }, redirect: 'error' });
  if (!res.ok) return undefined;
  const body: unknown = await res.json().catch(() => undefined);
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : undefined;
}

/** The auth-params of a `WWW-Authenticate: Bearer …` challenge (quoted or token values). */
export function bearerChallengeParams(header: string): Record<string, string> {
  const bearer = /(?:^|,)\s*Bearer\b(.*)$/i.exec(header);
  if (!bearer) return {};
  const out: Record<string, string> = {};
  const re = /([A-Za-z_][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))/g;
  for (let m = re.exec(bearer[1]!); m; m = re.exec(bearer[1]!)) {
    const key = m[1]!.toLowerCase();
    if (!Object.hasOwn(out, key)) setOwn(out, key, m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!);
  }
  return out;
}

/**
 * What an unauthenticated request to the MCP endpoint is told (MCP authorization, RFC 9728 §5.1): the 401's
 * challenge names the protected-resource metadata and may name the scopes to request.
 */
async function challenge(
  resource: string,
  insecure: boolean,
  policy: FetchPolicy,
): Promise<{ metadataUrl?: string; scope?: string }> {
  if (!insecure && !resource.startsWith('https:')) return {};
  const params = bearerChallengeParams((await unauthenticatedChallenge(resource, policy)) ?? '');
  return { metadataUrl: params.resource_metadata, scope: params.scope };
}

/** Metadata may name a resource at or above the endpoint (same origin, path prefix), never another one. */
function coversEndpoint(metaResource: string, endpoint: string): boolean {
  try {
    const m = new URL(metaResource);
    const e = new URL(endpoint);
    const path = m.pathname.endsWith('/') ? m.pathname : `${m.pathname}/`;
    return m.origin === e.origin && `${e.pathname.replace(/\/+$/, '')}/`.startsWith(path);
  } catch {
    return false;
  }
}

/**
 * RFC 9728: the protected resource's metadata names its authorization server(s). Tried in order: the URL the
 * 401 challenge names, the path-inserted well-known URL (/.well-known/oauth-protected-resource/mcp), the origin's.
 */
async function protectedResourceMetadata(
  resource: string,
  insecure: boolean,
  metadataUrl: string | undefined,
  fetchUpstream: Fetch,
) {
  const u = new URL(resource);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  const candidates = [
    metadataUrl,
    `${u.origin}/.well-known/oauth-protected-resource${path}`,
    `${u.origin}/.well-known/oauth-protected-resource`,
  ];
  for (const candidate of new Set(candidates.filter((c): c is string => !!c))) {
    const meta = await getJson(candidate, insecure, fetchUpstream).catch((e: unknown) => {
      if (refusedHost(e)) throw e;
      return undefined;
    });
    if (!meta || !Array.isArray(meta.authorization_servers) || !meta.authorization_servers.length) continue;
    if (typeof meta.resource === 'string' && !coversEndpoint(meta.resource, resource)) {
      throw new ServiceError(
        502,
        'mcp_discovery_failed',
        `The protected-resource metadata at ${candidate} describes ${meta.resource}, not ${resource} (RFC 9728 §3.3); refusing to use it`,
      );
    }
    return meta;
  }
  throw new ServiceError(
    502,
    'mcp_discovery_failed',
    `No OAuth protected-resource metadata at ${resource} (RFC 9728): the MCP server does not say which authorization server to use`,
  );
}

/**
 * Reads the protected resource's metadata and its authorization server's. Every request goes through the upstream
 * layer: a host outside `hosts` (the connection's configured ones) must resolve to public addresses. The authorization
 * server a resource names is as trusted as the resource only when the operator chose that resource
 * (`operatorResource`, the connection's `oauth.resource`): the operator's own MCP server may well use an internal
 * authorization server, the way an operator's token endpoint may answer with internal hosts.
 */
async function discover(
  resource: string,
  insecure: boolean,
  hosts: string[],
  operatorResource: boolean,
): Promise<Discovered> {
  const told = await challenge(resource, insecure, oauthPolicy(hosts, DISCOVERY_POLICY));
  const prm = await protectedResourceMetadata(
    resource,
    insecure,
    told.metadataUrl,
    oauthFetch(hosts, DISCOVERY_POLICY),
  );
  const issuer = new URL(String((prm.authorization_servers as unknown[])[0]));
  const asHosts = operatorResource ? [...new Set([...hosts, hostAndPort(issuer)])] : hosts;
  const options = {
    ...requestOptions({ insecure, fetch: oauthFetch(asHosts, DISCOVERY_POLICY) }),
    algorithm: 'oauth2' as const,
  };
  let as: oauth.AuthorizationServer;
  try {
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, options));
  } catch (e) {
    if (refusedHost(e)) throw e;
    throw new ServiceError(
      502,
      'mcp_discovery_failed',
      `Authorization server metadata of ${issuer.href} is unusable: ${(e as Error).message}`,
    );
  }
  if (!as.authorization_endpoint || !as.token_endpoint) {
    throw new ServiceError(
      502,
      'mcp_discovery_failed',
      `Authorization server ${issuer.href} lists no authorization or token endpoint`,
    );
  }
  const methods = as.code_challenge_methods_supported;
  if (Array.isArray(methods) && !methods.includes('S256')) {
    throw new ServiceError(
      502,
      'mcp_discovery_failed',
      `Authorization server ${issuer.href} does not support PKCE S256`,
    );
  }
  const supported = Array.isArray(prm.scopes_supported)
    ? (prm.scopes_supported as unknown[]).filter((x): x is string => typeof x === 'string')
    : undefined;
  return {
    as,
    resource: typeof prm.resource === 'string' ? prm.resource : resource,
    scopes: told.scope ? told.scope.split(' ').filter(Boolean) : supported,
    hosts: asHosts,
    at: Date.now(),
  };
}

/**
 * OAuth 2.1 for an MCP server: discover the protected resource and its authorization server, register
 * this connection as a client once (RFC 7591, stored sealed on the connection), then authorize with PKCE
 * and the resource indicator like any other OAuth connector.
 */
export async function discoverMcpAuthorization(
  auth: OAuth2McpAuthSpec,
  connection: Connection,
  deps: EndpointDeps,
  hosts: string[],
): Promise<OAuthEndpoints> {
  const resource = connection.oauth.resource ?? auth.resource;
  const insecure = resource.startsWith('http:');
  let d = discovered().get(connection.id);
  if (!d || d.resource !== resource || Date.now() - d.at > CACHE_MS) {
    d = await discover(resource, insecure, hosts, !!connection.oauth.resource);
    discovered().set(connection.id, d);
  }
  const tokenFetch = oauthFetch(d.hosts);
  const redirectUri = redirectUriFor(deps.publicUrl, connection.id);
  const aadText = aad.registration(connection.id);
  let reg = connection.registrationSealed
    ? (JSON.parse(deps.sealer.open(connection.registrationSealed, aadText)) as Registration)
    : undefined;
  if (reg && (reg.issuer !== d.as.issuer || reg.redirect_uri !== redirectUri)) reg = undefined;
  const metadataUrl = clientMetadataUrlFor(deps.publicUrl, connection.id);
  if (d.as.client_id_metadata_document_supported === true && (insecure || metadataUrl.startsWith('https:'))) {
    // A Client ID Metadata Document (MCP 2025-11-25 and 2026-07-28, draft-ietf-oauth-client-id-metadata-document):
    // the client id is the URL of a document the service publishes (clientMetadataDocument), which the authorization
    // server fetches; nothing to register or store. Preferred over DCR whenever the server advertises it.
    reg = {
      client_id: metadataUrl,
      token_endpoint_auth_method: 'none',
      issuer: d.as.issuer,
      redirect_uri: redirectUri,
    };
  }
  if (!reg) {
    if (!d.as.registration_endpoint) {
      throw new ServiceError(
        502,
        'mcp_registration_unsupported',
        `Authorization server ${d.as.issuer} offers no dynamic client registration`,
      );
    }
    const opts = requestOptions({ insecure, fetch: tokenFetch });
    let client: oauth.Client;
    try {
      const res = await oauth.dynamicClientRegistrationRequest(
        d.as,
        {
          client_name: auth.client_name ?? 'Agent connector service',
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        },
        opts,
      );
      client = await oauth.processDynamicClientRegistrationResponse(res);
    } catch (e) {
      if (refusedHost(e)) throw e;
      throw new ServiceError(
        502,
        'mcp_registration_failed',
        `Dynamic client registration at ${d.as.issuer} failed: ${(e as Error).message}`,
      );
    }
    reg = {
      client_id: client.client_id,
      client_secret: typeof client.client_secret === 'string' ? client.client_secret : undefined,
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a registration answer's method name is a string (RFC 7591); String() keeps a malformed one from throwing
      token_endpoint_auth_method: String(client.token_endpoint_auth_method ?? 'none'),
      issuer: d.as.issuer,
      redirect_uri: redirectUri,
    };
    const sealed = deps.sealer.seal(JSON.stringify(reg), aadText);
    const stored = await deps.updateRegistration(connection, sealed);
    if (stored.registrationSealed && stored.registrationSealed !== sealed) {
      // A concurrent authorization registered first: use its client, which the code exchange will use too.
      const first = JSON.parse(deps.sealer.open(stored.registrationSealed, aadText)) as Registration;
      if (first.issuer === d.as.issuer && first.redirect_uri === redirectUri) reg = first;
    }
  }
  const clientAuth =
    reg.client_secret && reg.token_endpoint_auth_method === 'client_secret_basic'
      ? oauth.ClientSecretBasic(reg.client_secret)
      : reg.client_secret && reg.token_endpoint_auth_method === 'client_secret_post'
        ? oauth.ClientSecretPost(reg.client_secret)
        : oauth.None();
  const scopes = connection.scopes.length
    ? connection.scopes
    : auth.scopes?.default.length
      ? auth.scopes.default
      : (d.scopes ?? []);
  return {
    as: d.as,
    client: { client_id: reg.client_id, token_endpoint_auth_method: reg.token_endpoint_auth_method },
    clientAuth,
    insecure,
    scopes,
    scopeSeparator: ' ',
    pkce: true,
    authorizeParams: {},
    resource: d.resource,
    tokenResponseFields: {},
    fetch: tokenFetch,
  };
}

export interface ClientMetadataDocument {
  client_id: string;
  client_name: string;
  client_uri: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
}

/** Where the service publishes a connection's Client ID Metadata Document: its URL is the client id. */
export function clientMetadataUrlFor(publicUrl: string, connectionId: string): string {
  return `${publicUrl}/oauth/client-metadata/${connectionId}`;
}

/**
 * The Client ID Metadata Document of an MCP connection (draft-ietf-oauth-client-id-metadata-document, as MCP
 * authorization uses it): `client_id` is the document's own URL; a public client (PKCE, no secret) with the
 * connection's callback as its one redirect URI.
 */
export function clientMetadataDocument(
  auth: OAuth2McpAuthSpec,
  connection: Connection,
  publicUrl: string,
): ClientMetadataDocument {
  return {
    client_id: clientMetadataUrlFor(publicUrl, connection.id),
    client_name: auth.client_name ?? 'Agent connector service',
    client_uri: publicUrl,
    redirect_uris: [redirectUriFor(publicUrl, connection.id)],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/** Forget cached discovery (after a connection changes). */
export function forgetDiscovery(connectionId: string): void {
  discovered().delete(connectionId);
}
