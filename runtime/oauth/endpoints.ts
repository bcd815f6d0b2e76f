import * as oauth from 'oauth4webapi';
import type { OAuth2AuthSpec, OAuth2McpAuthSpec } from '../../core/spec-model.ts';
import type { ConnectorDefinition } from '../../core/tool-types.ts';
import type { Connection, Store } from '../store/types.ts';
import { DecryptError, type Sealer } from '../crypto/sealer.ts';
import { authFor, isMcpAuth, isOAuth2 } from '../connectors/catalog.ts';
import { ServiceError } from '../../core/errors.ts';
import { discoverMcpAuthorization } from './mcp-auth.ts';
import { aad } from '../crypto/aad.ts';

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
}

export function redirectUriFor(publicUrl: string, connectionId: string): string {
  return `${publicUrl}/sso/v1/oauth/${connectionId}/callback`;
}

export function requestOptions(ep: Pick<OAuthEndpoints, 'insecure'>): { [oauth.allowInsecureRequests]?: boolean } {
  return ep.insecure ? { [oauth.allowInsecureRequests]: true } : {};
}

export interface EndpointDeps {
  sealer: Sealer;
  publicUrl: string;
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
  if (isOAuth2(auth)) return staticEndpoints(auth, connection, deps.sealer);
  if (isMcpAuth(auth)) return discoverMcpAuthorization(auth as OAuth2McpAuthSpec, connection, deps);
  throw new ServiceError(400, 'not_oauth', `Connection ${connection.name} uses ${auth.kind} credentials, not OAuth`);
}

function staticEndpoints(auth: OAuth2AuthSpec, connection: Connection, sealer: Sealer): OAuthEndpoints {
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
  };
}
