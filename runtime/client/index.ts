/**
 * TypeScript client for the agent connector service. Built from `clientId`, `clientSecret` and `envUrl`
 * (the service's base address); it obtains and renews its own short-lived service token.
 *
 *   const client = new AgentConnectorClient({ clientId, clientSecret, envUrl: 'http://localhost:8080' });
 *   const { link } = await client.getAuthorizationLink({ connectionName: 'mail', identifier: 'user-42' });
 *   const { data } = await client.executeTool({ toolName: 'mail_list_messages', connectionName: 'mail', identifier: 'user-42', toolInput: { $top: 5 } });
 */
import type { ToolInputs, ToolName } from '../../generated/types.ts';
import type {
  ConnectedAccount,
  Connection,
  ConnectionCreate,
  ConnectionUpdate,
  Connector,
  FieldError,
  Operations,
  Tool,
} from '../../generated/api/types.ts';

export interface ClientOptions {
  clientId: string;
  clientSecret: string;
  /** The service's base URL, e.g. http://localhost:8080 */
  envUrl: string;
  /** Per-request timeout in milliseconds (default 120 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The API's own types, generated from its endpoint schemas (core/api) into generated/api/types.ts. */
export type {
  ConnectedAccount,
  Connection,
  Connector,
  FieldError,
  Tool,
  ConnectionUpdate as ConnectionInput,
} from '../../generated/api/types.ts';
export type AccountStatus = ConnectedAccount['status'];

export interface ProxyResponse {
  status: number;
  headers: Headers;
  /** The provider's raw response bytes. */
  content: Uint8Array;
  /** The JSON decoding of `content`, or undefined when it is not JSON. */
  data: unknown;
  text(): string;
}

/** An error answered by the service. `isProviderError` tells a provider's refusal from the service's own. */
export class ConnectorServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldError[] = [],
    readonly providerStatus?: number,
    readonly providerBody?: unknown,
    readonly executionId?: string,
    readonly requestId?: string,
  ) {
    super(message);
    this.name = 'ConnectorServiceError';
  }
  get isProviderError(): boolean {
    return this.code === 'provider_error';
  }
}

type ExecuteParams<N extends ToolName> = {
  toolName: N;
  toolInput: ToolInputs[N];
  dryRun?: boolean;
} & ({ connectedAccountId: string } | { connectionName: string; identifier: string });

export interface DryRunData {
  requests: Array<{ method: string; url: string; headers: Record<string, string>; body?: unknown }>;
}

export class AgentConnectorClient {
  private readonly base: string;
  private readonly doFetch: typeof fetch;
  private token?: { value: string; expiresAt: number };
  private pendingToken?: Promise<string>;

  constructor(private readonly opts: ClientOptions) {
    if (!opts.clientId || !opts.clientSecret || !opts.envUrl)
      throw new Error('clientId, clientSecret and envUrl are required');
    this.base = opts.envUrl.replace(/\/+$/, '');
    this.doFetch = opts.fetch ?? fetch;
  }

  private async serviceToken(force = false): Promise<string> {
    if (!force && this.token && this.token.expiresAt - 30_000 > Date.now()) return this.token.value;
    // One token request at a time, however many calls are waiting.
    this.pendingToken ??= (async () => {
      try {
        const res = await this.doFetch(`${this.base}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            client_id: this.opts.clientId,
            client_secret: this.opts.clientSecret,
          }),
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? 120_000),
        });
        const body = (await res.json().catch(() => ({}))) as {
          access_token?: string;
          expires_in?: number;
          error?: string;
          error_description?: string;
        };
        if (!res.ok || !body.access_token) {
          throw new ConnectorServiceError(
            res.status,
            body.error ?? 'token_error',
            body.error_description ?? `Could not get a service token (HTTP ${res.status})`,
          );
        }
        this.token = { value: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 300) * 1000 };
        return body.access_token;
      } finally {
        this.pendingToken = undefined;
      }
    })();
    return this.pendingToken;
  }

  private async send(
    method: string,
    path: string,
    body?: unknown,
    init: RequestInit = {},
    retried = false,
  ): Promise<Response> {
    const token = await this.serviceToken();
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${token}`);
    if (body !== undefined) headers.set('content-type', 'application/json');
    const res = await this.doFetch(`${this.base}${path}`, {
      ...init,
      method,
      headers,
      body: body !== undefined ? JSON.stringify(body) : init.body,
      signal: init.signal ?? AbortSignal.timeout(this.opts.timeoutMs ?? 120_000),
    });
    if (res.status === 401 && !retried && res.headers.get('x-error-source') !== 'provider' && init.body === undefined) {
      await res.body?.cancel();
      await this.serviceToken(true);
      return this.send(method, path, body, init, true);
    }
    return res;
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body);
    const parsed = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    if (!res.ok) throw toError(res.status, parsed);
    return parsed as T;
  }

  // Connected accounts and authorization

  async getAuthorizationLink(p: {
    connectionName: string;
    identifier: string;
    redirectUrl?: string;
  }): Promise<Operations['createAuthorizationLink']['response']> {
    return this.json('POST', '/v1/connected-accounts/authorization-link', {
      connection_name: p.connectionName,
      identifier: p.identifier,
      ...(p.redirectUrl ? { redirect_url: p.redirectUrl } : {}),
    });
  }

  async getOrCreateConnectedAccount(p: { connectionName: string; identifier: string }): Promise<ConnectedAccount> {
    const r = await this.json<Operations['getOrCreateConnectedAccount']['response']>('POST', '/v1/connected-accounts', {
      connection_name: p.connectionName,
      identifier: p.identifier,
    });
    return r.connected_account;
  }

  async upsertConnectedAccount(p: {
    connectionName: string;
    identifier: string;
    credentials: Record<string, unknown>;
    verify?: boolean;
  }): Promise<ConnectedAccount> {
    const r = await this.json<Operations['upsertConnectedAccount']['response']>('PUT', '/v1/connected-accounts', {
      connection_name: p.connectionName,
      identifier: p.identifier,
      credentials: p.credentials,
      ...(p.verify ? { verify: true } : {}),
    });
    return r.connected_account;
  }

  async getConnectedAccount(id: string): Promise<ConnectedAccount> {
    return (
      await this.json<Operations['getConnectedAccount']['response']>(
        'GET',
        `/v1/connected-accounts/${encodeURIComponent(id)}`,
      )
    ).connected_account;
  }

  async listConnectedAccounts(
    q: { connectionName?: string; identifier?: string; status?: AccountStatus; limit?: number; cursor?: string } = {},
  ): Promise<Operations['listConnectedAccounts']['response']> {
    const p = new URLSearchParams();
    if (q.connectionName) p.set('connection_name', q.connectionName);
    if (q.identifier !== undefined) p.set('identifier', q.identifier);
    if (q.status) p.set('status', q.status);
    if (q.limit) p.set('limit', String(q.limit));
    if (q.cursor) p.set('cursor', q.cursor);
    return this.json('GET', `/v1/connected-accounts${p.size ? `?${p}` : ''}`);
  }

  async deleteConnectedAccount(id: string): Promise<void> {
    await this.json('DELETE', `/v1/connected-accounts/${encodeURIComponent(id)}`);
  }

  async disconnectConnectedAccount(id: string): Promise<ConnectedAccount> {
    return (
      await this.json<Operations['disconnectConnectedAccount']['response']>(
        'POST',
        `/v1/connected-accounts/${encodeURIComponent(id)}/disconnect`,
      )
    ).connected_account;
  }

  // Connections

  async createConnection(input: ConnectionCreate): Promise<Connection> {
    return this.json('POST', '/v1/connections', input);
  }
  async listConnections(): Promise<Connection[]> {
    return (await this.json<Operations['listConnections']['response']>('GET', '/v1/connections')).connections;
  }
  async getConnection(name: string): Promise<Connection> {
    return this.json('GET', `/v1/connections/${encodeURIComponent(name)}`);
  }
  async updateConnection(name: string, input: ConnectionUpdate): Promise<Connection> {
    return this.json('PATCH', `/v1/connections/${encodeURIComponent(name)}`, input);
  }
  async deleteConnection(name: string): Promise<Operations['deleteConnection']['response']> {
    return this.json('DELETE', `/v1/connections/${encodeURIComponent(name)}`);
  }

  // Tools

  async listTools(connector?: string): Promise<Tool[]> {
    return (
      await this.json<Operations['listTools']['response']>(
        'GET',
        `/v1/tools${connector ? `?connector=${encodeURIComponent(connector)}` : ''}`,
      )
    ).tools;
  }

  async listConnectors(): Promise<Connector[]> {
    return (await this.json<Operations['listConnectors']['response']>('GET', '/v1/connectors')).connectors;
  }

  /** Executes a named tool; `toolInput` is typed per tool from the generated types. */
  async executeTool<N extends ToolName>(p: ExecuteParams<N>): Promise<{ data: unknown; executionId: string }> {
    const r = await this.json<Operations['executeTool']['response']>('POST', '/v1/tools/execute', {
      tool_name: p.toolName,
      tool_input: p.toolInput,
      ...('connectedAccountId' in p
        ? { connected_account_id: p.connectedAccountId }
        : { connection_name: p.connectionName, identifier: p.identifier }),
      ...(p.dryRun ? { dry_run: true } : {}),
    });
    return { data: r.data, executionId: r.execution_id };
  }

  // Proxy

  /**
   * Sends a raw request to the provider through the service, which injects the account's credentials.
   * `path` is relative to the provider's API root. Returns the raw bytes and their JSON decoding.
   */
  async request(p: {
    connectionName: string;
    identifier: string;
    path: string;
    method?: string;
    queryParams?: Record<string, string | number | boolean>;
    formData?: Uint8Array | string | ReadableStream<Uint8Array>;
    headers?: Record<string, string>;
  }): Promise<ProxyResponse> {
    const res = await this.requestStream(p);
    const content = new Uint8Array(await res.arrayBuffer());
    const text = () => new TextDecoder().decode(content);
    let data: unknown;
    if ((res.headers.get('content-type') ?? '').includes('json') || /^\s*[[{]/.test(text().slice(0, 1))) {
      try {
        data = JSON.parse(text());
      } catch {
        data = undefined;
      }
    }
    if (res.status >= 400 && res.headers.get('x-error-source') === 'service')
      throw toError(res.status, data as Record<string, unknown>);
    return { status: res.status, headers: res.headers, content, data, text };
  }

  /** Like `request`, but returns the streaming Response, for large downloads. */
  async requestStream(p: {
    connectionName: string;
    identifier: string;
    path: string;
    method?: string;
    queryParams?: Record<string, string | number | boolean>;
    formData?: Uint8Array | string | ReadableStream<Uint8Array>;
    headers?: Record<string, string>;
  }): Promise<Response> {
    if (!p.path.startsWith('/')) throw new Error('path must start with /');
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(p.queryParams ?? {})) q.set(k, String(v));
    const headers = new Headers(p.headers);
    headers.set('connection_name', p.connectionName);
    // A header value is Latin-1 and loses leading and trailing spaces: any other identifier goes percent-encoded.
    if (/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(p.identifier)) headers.set('identifier', p.identifier);
    else headers.set('x-identifier-encoded', encodeURIComponent(p.identifier));
    const init: RequestInit & { duplex?: 'half' } = { headers };
    if (p.formData !== undefined) {
      init.body = p.formData as RequestInit['body'];
      if (typeof ReadableStream !== 'undefined' && p.formData instanceof ReadableStream) {
        init.duplex = 'half';
        // fetch clones a request to be able to follow redirects, and cloning tees a stream body: the branch that is
        // never read then buffers the whole upload in memory (nodejs/undici#4058). A stream cannot be replayed on a
        // redirect anyway; with redirect 'error' there is no clone, so the upload streams with bounded memory.
        init.redirect = 'error';
      }
    }
    return this.send((p.method ?? 'GET').toUpperCase(), `/proxy${p.path}${q.size ? `?${q}` : ''}`, undefined, init);
  }
}

function toError(status: number, body: Record<string, unknown> | undefined): ConnectorServiceError {
  const e = (body?.error ?? {}) as Record<string, unknown>;
  return new ConnectorServiceError(
    status,
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the service's error code and message are strings; String() keeps a malformed body from throwing here
    String(e.code ?? 'error'),
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- as above
    String(e.message ?? `HTTP ${status}`),
    (e.details as FieldError[]) ?? [],
    e.provider_status as number | undefined,
    e.provider_body,
    body?.execution_id as string | undefined,
    body?.request_id as string | undefined,
  );
}
