/**
 * The MCP clients of the service's authorization server (issue 39, docs/mcp.md "OAuth"): who asks for a token, and
 * where its authorization answers may go.
 *
 * - A **Client ID Metadata Document** (draft-ietf-oauth-client-id-metadata-document, the 2025-11-25 MCP revision's
 *   preferred registration): the client id is an https URL; the service fetches the document it names through the
 *   upstream address guard (a host that resolves to a private address is refused unless UPSTREAM_ALLOWED_HOSTS lists
 *   it), at most 5 KiB, without following redirects, checks that its `client_id` is that URL, and keeps it in a
 *   bounded cache for a few minutes. Nothing is stored.
 * - **Dynamic Client Registration** (RFC 7591), the fallback: the metadata is checked and stored; the client id is
 *   the service's.
 *
 * Both are public clients (`token_endpoint_auth_method: none`): their proof is PKCE and an exact redirect URI.
 * Redirect URIs follow `application_type` (OpenID Connect Registration, as the MCP revision asks): a `web` client's
 * are https; a `native` client's are https, http on a loopback address (any port, RFC 8252 §7.3), or a private-use
 * scheme (`com.example.app:/callback`, RFC 8252 §7.1). A registration without `application_type` is `native` when
 * every redirect URI is one only a native client can use, else `web`.
 */
import type { BoundedCache } from '../caches.ts';
import { newId } from '../ids.ts';
import type { Services } from '../services.ts';
import { oauthFetch } from '../oauth/endpoints.ts';
import { hostAndPort, listedHost } from '../upstream/address-guard.ts';

export interface McpClient {
  clientId: string;
  name: string | null;
  applicationType: 'web' | 'native';
  redirectUris: string[];
  /** 'cimd' (a metadata document) or 'dcr' (registered here). */
  source: 'cimd' | 'dcr';
}

/** A refusal with an RFC 6749 / RFC 7591 error code and a description naming what is wrong. */
export class OAuthProblem extends Error {
  constructor(
    readonly error: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/** The draft's recommended limit for a metadata document. */
export const CIMD_MAX_BYTES = 5 * 1024;
const CIMD_TTL_MS = 5 * 60_000;
const MAX_REDIRECT_URIS = 10;
const MAX_URI_CHARS = 2048;
const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

const isLoopbackHttp = (u: URL) => u.protocol === 'http:' && LOOPBACK.has(u.hostname);
/** A private-use scheme: a reverse domain name (RFC 8252 §7.1), e.g. `com.example.app`. */
const isPrivateUse = (u: URL) => /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(u.protocol);

/** Checks one redirect URI for the application type; the problem, or undefined. */
function redirectProblem(raw: unknown, type: 'web' | 'native'): string | undefined {
  if (typeof raw !== 'string' || !raw || raw.length > MAX_URI_CHARS)
    return `must be a URL of at most ${MAX_URI_CHARS} characters`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return `"${raw.slice(0, 200)}" is not a URL`;
  }
  if (u.hash || raw.includes('#')) return `"${raw.slice(0, 200)}" has a fragment, which a redirect URI may not have`;
  if (u.protocol === 'https:') return undefined;
  if (type === 'native' && (isLoopbackHttp(u) || isPrivateUse(u))) return undefined;
  if (isLoopbackHttp(u) || isPrivateUse(u))
    return `"${raw.slice(0, 200)}" is a native application's redirect URI: set application_type to "native"`;
  return `"${raw.slice(0, 200)}" must be https (or, for application_type "native", http on a loopback address or a private-use scheme)`;
}

/**
 * Checks client metadata (a registration or a metadata document): redirect URIs for the application type,
 * public-client auth, the name. Returns the client, or throws OAuthProblem (`invalid_redirect_uri`,
 * `invalid_client_metadata`).
 */
export function checkClientMetadata(
  body: Record<string, unknown>,
  clientId: string,
  source: McpClient['source'],
): McpClient {
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || !uris.length || uris.length > MAX_REDIRECT_URIS)
    throw new OAuthProblem('invalid_redirect_uri', `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} redirect URIs`);
  const declared = body.application_type;
  if (declared !== undefined && declared !== 'web' && declared !== 'native')
    throw new OAuthProblem('invalid_client_metadata', 'application_type must be "web" or "native"');
  const nativeOnly = uris.every((r) => {
    try {
      const u = new URL(String(r));
      return isLoopbackHttp(u) || isPrivateUse(u);
    } catch {
      return false;
    }
  });
  const type = declared ?? (nativeOnly ? 'native' : 'web');
  uris.forEach((r, i) => {
    const problem = redirectProblem(r, type);
    if (problem) throw new OAuthProblem('invalid_redirect_uri', `redirect_uris[${i}] ${problem}`);
  });
  const method = body.token_endpoint_auth_method;
  if (source === 'cimd' && method !== undefined && method !== 'none')
    throw new OAuthProblem(
      'invalid_client_metadata',
      'token_endpoint_auth_method must be "none": a client identified by a metadata document is a public client',
    );
  const grants = body.grant_types;
  if (
    grants !== undefined &&
    (!Array.isArray(grants) || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token'))
  )
    throw new OAuthProblem('invalid_client_metadata', 'grant_types may list authorization_code and refresh_token only');
  const responses = body.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || responses.some((r) => r !== 'code')))
    throw new OAuthProblem('invalid_client_metadata', 'response_types may list "code" only');
  const name = body.client_name;
  if (name !== undefined && (typeof name !== 'string' || name.length > 200))
    throw new OAuthProblem('invalid_client_metadata', 'client_name must be text of at most 200 characters');
  return {
    clientId,
    name: typeof name === 'string' && name.trim() ? name.trim() : null,
    applicationType: type,
    redirectUris: uris as string[],
    source,
  };
}

/**
 * Whether `given` is one of the client's redirect URIs: exactly, except that a loopback http URI matches on any
 * port (a native app listens on whatever port it gets, RFC 8252 §7.3).
 */
export function redirectMatches(client: McpClient, given: string): boolean {
  let g: URL;
  try {
    g = new URL(given);
  } catch {
    return false;
  }
  return client.redirectUris.some((r) => {
    if (r === given) return true;
    const u = new URL(r);
    if (!isLoopbackHttp(u) || !isLoopbackHttp(g)) return false;
    return u.hostname === g.hostname && u.pathname === g.pathname && u.search === g.search;
  });
}

/** An https URL with a path, as a metadata document's client id must be (the draft, §3). */
export function isMetadataDocumentUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://') || clientId.length > MAX_URI_CHARS) return false;
  try {
    const u = new URL(clientId);
    return u.pathname !== '/' && !u.hash && !u.username && !u.password && u.href === clientId;
  } catch {
    return false;
  }
}

export class McpClients {
  private readonly documents: BoundedCache<string, McpClient>;

  constructor(private readonly s: Services) {
    this.documents = s.caches.create('mcp_oauth_client_documents', {
      max: s.config.caches.mcpSessions,
      ttlMs: CIMD_TTL_MS,
    });
  }

  /** The client a client id names: a metadata document (fetched, or cached) or a registration; else invalid_client. */
  async get(clientId: string): Promise<McpClient> {
    if (!clientId || clientId.length > MAX_URI_CHARS)
      throw new OAuthProblem('invalid_client', 'client_id is required (at most 2048 characters)', 401);
    if (clientId.startsWith('https://')) {
      if (!isMetadataDocumentUrl(clientId))
        throw new OAuthProblem(
          'invalid_client',
          'A client_id that is a URL must be an https URL with a path, no fragment and no credentials, in normal form',
          401,
        );
      const cached = this.documents.get(clientId);
      if (cached) return cached;
      const client = await this.fetchDocument(clientId);
      this.documents.set(clientId, client);
      return client;
    }
    const registered = /^mcpc_[A-Za-z0-9_-]{1,64}$/.test(clientId)
      ? await this.s.store.getMcpOAuthClient(clientId)
      : undefined;
    if (!registered)
      throw new OAuthProblem('invalid_client', `No client "${clientId.slice(0, 100)}" is registered`, 401);
    return checkClientMetadata(registered.metadata, clientId, 'dcr');
  }

  /** Fetches and checks a Client ID Metadata Document, through the address guard. */
  private async fetchDocument(url: string): Promise<McpClient> {
    const u = new URL(url);
    const listed = listedHost(u, this.s.config.upstreamAllowedHosts);
    const fetch = oauthFetch(listed ? [hostAndPort(u)] : [], {
      connectTimeoutMs: 5_000,
      responseTimeoutMs: 10_000,
      maxBytes: CIMD_MAX_BYTES,
      reuseConnections: false,
    });
    let res: Response;
    try {
      res = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'manual' });
    } catch (e) {
      throw new OAuthProblem(
        'invalid_client',
        `The client metadata document at ${url} could not be fetched: ${(e as Error).message}`,
        401,
      );
    }
    if (res.status !== 200)
      throw new OAuthProblem(
        'invalid_client',
        `The client metadata document at ${url} answered HTTP ${res.status} (200 expected; redirects are not followed)`,
        401,
      );
    let body: unknown;
    try {
      body = JSON.parse(await res.text());
    } catch {
      throw new OAuthProblem('invalid_client', `The client metadata document at ${url} is not JSON`, 401);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new OAuthProblem('invalid_client', `The client metadata document at ${url} is not a JSON object`, 401);
    const doc = body as Record<string, unknown>;
    if (doc.client_id !== url)
      throw new OAuthProblem(
        'invalid_client',
        `The client metadata document at ${url} names another client_id (it must be the document's own URL)`,
        401,
      );
    for (const secret of ['client_secret', 'client_secret_expires_at'])
      if (secret in doc)
        throw new OAuthProblem('invalid_client', `The client metadata document at ${url} may not carry ${secret}`, 401);
    try {
      return checkClientMetadata(doc, url, 'cimd');
    } catch (e) {
      if (!(e instanceof OAuthProblem)) throw e;
      throw new OAuthProblem('invalid_client', `The client metadata document at ${url}: ${e.message}`, 401);
    }
  }

  /** RFC 7591 registration: checks the metadata, stores it, answers it with the new client id. */
  async register(body: unknown): Promise<Record<string, unknown>> {
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new OAuthProblem('invalid_client_metadata', 'The registration must be a JSON object of client metadata');
    const input = body as Record<string, unknown>;
    const clientId = newId('mcpc');
    const client = checkClientMetadata(input, clientId, 'dcr');
    const scope = input.scope;
    if (scope !== undefined && (typeof scope !== 'string' || scope.length > 200))
      throw new OAuthProblem('invalid_client_metadata', 'scope must be text of at most 200 characters');
    const clientUri = input.client_uri;
    if (
      clientUri !== undefined &&
      (typeof clientUri !== 'string' || !clientUri.startsWith('https://') || clientUri.length > MAX_URI_CHARS)
    )
      throw new OAuthProblem('invalid_client_metadata', 'client_uri must be an https URL');
    const now = Date.now();
    const metadata: Record<string, unknown> = {
      redirect_uris: client.redirectUris,
      application_type: client.applicationType,
      // Public clients only: whatever method was asked for, PKCE is the proof (RFC 7591 §3.2.1 lets the server say so).
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(client.name ? { client_name: client.name } : {}),
      ...(typeof clientUri === 'string' ? { client_uri: clientUri } : {}),
      ...(typeof scope === 'string' ? { scope } : {}),
    };
    await this.s.store.createMcpOAuthClient({ clientId, metadata, createdAt: now });
    return { client_id: clientId, client_id_issued_at: Math.floor(now / 1000), ...metadata };
  }
}
