/**
 * A fake OAuth 2.0 / 2.1 authorization server for tests and the offline demo. It speaks the real wire
 * format (RFC 6749 form posts, JSON token responses and errors, PKCE S256, RFC 8414 metadata, RFC 7591
 * registration, RFC 8707 resource) and checks what it receives: client authentication, redirect URI,
 * single-use codes bound to the verifier, refresh tokens that rotate and can be revoked.
 */
import { createHash, randomBytes } from 'node:crypto';
import express from 'express';
import { listen, type Listening } from './listen.ts';

export interface FakeClient {
  client_id: string;
  client_secret?: string;
  redirect_uris?: string[];
  /** How the client must authenticate at the token endpoint. */
  auth: 'client_secret_post' | 'client_secret_basic' | 'none';
}

export interface Grant {
  clientId: string;
  subject: string;
  scope: string;
  resource?: string;
}

export interface FakeOAuthOptions {
  /** Access token lifetime in seconds (default 3600). */
  expiresIn?: number;
  /** Issue a new refresh token on every refresh and invalidate the old one (default true). */
  rotateRefreshTokens?: boolean;
  requirePkce?: boolean;
  /** Extra fields in every token response (e.g. a per-customer API base URL). */
  extraTokenFields?: Record<string, string>;
  /** Advertise RFC 8414 metadata and RFC 7591 registration (MCP authorization). */
  discovery?: boolean;
  /** Require the RFC 8707 resource parameter to equal this. */
  requireResource?: string;
  /**
   * Advertise `client_id_metadata_document_supported` and take a client id that is an http(s) URL by fetching its
   * Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document): its `client_id` must be that URL and
   * its `redirect_uris` must hold the request's.
   */
  cimd?: boolean;
  /** Endpoints the RFC 8414 metadata names instead of this server's own (an authorization server that points elsewhere). */
  advertise?: { token_endpoint?: string; registration_endpoint?: string };
}

interface CodeRecord extends Grant {
  redirectUri: string;
  challenge?: string;
  expiresAt: number;
}

interface TokenRecord extends Grant {
  expiresAt: number;
}

const s256 = (v: string) => createHash('sha256').update(v).digest('base64url');
const token = (prefix: string) => `${prefix}_${randomBytes(24).toString('base64url')}`;

export class FakeOAuthServer {
  readonly clients = new Map<string, FakeClient>();
  private codes = new Map<string, CodeRecord>();
  private accessTokens = new Map<string, TokenRecord>();
  private refreshTokens = new Map<string, Grant>();
  private listening!: Listening;
  /** Counts of requests by grant type, for assertions. */
  readonly counts = { authorize: 0, authorization_code: 0, refresh_token: 0, register: 0, metadataDocuments: 0 };
  /** Makes the next N token requests fail with this status (a provider outage). */
  failNext: { count: number; status: number } = { count: 0, status: 503 };
  /** Delays refresh responses, to widen race windows in concurrency tests. */
  refreshDelayMs = 0;
  /** While true, each refresh request waits, unanswered, until `releaseRefreshes()` (tests count what is in flight). */
  holdRefreshes = false;
  private held: Array<() => void> = [];
  /** Every token-endpoint request body, for checks on what the service sent. */
  readonly tokenRequests: Array<Record<string, string>> = [];
  /** Every request received, as `METHOD /path`. */
  readonly requests: string[] = [];
  /**
   * When set, a request that arrives on a connection which already carried one is dropped: the connection is
   * destroyed without an answer, as when a server closes an idle kept-alive connection just as the client sends on
   * it. `droppedOnReuse` counts them.
   */
  dropReusedConnections = false;
  droppedOnReuse = 0;
  private usedSockets = new WeakSet<object>();

  constructor(readonly opts: FakeOAuthOptions = {}) {}

  get url(): string {
    return this.listening.url;
  }
  get authorizeUrl(): string {
    return `${this.url}/authorize`;
  }
  get tokenUrl(): string {
    return `${this.url}/token`;
  }

  addClient(c: FakeClient): void {
    this.clients.set(c.client_id, c);
  }

  /** The grant behind an access token, if it is valid and unexpired. */
  validate(accessToken: string | undefined): TokenRecord | undefined {
    if (!accessToken) return undefined;
    const t = this.accessTokens.get(accessToken.replace(/^Bearer\s+/i, ''));
    return t && t.expiresAt > Date.now() ? t : undefined;
  }

  /** Expires every access token now (the service should refresh on the next 401). */
  expireAccessTokens(): void {
    for (const t of this.accessTokens.values()) t.expiresAt = 0;
  }

  /** Revokes every refresh token of a subject: its next refresh gets invalid_grant. */
  revokeSubject(subject: string): void {
    for (const [rt, g] of this.refreshTokens) if (g.subject === subject) this.refreshTokens.delete(rt);
    for (const [at, g] of this.accessTokens) if (g.subject === subject) this.accessTokens.delete(at);
  }

  /** Refresh requests waiting for `releaseRefreshes()`. */
  get heldRefreshes(): number {
    return this.held.length;
  }

  /** Lets every held refresh request be answered. */
  releaseRefreshes(): void {
    for (const go of this.held.splice(0)) go();
  }

  /** Every refresh token ever issued and still valid (tests check nothing leaked them). */
  liveRefreshTokens(): string[] {
    return [...this.refreshTokens.keys()];
  }
  issuedAccessTokens(): string[] {
    return [...this.accessTokens.keys()];
  }

  private issue(grant: Grant) {
    const access = token('at');
    const expiresIn = this.opts.expiresIn ?? 3600;
    this.accessTokens.set(access, { ...grant, expiresAt: Date.now() + expiresIn * 1000 });
    const refresh = token('rt');
    this.refreshTokens.set(refresh, grant);
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: expiresIn,
      refresh_token: refresh,
      scope: grant.scope,
      ...(this.opts.extraTokenFields ?? {}),
    };
  }

  private authenticate(req: express.Request, body: Record<string, string>): FakeClient | undefined {
    let id = body.client_id;
    let secret = body.client_secret;
    let method: FakeClient['auth'] = secret ? 'client_secret_post' : 'none';
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    if (basic) {
      const [u, p] = Buffer.from(basic[1]!, 'base64').toString().split(':');
      id = decodeURIComponent(u ?? '');
      secret = decodeURIComponent(p ?? '');
      method = 'client_secret_basic';
    }
    const client = id ? this.clients.get(id) : undefined;
    if (!client || client.auth !== method) return undefined;
    if (method !== 'none' && client.client_secret !== secret) return undefined;
    return client;
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use((req, _res, next) => {
      if (this.usedSockets.has(req.socket) && this.dropReusedConnections) {
        this.droppedOnReuse++;
        req.socket.destroy();
        return;
      }
      this.usedSockets.add(req.socket);
      this.requests.push(`${req.method} ${req.path}`);
      next();
    });
    const metadata = () => ({
      issuer: this.url,
      authorization_endpoint: this.authorizeUrl,
      token_endpoint: this.tokenUrl,
      registration_endpoint: `${this.url}/register`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
      ...(this.opts.cimd ? { client_id_metadata_document_supported: true } : {}),
      ...this.opts.advertise,
    });
    if (this.opts.discovery) {
      app.get('/.well-known/oauth-authorization-server', (_req, res) => res.json(metadata()));
      app.post('/register', express.json(), (req, res) => {
        this.counts.register++;
        const b = req.body as Record<string, unknown>;
        const uris = b.redirect_uris;
        if (
          !Array.isArray(uris) ||
          !uris.length ||
          !uris.every((u) => typeof u === 'string' && /^https?:\/\//.test(u))
        ) {
          res.status(400).json({
            error: 'invalid_redirect_uri',
            error_description: 'redirect_uris must be a non-empty list of URLs',
          });
          return;
        }
        const auth = (b.token_endpoint_auth_method as FakeClient['auth']) ?? 'client_secret_basic';
        const client: FakeClient = {
          client_id: `dcr_${randomBytes(8).toString('hex')}`,
          redirect_uris: uris as string[],
          auth,
          ...(auth === 'none' ? {} : { client_secret: randomBytes(16).toString('hex') }),
        };
        this.addClient(client);
        res.status(201).json({
          client_id: client.client_id,
          ...(client.client_secret ? { client_secret: client.client_secret } : {}),
          client_id_issued_at: Math.floor(Date.now() / 1000),
          redirect_uris: client.redirect_uris,
          token_endpoint_auth_method: auth,
          grant_types: b.grant_types ?? ['authorization_code'],
          response_types: ['code'],
          client_name: b.client_name,
        });
      });
    }

    app.get('/authorize', async (req, res) => {
      this.counts.authorize++;
      const q = req.query as Record<string, string>;
      if (this.opts.cimd && /^https?:\/\//.test(q.client_id ?? '') && !this.clients.has(q.client_id!)) {
        // A Client ID Metadata Document: fetch it from the client id, check it names itself, take its redirect URIs.
        this.counts.metadataDocuments++;
        const answer = await fetch(q.client_id!, { redirect: 'error' }).catch(() => undefined);
        const doc = answer?.ok ? ((await answer.json()) as Record<string, unknown>) : undefined;
        if (!doc || doc.client_id !== q.client_id || !Array.isArray(doc.redirect_uris)) {
          res.status(400).type('text').send('the client id metadata document could not be used');
          return;
        }
        this.addClient({ client_id: q.client_id!, redirect_uris: doc.redirect_uris as string[], auth: 'none' });
      }
      const client = this.clients.get(q.client_id ?? '');
      if (!client) {
        res.status(400).type('text').send('unknown client_id');
        return;
      }
      if (client.redirect_uris && !client.redirect_uris.includes(q.redirect_uri ?? '')) {
        res.status(400).type('text').send('redirect_uri is not registered for this client');
        return;
      }
      const back = new URL(q.redirect_uri!);
      const fail = (error: string, description: string) => {
        back.searchParams.set('error', error);
        back.searchParams.set('error_description', description);
        if (q.state) back.searchParams.set('state', q.state);
        res.redirect(302, back.toString());
      };
      if (q.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code');
      if (!q.state) return fail('invalid_request', 'state is required');
      if ((this.opts.requirePkce ?? true) && (!q.code_challenge || q.code_challenge_method !== 'S256')) {
        return fail('invalid_request', 'PKCE with S256 is required');
      }
      if (this.opts.requireResource && q.resource !== this.opts.requireResource) {
        return fail('invalid_target', `resource must be ${this.opts.requireResource}`);
      }
      if (q.fake_decision === 'deny') return fail('access_denied', 'The user declined');
      const code = token('code');
      this.codes.set(code, {
        clientId: client.client_id,
        subject: q.fake_user ?? q.login_hint ?? 'user-1',
        scope: q.scope ?? '',
        resource: q.resource,
        redirectUri: q.redirect_uri!,
        challenge: q.code_challenge,
        expiresAt: Date.now() + 60_000,
      });
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.state);
      res.redirect(302, back.toString());
    });

    app.post('/token', express.urlencoded({ extended: false }), async (req, res) => {
      const body = req.body as Record<string, string>;
      this.tokenRequests.push({ ...body });
      res.setHeader('cache-control', 'no-store');
      if (this.failNext.count > 0) {
        this.failNext.count--;
        res.status(this.failNext.status).type('html').send('<html><body>Service Unavailable</body></html>');
        return;
      }
      const client = this.authenticate(req, body);
      if (!client) {
        res.status(401).json({ error: 'invalid_client', error_description: 'client authentication failed' });
        return;
      }
      if (this.opts.requireResource && body.resource !== this.opts.requireResource) {
        res
          .status(400)
          .json({ error: 'invalid_target', error_description: `resource must be ${this.opts.requireResource}` });
        return;
      }
      if (body.grant_type === 'authorization_code') {
        this.counts.authorization_code++;
        const code = this.codes.get(body.code ?? '');
        this.codes.delete(body.code ?? '');
        if (!code || code.expiresAt < Date.now() || code.clientId !== client.client_id) {
          res.status(400).json({ error: 'invalid_grant', error_description: 'unknown, used or expired code' });
          return;
        }
        if (code.redirectUri !== body.redirect_uri) {
          res.status(400).json({ error: 'invalid_grant', error_description: 'redirect_uri does not match' });
          return;
        }
        if (code.challenge && s256(body.code_verifier ?? '') !== code.challenge) {
          res.status(400).json({ error: 'invalid_grant', error_description: 'PKCE verification failed' });
          return;
        }
        res.json(this.issue(code));
        return;
      }
      if (body.grant_type === 'refresh_token') {
        this.counts.refresh_token++;
        if (this.refreshDelayMs) await new Promise((r) => setTimeout(r, this.refreshDelayMs));
        if (this.holdRefreshes) await new Promise<void>((r) => this.held.push(r));
        const grant = this.refreshTokens.get(body.refresh_token ?? '');
        if (!grant || grant.clientId !== client.client_id) {
          res.status(400).json({ error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
          return;
        }
        const issued = this.issue(grant);
        if (this.opts.rotateRefreshTokens ?? true) this.refreshTokens.delete(body.refresh_token!);
        else {
          this.refreshTokens.delete(issued.refresh_token);
          delete (issued as Partial<typeof issued>).refresh_token;
        }
        res.json(issued);
        return;
      }
      res
        .status(400)
        .json({ error: 'unsupported_grant_type', error_description: `grant_type ${body.grant_type} is not supported` });
    });

    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }
}
