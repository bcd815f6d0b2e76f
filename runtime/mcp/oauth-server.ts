/**
 * The OAuth-protected MCP endpoint (issue 39, docs/mcp.md "OAuth"), beside the per-user URL-token one: every MCP
 * server is also reachable at `{PUBLIC_URL}/mcp/oauth/{server_id}` (its `oauth_url`), where the credential is a
 * bearer token the service itself issues as the authorization server for MCP clients.
 *
 * - Protected resource (RFC 9728): `/.well-known/oauth-protected-resource/mcp/oauth/{id}`; a request without a
 *   token is answered 401 with `WWW-Authenticate: Bearer resource_metadata="…"`, an unknown, expired, revoked or
 *   foreign token with `error="invalid_token"`. A token carries its audience (the RFC 8707 `resource` it was asked
 *   for) and serves that one server only.
 * - Authorization server (RFC 8414 metadata at `/.well-known/oauth-authorization-server`; issuer PUBLIC_URL):
 *   the authorization code grant with PKCE S256 required, `resource` required and checked, `iss` in every
 *   authorization response (RFC 9207), access tokens of MCP_OAUTH_ACCESS_TOKEN_TTL_SECONDS, refresh tokens rotated
 *   at each use (a used one presented again revokes its whole grant), revocation (RFC 7009). Clients identify by a
 *   Client ID Metadata Document or register by DCR (runtime/mcp/oauth-clients.ts).
 * - The end user signs in at the application's OpenID provider (runtime/mcp/oauth-oidc.ts), then a consent page
 *   names the MCP server, the client and the tools; the token then opens exactly what an MCP URL for that identifier
 *   opens (the same McpScope).
 *
 * Every secret handed out (the browser's session cookie, codes, access and refresh tokens) is 32 random bytes of
 * which the store keeps the SHA-256 only; a lookup by hash is compared again in constant time. The browser's
 * session is a cookie (HttpOnly, SameSite=Lax: the identity provider's redirect back is a top-level GET) scoped to
 * /oauth/mcp; the consent form carries a CSRF token derived from it. Any instance of the service answers any step.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { newId, randomSecret } from '../ids.ts';
import type { Services } from '../services.ts';
import type { McpOAuthGrant, McpServerConfig } from '../store/types.ts';
import { connectors } from '../connectors/catalog.ts';
import type { McpScope, McpServers } from './servers.ts';
import { McpClients, OAuthProblem, redirectMatches, type McpClient } from './oauth-clients.ts';
import { OidcSignIn, SignInFailed } from './oauth-oidc.ts';
import type { McpEndpoint } from './endpoint.ts';

/** The one scope: use the MCP server's tools as the signed-in end user. */
export const MCP_TOOLS_SCOPE = 'mcp:tools';
const SESSION_TTL_MS = 10 * 60_000;
const CODE_TTL_MS = 60_000;
const COOKIE = 'acs_mcp_oauth';
const COOKIE_PATH = '/oauth/mcp';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const b64sha256 = (s: string) => createHash('sha256').update(s).digest('base64url');

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A form's or query's text fields (the validators refused anything else). */
function strings(o: object): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(o)) if (typeof v === 'string') out[k] = v;
  return out;
}

export interface McpTokenAnswer {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: string[];
  resource_name: string;
}

/** Why a request to the OAuth MCP endpoint is refused: the status and the WWW-Authenticate challenge. */
export class BearerRefused extends Error {
  constructor(
    readonly status: 401 | 404,
    readonly challenge: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** The session's data: the MCP client's authorization request, and the sign-in in progress at the provider. */
interface SessionData extends Record<string, unknown> {
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  resource: string;
  scope: string;
  oidcState: string;
  nonce: string;
}

export class McpOAuth {
  readonly clients: McpClients;
  readonly oidc: OidcSignIn;

  constructor(
    private readonly s: Services,
    private readonly servers: McpServers,
  ) {
    this.clients = new McpClients(s);
    this.oidc = new OidcSignIn(s);
  }

  private get publicUrl(): string {
    return this.s.config.publicUrl;
  }

  /** The issuer: the service itself. */
  get issuer(): string {
    return this.publicUrl;
  }

  /** A server's OAuth-protected MCP endpoint: its `oauth_url`, and the resource its tokens are for. */
  resourceOf(serverId: string): string {
    return `${this.publicUrl}/mcp/oauth/${serverId}`;
  }

  metadataUrlOf(serverId: string): string {
    return `${this.publicUrl}/.well-known/oauth-protected-resource/mcp/oauth/${serverId}`;
  }

  /** The server a resource indicator names, when it is one of this service's OAuth MCP endpoints. */
  private async serverOfResource(resource: string): Promise<McpServerConfig | undefined> {
    const prefix = `${this.publicUrl}/mcp/oauth/`;
    if (!resource.startsWith(prefix)) return undefined;
    const id = resource.slice(prefix.length);
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(id)) return undefined;
    return this.s.store.getMcpServer(id);
  }

  /** RFC 9728 metadata of one server's endpoint; undefined for an unknown server. */
  async protectedResourceMetadata(serverId: string): Promise<ProtectedResourceMetadata | undefined> {
    const server = await this.s.store.getMcpServer(serverId);
    if (!server) return undefined;
    return {
      resource: this.resourceOf(server.id),
      authorization_servers: [this.issuer],
      scopes_supported: [MCP_TOOLS_SCOPE],
      bearer_methods_supported: ['header'],
      resource_name: server.name,
    };
  }

  /** RFC 8414 metadata of the authorization server. */
  authorizationServerMetadata(): Record<string, unknown> {
    const base = this.publicUrl;
    return {
      issuer: this.issuer,
      authorization_endpoint: `${base}/oauth/mcp/authorize`,
      token_endpoint: `${base}/oauth/mcp/token`,
      registration_endpoint: `${base}/oauth/mcp/register`,
      revocation_endpoint: `${base}/oauth/mcp/revoke`,
      scopes_supported: [MCP_TOOLS_SCOPE],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    };
  }

  // --- The protected resource ---

  /**
   * The scope a bearer token opens at `/mcp/oauth/{serverId}`; throws BearerRefused (401 with the challenge, or 404
   * for an unknown server).
   */
  async scopeOfRequest(req: IncomingMessage, serverId: string): Promise<McpScope> {
    const server = /^[A-Za-z0-9_-]{1,100}$/.test(serverId) ? await this.s.store.getMcpServer(serverId) : undefined;
    if (!server) throw new BearerRefused(404, undefined, `No MCP server with id "${serverId.slice(0, 100)}"`);
    const metadata = `resource_metadata="${this.metadataUrlOf(server.id)}"`;
    const header = req.headers.authorization ?? '';
    const m = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
    if (!m)
      throw new BearerRefused(
        401,
        `Bearer ${metadata}, scope="${MCP_TOOLS_SCOPE}"`,
        'Authorization required: send an access token from this service’s authorization server (Authorization: Bearer …)',
      );
    const invalid = (why: string) =>
      new BearerRefused(401, `Bearer error="invalid_token", error_description="${why}", ${metadata}`, why);
    const token = m[1]!;
    const hash = sha256(token);
    const grant = token.length <= 100 ? await this.s.store.findMcpOAuthGrant(hash) : undefined;
    if (
      !grant ||
      grant.kind !== 'access' ||
      !timingSafeEqual(Buffer.from(grant.tokenHash, 'hex'), Buffer.from(hash, 'hex'))
    )
      throw invalid('The access token is unknown');
    if (grant.revokedAt !== null) throw invalid('The access token was revoked');
    if (grant.expiresAt <= Date.now()) throw invalid('The access token expired');
    // The audience: a token asked for another MCP server (another resource) opens nothing here.
    if (grant.serverId !== server.id || grant.data.resource !== this.resourceOf(server.id))
      throw invalid('The access token was issued for another resource');
    return { server, identifier: grant.identifier! };
  }

  /** `POST /mcp/oauth/{server_id}`: the Host and Origin checks, the bearer token, then the MCP request. */
  async serveMcp(req: IncomingMessage, res: ServerResponse, serverId: string, endpoint: McpEndpoint): Promise<void> {
    const refused = endpoint.refusedHost(req);
    if (refused) return rpcError(res, 403, -32000, refused);
    let scope: McpScope;
    try {
      scope = await this.scopeOfRequest(req, serverId);
    } catch (e) {
      if (!(e instanceof BearerRefused)) throw e;
      return rpcError(res, e.status, -32001, e.message, e.challenge ? { 'www-authenticate': e.challenge } : {});
    }
    await endpoint.serveBody(req, res, scope);
  }

  // --- The authorization endpoint and the sign-in ---

  private cookieOf(req: IncomingMessage): string {
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const [name, ...rest] = part.trim().split('=');
      if (name === COOKIE) return rest.join('=');
    }
    return '';
  }

  private cookie(value: string, maxAgeSeconds: number): string {
    const secure = this.publicUrl.startsWith('https:') ? '; Secure' : '';
    return `${COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure}`;
  }

  /** The PKCE verifier of the sign-in at the identity provider: derived from the browser's secret, never stored. */
  private verifierOf(sid: string): string {
    return b64sha256(`pkce:${sid}`);
  }

  /** The consent form's CSRF token: derived from the browser's secret (which the page's origin alone can read). */
  private csrfOf(sid: string): string {
    return createHmac('sha256', sid).update('mcp-oauth-consent').digest('base64url');
  }

  /** A redirect to the client with the answer, `state` and `iss` (RFC 9207). */
  private answerUrl(redirectUri: string, params: Record<string, string | null>): string {
    const u = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
    u.searchParams.set('iss', this.issuer);
    return u.href;
  }

  /**
   * GET /oauth/mcp/authorize. Before the client and its redirect URI are known, a problem is a page; after, it goes
   * back to the client as an error response. On success the browser goes to the identity provider.
   */
  async authorize(res: ServerResponse, query: object): Promise<void> {
    const q = strings(query);
    let client: McpClient;
    try {
      client = await this.clients.get(q.client_id ?? '');
    } catch (e) {
      if (!(e instanceof OAuthProblem)) throw e;
      return page(res, 400, 'The application could not be identified', e.message);
    }
    const redirectUri = q.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : '');
    if (!redirectUri || !redirectMatches(client, redirectUri))
      return page(
        res,
        400,
        'The application’s redirect address is not registered',
        `redirect_uri must be one of the redirect URIs of client ${client.clientId}.`,
      );
    const state = q.state ?? null;
    const fail = (error: string, description: string) =>
      redirect(res, this.answerUrl(redirectUri, { error, error_description: description, state }));
    if (q.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be "code"');
    if (!q.code_challenge || !/^[A-Za-z0-9._~-]{43,128}$/.test(q.code_challenge))
      return fail('invalid_request', 'code_challenge is required (PKCE, 43 to 128 characters)');
    if (q.code_challenge_method !== 'S256')
      return fail('invalid_request', 'code_challenge_method must be S256 (the only method supported)');
    if (!q.resource) return fail('invalid_target', 'resource is required: the oauth_url of the MCP server (RFC 8707)');
    const server = await this.serverOfResource(q.resource);
    if (!server)
      return fail('invalid_target', `resource "${q.resource.slice(0, 200)}" is not an MCP server of this service`);
    const scopes = (q.scope ?? MCP_TOOLS_SCOPE).split(' ').filter(Boolean);
    if (scopes.some((x) => x !== MCP_TOOLS_SCOPE))
      return fail('invalid_scope', `scope may name ${MCP_TOOLS_SCOPE} only`);
    let idp;
    try {
      idp = await this.oidc.providerFor(server);
    } catch (e) {
      this.s.log.error({ server: server.id, err: (e as Error).message }, 'MCP OAuth: identity provider unreadable');
      return fail('server_error', 'The identity provider settings of this MCP server could not be read');
    }
    if (!idp)
      return fail(
        'server_error',
        `MCP server ${server.name} has no identity provider to sign users in: set its oauth_identity_provider, or MCP_OAUTH_OIDC_ISSUER`,
      );
    const sid = randomSecret(32);
    const now = Date.now();
    const data: SessionData = {
      redirectUri,
      state,
      codeChallenge: q.code_challenge,
      resource: this.resourceOf(server.id),
      scope: MCP_TOOLS_SCOPE,
      oidcState: randomSecret(16),
      nonce: randomSecret(16),
    };
    let to: string;
    try {
      to = await this.oidc.authorizationUrl(idp, data.oidcState, data.nonce, this.verifierOf(sid));
    } catch (e) {
      if (!(e instanceof OAuthProblem)) throw e;
      this.s.log.warn({ server: server.id, err: e.message }, 'MCP OAuth: identity provider unavailable');
      return fail(e.error, e.message);
    }
    const id = newId('mcpgr');
    await this.s.store.createMcpOAuthGrant({
      id,
      kind: 'session',
      tokenHash: sha256(sid),
      family: id,
      serverId: server.id,
      clientId: client.clientId,
      identifier: null,
      data,
      expiresAt: now + SESSION_TTL_MS,
      usedAt: null,
      revokedAt: null,
      createdAt: now,
    });
    res.setHeader('set-cookie', this.cookie(sid, SESSION_TTL_MS / 1000));
    redirect(res, to);
  }

  /** The browser's session (by its cookie), when it is live. */
  private async session(req: IncomingMessage): Promise<{ sid: string; grant: McpOAuthGrant } | undefined> {
    const sid = this.cookieOf(req);
    if (!/^[A-Za-z0-9_-]{43}$/.test(sid)) return undefined;
    const hash = sha256(sid);
    const grant = await this.s.store.findMcpOAuthGrant(hash);
    if (
      !grant ||
      grant.kind !== 'session' ||
      !timingSafeEqual(Buffer.from(grant.tokenHash, 'hex'), Buffer.from(hash, 'hex')) ||
      grant.usedAt !== null ||
      grant.revokedAt !== null ||
      grant.expiresAt <= Date.now()
    )
      return undefined;
    return { sid, grant };
  }

  /** GET /oauth/mcp/callback: the identity provider's answer; signs the user in, then shows the consent page. */
  async callback(req: IncomingMessage, res: ServerResponse, rawQuery: string): Promise<void> {
    const found = await this.session(req);
    if (!found)
      return page(
        res,
        400,
        'The sign-in could not be completed',
        'This browser has no sign-in in progress (it expired after 10 minutes, or cookies are blocked). Start again from the application.',
      );
    const { sid, grant } = found;
    const data = grant.data as SessionData;
    const server = await this.s.store.getMcpServer(grant.serverId);
    const idp = server && (await this.oidc.providerFor(server));
    if (!server || !idp)
      return page(res, 400, 'The sign-in could not be completed', 'The MCP server no longer exists.');
    let identifier: string;
    try {
      identifier = await this.oidc.identifierFrom(idp, new URLSearchParams(rawQuery), {
        state: data.oidcState,
        nonce: data.nonce,
        verifier: this.verifierOf(sid),
      });
    } catch (e) {
      if (e instanceof OAuthProblem) {
        await this.s.store.useMcpOAuthGrant(grant.id, Date.now());
        return redirect(
          res,
          this.answerUrl(data.redirectUri, { error: e.error, error_description: e.message, state: data.state }),
        );
      }
      if (e instanceof SignInFailed) {
        this.s.log.warn({ server: server.id, err: e.message }, 'MCP OAuth: sign-in failed');
        return page(res, 400, 'The sign-in could not be completed', e.message);
      }
      throw e;
    }
    await this.s.store.updateMcpOAuthSession(grant.id, identifier, data);
    const client = await this.clients.get(grant.clientId).catch(() => undefined);
    const exposed = await this.servers.exposedTools(server);
    sendPage(
      res,
      200,
      consentPage({
        server,
        identifier,
        client: client?.name ?? grant.clientId,
        redirectHost: new URL(data.redirectUri).host || new URL(data.redirectUri).protocol,
        tools: exposed.map((e) => ({
          name: e.tool.name,
          title: e.tool.title,
          connector: connectors.get(e.tool.connector)?.title ?? e.tool.connector,
        })),
        csrf: this.csrfOf(sid),
        action: `${this.publicUrl}/oauth/mcp/consent`,
      }),
    );
  }

  /** POST /oauth/mcp/consent: the user's answer; a code (allow) or access_denied, back to the client. */
  async consent(req: IncomingMessage, res: ServerResponse, form: object): Promise<void> {
    const body = strings(form);
    const found = await this.session(req);
    if (!found || found.grant.identifier === null)
      return page(
        res,
        400,
        'The consent could not be recorded',
        'This browser has no signed-in authorization in progress (it expired, or was already answered). Start again from the application.',
      );
    const { sid, grant } = found;
    if (!sameSecret(this.csrfOf(sid), body.csrf ?? ''))
      return page(
        res,
        403,
        'The consent could not be recorded',
        'The form was not sent from the consent page this browser opened.',
      );
    const now = Date.now();
    if (!(await this.s.store.useMcpOAuthGrant(grant.id, now)))
      return page(res, 400, 'The consent could not be recorded', 'This authorization was already answered.');
    const data = grant.data as SessionData;
    res.setHeader('set-cookie', this.cookie('', 0));
    if (body.decision !== 'allow')
      return redirect(
        res,
        this.answerUrl(data.redirectUri, {
          error: 'access_denied',
          error_description: 'The user did not allow access',
          state: data.state,
        }),
        303,
      );
    const code = randomSecret(32);
    await this.s.store.createMcpOAuthGrant({
      id: newId('mcpgr'),
      kind: 'code',
      tokenHash: sha256(code),
      family: grant.family,
      serverId: grant.serverId,
      clientId: grant.clientId,
      identifier: grant.identifier,
      data: {
        redirectUri: data.redirectUri,
        codeChallenge: data.codeChallenge,
        resource: data.resource,
        scope: data.scope,
      },
      expiresAt: now + CODE_TTL_MS,
      usedAt: null,
      revokedAt: null,
      createdAt: now,
    });
    redirect(res, this.answerUrl(data.redirectUri, { code, state: data.state }), 303);
  }

  // --- The token, revocation and registration endpoints ---

  /** A live grant of `kind` by its secret, for `clientId`; else an invalid_grant problem. */
  private async grantOf(secret: string, kind: 'code' | 'refresh', clientId: string): Promise<McpOAuthGrant> {
    const what = kind === 'code' ? 'authorization code' : 'refresh token';
    const hash = sha256(secret);
    const grant = secret && secret.length <= 100 ? await this.s.store.findMcpOAuthGrant(hash) : undefined;
    if (
      !grant ||
      grant.kind !== kind ||
      !timingSafeEqual(Buffer.from(grant.tokenHash, 'hex'), Buffer.from(hash, 'hex'))
    )
      throw new OAuthProblem('invalid_grant', `The ${what} is unknown`);
    if (grant.clientId !== clientId)
      throw new OAuthProblem('invalid_grant', `The ${what} was issued to another client`);
    if (grant.revokedAt !== null) throw new OAuthProblem('invalid_grant', `The ${what} was revoked`);
    if (grant.expiresAt <= Date.now()) throw new OAuthProblem('invalid_grant', `The ${what} expired`);
    if (grant.usedAt !== null || !(await this.s.store.useMcpOAuthGrant(grant.id, Date.now()))) {
      // A code or refresh token presented twice: someone else may hold it, so the whole grant goes (RFC 9700 §4.14).
      await this.s.store.revokeMcpOAuthFamily(grant.family, Date.now());
      throw new OAuthProblem('invalid_grant', `The ${what} was already used; its grant is revoked`);
    }
    return grant;
  }

  /** POST /oauth/mcp/token: the authorization code and refresh token grants. */
  async token(form: object): Promise<McpTokenAnswer> {
    const body = strings(form);
    const client = await this.clients.get(body.client_id ?? '');
    let grant: McpOAuthGrant;
    if (body.grant_type === 'authorization_code') {
      if (!body.code) throw new OAuthProblem('invalid_request', 'code is required');
      if (!body.code_verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(body.code_verifier))
        throw new OAuthProblem('invalid_request', 'code_verifier is required (PKCE, 43 to 128 characters)');
      grant = await this.grantOf(body.code, 'code', client.clientId);
      if (body.redirect_uri !== grant.data.redirectUri)
        throw new OAuthProblem('invalid_grant', 'redirect_uri must be the one of the authorization request');
      if (!sameSecret(b64sha256(body.code_verifier), String(grant.data.codeChallenge)))
        throw new OAuthProblem('invalid_grant', 'code_verifier does not match the code_challenge (PKCE)');
    } else if (body.grant_type === 'refresh_token') {
      if (!body.refresh_token) throw new OAuthProblem('invalid_request', 'refresh_token is required');
      grant = await this.grantOf(body.refresh_token, 'refresh', client.clientId);
    } else {
      throw new OAuthProblem('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    }
    if (body.resource !== undefined && body.resource !== grant.data.resource)
      throw new OAuthProblem('invalid_target', 'resource must be the one the grant was made for');
    if (body.scope !== undefined && body.scope.split(' ').some((x) => x && x !== MCP_TOOLS_SCOPE))
      throw new OAuthProblem('invalid_scope', `scope may name ${MCP_TOOLS_SCOPE} only`);
    if (!(await this.s.store.getMcpServer(grant.serverId)))
      throw new OAuthProblem('invalid_grant', 'The MCP server of this grant no longer exists');
    return this.issue(grant);
  }

  /** A new access token and refresh token in the grant's family. */
  private async issue(from: McpOAuthGrant): Promise<McpTokenAnswer> {
    const now = Date.now();
    const { accessTokenTtlSeconds, refreshTokenTtlSeconds } = this.s.config.mcpOAuth;
    const access = randomSecret(32);
    const refresh = randomSecret(32);
    const data = { resource: from.data.resource, scope: from.data.scope };
    const row = (kind: 'access' | 'refresh', secret: string, ttl: number): McpOAuthGrant => ({
      id: newId('mcpgr'),
      kind,
      tokenHash: sha256(secret),
      family: from.family,
      serverId: from.serverId,
      clientId: from.clientId,
      identifier: from.identifier,
      data,
      expiresAt: now + ttl * 1000,
      usedAt: null,
      revokedAt: null,
      createdAt: now,
    });
    await this.s.store.createMcpOAuthGrant(row('access', access, accessTokenTtlSeconds));
    await this.s.store.createMcpOAuthGrant(row('refresh', refresh, refreshTokenTtlSeconds));
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: accessTokenTtlSeconds,
      refresh_token: refresh,
      scope: String(from.data.scope),
    };
  }

  /**
   * POST /oauth/mcp/revoke (RFC 7009): an access or refresh token of the calling client revokes its whole grant (the
   * tokens before and after it). An unknown token is answered as revoked, as the RFC asks.
   */
  async revoke(form: object): Promise<void> {
    const body = strings(form);
    const client = await this.clients.get(body.client_id ?? '');
    const token = body.token;
    if (!token) throw new OAuthProblem('invalid_request', 'token is required');
    if (token.length > 100) return;
    const hash = sha256(token);
    const grant = await this.s.store.findMcpOAuthGrant(hash);
    if (!grant || (grant.kind !== 'access' && grant.kind !== 'refresh')) return;
    if (!timingSafeEqual(Buffer.from(grant.tokenHash, 'hex'), Buffer.from(hash, 'hex'))) return;
    if (grant.clientId !== client.clientId) return;
    await this.s.store.revokeMcpOAuthFamily(grant.family, Date.now());
  }
}

function rpcError(res: ServerResponse, status: number, code: number, message: string, headers = {}): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** A 302 (or 303 after a form) to a URL built here. */
function redirect(res: ServerResponse, url: string, status: 302 | 303 = 302): void {
  res.writeHead(status, { location: url, 'content-length': 0, 'cache-control': 'no-store' });
  res.end();
}

function sendPage(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    // No script on these pages; and no other site may frame the consent form (clickjacking).
    'content-security-policy':
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
    'x-frame-options': 'DENY',
  });
  res.end(html);
}

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:38rem;margin:3rem auto;padding:0 1rem;color:#1f2933}' +
  'h1{font-size:1.4rem}ul{padding-left:1.2rem}li small{color:#52606d}button{font:inherit;padding:.5rem 1.2rem;margin-right:.6rem}' +
  '.deny{background:#fff;border:1px solid #9aa5b1}.allow{background:#17653d;color:#fff;border:0}';

function page(res: ServerResponse, status: number, title: string, message: string): void {
  sendPage(
    res,
    status,
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title><style>${STYLE}h1{color:#9b1c1c}</style></head><body><h1>${esc(title)}</h1><p>${esc(message)}</p></body></html>`,
  );
}

function consentPage(p: {
  server: McpServerConfig;
  identifier: string;
  client: string;
  redirectHost: string;
  tools: { name: string; title: string; connector: string }[];
  csrf: string;
  action: string;
}): string {
  const tools = p.tools.length
    ? `<ul>${p.tools.map((t) => `<li>${esc(t.title)} <small>(${esc(t.name)}, ${esc(t.connector)})</small></li>`).join('')}</ul>`
    : '<p>No tools yet.</p>';
  const search =
    p.server.mode === 'search'
      ? '<p>The application finds these tools by searching, and runs them one at a time.</p>'
      : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Allow access to ${esc(p.server.name)}?</title><style>${STYLE}</style></head><body>
<h1>Allow ${esc(p.client)} to use the MCP server “${esc(p.server.name)}”?</h1>
<p>You are signed in as <strong>${esc(p.identifier)}</strong>. If you allow it, the application (answers go to <strong>${esc(p.redirectHost)}</strong>) can run these tools with your connected accounts:</p>
${tools}${search}
<form method="post" action="${esc(p.action)}">
<input type="hidden" name="csrf" value="${esc(p.csrf)}">
<button class="allow" type="submit" name="decision" value="allow">Allow</button>
<button class="deny" type="submit" name="decision" value="deny">Deny</button>
</form></body></html>`;
}

export { page as oauthPage };
