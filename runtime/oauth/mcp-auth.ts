import * as oauth from 'oauth4webapi';
import type { OAuth2McpAuthSpec } from '../../core/spec-model.ts';
import type { Connection } from '../store/types.ts';
import { ServiceError } from '../../core/errors.ts';
import type { EndpointDeps, OAuthEndpoints } from './endpoints.ts';
import { redirectUriFor } from './endpoints.ts';
import { aad } from '../crypto/aad.ts';

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
  at: number;
}

const CACHE_MS = 60 * 60_000;
const discovered = new Map<string, Discovered>();

async function getJson(url: string, insecure: boolean): Promise<Record<string, unknown> | undefined> {
  if (!insecure && !url.startsWith('https:')) return undefined;
  const res = await fetch(url, {
    headers: { accept: 'application/json' },
    redirect: 'error',
    signal: AbortSignal.timeout(10_000),
  });
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
    if (!(key in out)) out[key] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!;
  }
  return out;
}

/**
 * What an unauthenticated request to the MCP endpoint is told (MCP authorization, RFC 9728 §5.1): the 401's
 * challenge names the protected-resource metadata and may name the scopes to request.
 */
async function challenge(resource: string, insecure: boolean): Promise<{ metadataUrl?: string; scope?: string }> {
  if (!insecure && !resource.startsWith('https:')) return {};
  try {
    const res = await fetch(resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'agent-connector-service', version: '0.1.0' },
        },
      }),
      redirect: 'error',
      signal: AbortSignal.timeout(10_000),
    });
    await res.body?.cancel();
    if (res.status !== 401) return {};
    const params = bearerChallengeParams(res.headers.get('www-authenticate') ?? '');
    return { metadataUrl: params.resource_metadata, scope: params.scope };
  } catch {
    return {};
  }
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
async function protectedResourceMetadata(resource: string, insecure: boolean, metadataUrl: string | undefined) {
  const u = new URL(resource);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  const candidates = [
    metadataUrl,
    `${u.origin}/.well-known/oauth-protected-resource${path}`,
    `${u.origin}/.well-known/oauth-protected-resource`,
  ];
  for (const candidate of new Set(candidates.filter((c): c is string => !!c))) {
    const meta = await getJson(candidate, insecure).catch(() => undefined);
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

async function discover(resource: string, insecure: boolean): Promise<Discovered> {
  const told = await challenge(resource, insecure);
  const prm = await protectedResourceMetadata(resource, insecure, told.metadataUrl);
  const issuer = new URL(String((prm.authorization_servers as unknown[])[0]));
  const options = insecure
    ? { [oauth.allowInsecureRequests]: true, algorithm: 'oauth2' as const }
    : { algorithm: 'oauth2' as const };
  let as: oauth.AuthorizationServer;
  try {
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, options));
  } catch (e) {
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
): Promise<OAuthEndpoints> {
  const resource = connection.oauth.resource ?? auth.resource;
  const insecure = resource.startsWith('http:');
  let d = discovered.get(connection.id);
  if (!d || d.resource !== resource || Date.now() - d.at > CACHE_MS) {
    d = await discover(resource, insecure);
    discovered.set(connection.id, d);
  }
  const redirectUri = redirectUriFor(deps.publicUrl, connection.id);
  const aadText = aad.registration(connection.id);
  let reg = connection.registrationSealed
    ? (JSON.parse(deps.sealer.open(connection.registrationSealed, aadText)) as Registration)
    : undefined;
  if (reg && (reg.issuer !== d.as.issuer || reg.redirect_uri !== redirectUri)) reg = undefined;
  if (!reg) {
    if (!d.as.registration_endpoint) {
      throw new ServiceError(
        502,
        'mcp_registration_unsupported',
        `Authorization server ${d.as.issuer} offers no dynamic client registration`,
      );
    }
    const opts = insecure ? { [oauth.allowInsecureRequests]: true } : {};
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
      throw new ServiceError(
        502,
        'mcp_registration_failed',
        `Dynamic client registration at ${d.as.issuer} failed: ${(e as Error).message}`,
      );
    }
    reg = {
      client_id: client.client_id,
      client_secret: typeof client.client_secret === 'string' ? client.client_secret : undefined,
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
  };
}

/** Forget cached discovery (after a connection changes). */
export function forgetDiscovery(connectionId: string): void {
  discovered.delete(connectionId);
}
