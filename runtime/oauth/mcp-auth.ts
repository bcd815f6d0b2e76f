import * as oauth from 'oauth4webapi';
import type { OAuth2McpAuthSpec } from '../../generator/model.ts';
import type { Connection } from '../store/types.ts';
import { ServiceError } from '../errors.ts';
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
  scopesSupported?: string[];
  at: number;
}

const CACHE_MS = 60 * 60_000;
const discovered = new Map<string, Discovered>();

async function getJson(url: string, insecure: boolean): Promise<Record<string, unknown> | undefined> {
  if (!insecure && !url.startsWith('https:')) return undefined;
  const res = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(10_000) });
  if (!res.ok) return undefined;
  const body: unknown = await res.json().catch(() => undefined);
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : undefined;
}

/**
 * RFC 9728: the protected resource's metadata names its authorization server(s). Tries the path-inserted
 * well-known URL first (/.well-known/oauth-protected-resource/mcp), then the origin's.
 */
async function protectedResourceMetadata(resource: string, insecure: boolean) {
  const u = new URL(resource);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  for (const candidate of [`${u.origin}/.well-known/oauth-protected-resource${path}`, `${u.origin}/.well-known/oauth-protected-resource`]) {
    const meta = await getJson(candidate, insecure).catch(() => undefined);
    if (meta && Array.isArray(meta.authorization_servers) && meta.authorization_servers.length) return meta;
  }
  throw new ServiceError(
    502,
    'mcp_discovery_failed',
    `No OAuth protected-resource metadata at ${resource} (RFC 9728): the MCP server does not say which authorization server to use`,
  );
}

async function discover(resource: string, insecure: boolean): Promise<Discovered> {
  const prm = await protectedResourceMetadata(resource, insecure);
  const issuer = new URL(String((prm.authorization_servers as unknown[])[0]));
  const options = insecure ? { [oauth.allowInsecureRequests]: true, algorithm: 'oauth2' as const } : { algorithm: 'oauth2' as const };
  let as: oauth.AuthorizationServer;
  try {
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, options));
  } catch (e) {
    throw new ServiceError(502, 'mcp_discovery_failed', `Authorization server metadata of ${issuer.href} is unusable: ${(e as Error).message}`);
  }
  if (!as.authorization_endpoint || !as.token_endpoint) {
    throw new ServiceError(502, 'mcp_discovery_failed', `Authorization server ${issuer.href} lists no authorization or token endpoint`);
  }
  const methods = as.code_challenge_methods_supported;
  if (Array.isArray(methods) && !methods.includes('S256')) {
    throw new ServiceError(502, 'mcp_discovery_failed', `Authorization server ${issuer.href} does not support PKCE S256`);
  }
  return {
    as,
    resource: typeof prm.resource === 'string' ? prm.resource : resource,
    scopesSupported: Array.isArray(prm.scopes_supported) ? (prm.scopes_supported as string[]) : undefined,
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
  let reg = connection.registrationSealed ? (JSON.parse(deps.sealer.open(connection.registrationSealed, aadText)) as Registration) : undefined;
  if (reg && (reg.issuer !== d.as.issuer || reg.redirect_uri !== redirectUri)) reg = undefined;
  if (!reg) {
    if (!d.as.registration_endpoint) {
      throw new ServiceError(502, 'mcp_registration_unsupported', `Authorization server ${d.as.issuer} offers no dynamic client registration`);
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
      throw new ServiceError(502, 'mcp_registration_failed', `Dynamic client registration at ${d.as.issuer} failed: ${(e as Error).message}`);
    }
    reg = {
      client_id: client.client_id,
      client_secret: typeof client.client_secret === 'string' ? client.client_secret : undefined,
      token_endpoint_auth_method: String(client.token_endpoint_auth_method ?? 'none'),
      issuer: d.as.issuer,
      redirect_uri: redirectUri,
    };
    await deps.updateRegistration(connection, deps.sealer.seal(JSON.stringify(reg), aadText));
  }
  const clientAuth =
    reg.client_secret && reg.token_endpoint_auth_method === 'client_secret_basic'
      ? oauth.ClientSecretBasic(reg.client_secret)
      : reg.client_secret && reg.token_endpoint_auth_method === 'client_secret_post'
        ? oauth.ClientSecretPost(reg.client_secret)
        : oauth.None();
  const scopes = connection.scopes.length ? connection.scopes : auth.scopes?.default.length ? auth.scopes.default : (d.scopesSupported ?? []);
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
