/**
 * TypeScript client for the agent connector service. Built from `clientId`, `clientSecret` and `envUrl`
 * (the service's base address); it obtains and renews its own short-lived service token.
 *
 *   const client = new AgentConnectorClient({ clientId, clientSecret, envUrl: 'http://localhost:8080' });
 *   const { link } = await client.getAuthorizationLink({ connectionName: 'mail', identifier: 'user-42' });
 *   const { data } = await client.executeTool({ toolName: 'mail_list_messages', connectionName: 'mail', identifier: 'user-42', toolInput: { $top: 5 } });
 */
import { Webhook } from 'standardwebhooks';
import type { ToolInputs, ToolName } from './generated/types.ts';
import type {
  AnthropicTool,
  ConnectedAccount,
  Connection,
  ConnectionCreate,
  ConnectionUpdate,
  Connector,
  FieldError,
  GeminiTool,
  McpTool,
  OpenAIResponsesTool,
  OpenAITool,
  Operations,
  Tool,
  ToolSearchHit,
} from './generated/api-types.ts';
import type { Scope } from './generated/scopes.ts';
/** What an API credential may do (each route needs one): `tools:execute`, `proxy`, `connections:write`… */
export type { Scope } from './generated/scopes.ts';
export { SCOPES } from './generated/scopes.ts';

export interface ClientOptions {
  clientId: string;
  clientSecret: string;
  /** The service's base URL, e.g. http://localhost:8080 */
  envUrl: string;
  /** Per-request timeout in milliseconds (default 120 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * The API's own types, generated from its endpoint schemas (core/api) into generated/api/types.ts and copied into this
 * package (src/generated/) by `npm run generate`.
 */
export type {
  AnthropicTool,
  ConnectedAccount,
  Connection,
  Connector,
  FieldError,
  GeminiTool,
  McpTool,
  OpenAIResponsesTool,
  OpenAITool,
  Tool,
  ToolSearchHit,
  ConnectionUpdate as ConnectionInput,
} from './generated/api-types.ts';
export type AccountStatus = ConnectedAccount['status'];
type Res<K extends keyof Operations> = Operations[K]['response'];
type Body<K extends keyof Operations> = Operations[K]['body'];

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

/**
 * The end user must connect (or reconnect, or grant more to) an account before the call can go ahead: HTTP 403,
 * code `authorization_required`. Send the user to `link` (single use, until `linkExpiresAt`), then retry the call.
 */
export class AuthorizationRequiredError extends ConnectorServiceError {
  constructor(
    status: number,
    message: string,
    readonly link: string,
    readonly linkExpiresAt: Date,
    readonly reason: 'not_connected' | 'pending_auth' | 'expired' | 'disconnected' | 'missing_scopes',
    readonly connectionName: string,
    readonly identifier: string,
    readonly connectedAccountId: string,
    readonly missingScopes: string[] = [],
    executionId?: string,
    requestId?: string,
  ) {
    super(status, 'authorization_required', message, [], undefined, undefined, executionId, requestId);
    this.name = 'AuthorizationRequiredError';
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

/** The LLM tool formats `getTools` answers in (`GET /v1/tools?format=`). */
export type ToolFormat = 'openai' | 'openai-strict' | 'anthropic' | 'gemini' | 'mcp';

/** The tool definition of each format; OpenAI's depends on the API it is for. */
export type ToolDefinitionOf<F extends ToolFormat, A extends 'chat' | 'responses' = 'chat'> = F extends
  'openai' | 'openai-strict'
  ? A extends 'responses'
    ? OpenAIResponsesTool
    : OpenAITool
  : F extends 'anthropic'
    ? AnthropicTool
    : F extends 'gemini'
      ? GeminiTool
      : McpTool;

export interface GetToolsParams<F extends ToolFormat, A extends 'chat' | 'responses'> {
  format: F;
  /** OpenAI formats: the Chat Completions shape (default) or the Responses API's. */
  api?: A;
  /** Only this connector's tools. */
  connector?: string;
  /** Only the tools of these connections' connectors. */
  connectionNames?: string[];
  /** Only these tools (an unknown name is a 400 with suggestions). */
  names?: string[];
  /** Only the tools whose connection has an ACTIVE connected account for this end user. */
  identifier?: string;
}

/** A tool call of an OpenAI Chat Completions answer (`choices[0].message.tool_calls`). */
export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
/** What `handleToolCalls` takes: the SDK's tool calls, whose union also has kinds other than functions. */
export interface OpenAIToolCallLike {
  id: string;
  type: string;
  function?: { name: string; arguments: string };
}
/** What goes back to an OpenAI model for one tool call. */
export interface OpenAIToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}
/** A `tool_use` block of an Anthropic assistant message's content. */
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}
/** What goes back to an Anthropic model for one `tool_use` block (in a `user` message's content). */
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/** A `function_call` item of an OpenAI Responses API answer's `output`. */
export interface OpenAIResponsesFunctionCall {
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
}
/** What goes back to the Responses API for one `function_call` (an `input` item of the next request). */
export interface OpenAIFunctionCallOutput {
  type: 'function_call_output';
  call_id: string;
  output: string;
}
/** A Gemini `functionCall` (`response.functionCalls` in the Gen AI SDK). */
export interface GeminiFunctionCall {
  id?: string;
  name?: string;
  args?: Record<string, unknown>;
}
/** A part to send back to Gemini for one `functionCall`: `output` on success, `error` on a failure. */
export interface GeminiFunctionResponsePart {
  functionResponse: { id?: string; name: string; response: Record<string, unknown> };
}

interface HandleToolCallsBase {
  /** The end user the tools act for. */
  identifier: string;
  /**
   * The connection a tool runs on; by default the service picks the connection of the tool's connector where the
   * identifier has an account (and answers an error result when that is ambiguous).
   */
  connectionFor?: (toolName: string) => string | undefined;
  /** With true, nothing is sent upstream: each result shows the requests the tool would send. */
  dryRun?: boolean;
}

/** One tool call, whichever vendor it came from. */
interface ToolCallRequest {
  name: string;
  /** The parsed arguments, or the text that could not be parsed. */
  input: unknown;
  format: ToolFormat;
  argumentsError?: string;
}

/** What a tool result carries back to the model: the data (or `{error}`), and its JSON text. */
export interface ToolCallOutcome {
  value: unknown;
  content: string;
  isError: boolean;
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
    /** After authorizing, the user's browser goes here with `auth_request_id` (see verifyConnectedAccountUser). */
    userVerifyUrl?: string;
    /** OAuth: the tools the user connects for; the link asks for exactly their scopes (and the base scopes). */
    tools?: string[];
  }): Promise<Operations['createAuthorizationLink']['response']> {
    return this.json('POST', '/v1/connected-accounts/authorization-link', {
      connection_name: p.connectionName,
      identifier: p.identifier,
      ...(p.tools?.length ? { tools: p.tools } : {}),
      ...(p.redirectUrl ? { redirect_url: p.redirectUrl } : {}),
      ...(p.userVerifyUrl ? { user_verify_url: p.userVerifyUrl } : {}),
    });
  }

  /**
   * Confirms that the user signed in to your application is the account's identifier, after an authorization
   * started with a userVerifyUrl: the account becomes ACTIVE.
   */
  async verifyConnectedAccountUser(p: { authRequestId: string; identifier: string }): Promise<ConnectedAccount> {
    const r = await this.json<Operations['verifyConnectedAccountUser']['response']>(
      'POST',
      '/v1/connected-accounts/verify',
      { auth_request_id: p.authRequestId, identifier: p.identifier },
    );
    return r.connected_account;
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

  /** The API credentials, each with its scopes and connection restriction (never a secret). */
  async listApiCredentials(): Promise<Operations['listApiCredentials']['response']['api_credentials']> {
    return (await this.json<Operations['listApiCredentials']['response']>('GET', '/v1/api-credentials'))
      .api_credentials;
  }
  /**
   * Creates an API credential holding `scopes` (at most this client's own; left out, this client's), optionally
   * only for `connectionNames`. The client secret is in this answer only.
   */
  async createApiCredential(
    p: { name?: string; scopes?: Array<Scope | '*'>; connectionNames?: string[] } = {},
  ): Promise<Operations['createApiCredential']['response']> {
    return this.json('POST', '/v1/api-credentials', {
      ...(p.name !== undefined ? { name: p.name } : {}),
      ...(p.scopes ? { scopes: p.scopes } : {}),
      ...(p.connectionNames ? { connection_names: p.connectionNames } : {}),
    });
  }
  /** Revokes an API credential: its tokens stop working at once. */
  async revokeApiCredential(id: string): Promise<Operations['revokeApiCredential']['response']> {
    return this.json('DELETE', `/v1/api-credentials/${encodeURIComponent(id)}`);
  }
  /**
   * Deletes a connection and its accounts: `status: 'done'` when they are gone already, `'running'` while a large
   * connection's accounts are deleted in the background (read its progress with `getConnectionDeletion`).
   */
  async deleteConnection(name: string): Promise<Operations['deleteConnection']['response']> {
    return this.json('DELETE', `/v1/connections/${encodeURIComponent(name)}`);
  }
  async getConnectionDeletion(id: string): Promise<Operations['getConnectionDeletion']['response']> {
    return this.json('GET', `/v1/connection-deletions/${encodeURIComponent(id)}`);
  }

  // MCP servers: which tools an MCP client sees, and per-end-user URLs for it

  async listMcpServers(): Promise<Res<'listMcpServers'>['mcp_servers']> {
    return (await this.json<Res<'listMcpServers'>>('GET', '/v1/mcp-servers')).mcp_servers;
  }
  async createMcpServer(input: Body<'createMcpServer'>): Promise<Res<'createMcpServer'>> {
    return this.json('POST', '/v1/mcp-servers', input);
  }
  async getMcpServer(id: string): Promise<Res<'getMcpServer'>> {
    return this.json('GET', `/v1/mcp-servers/${encodeURIComponent(id)}`);
  }
  async updateMcpServer(id: string, input: Body<'updateMcpServer'>): Promise<Res<'updateMcpServer'>> {
    return this.json('PATCH', `/v1/mcp-servers/${encodeURIComponent(id)}`, input);
  }
  async deleteMcpServer(id: string): Promise<Res<'deleteMcpServer'>> {
    return this.json('DELETE', `/v1/mcp-servers/${encodeURIComponent(id)}`);
  }
  /** A URL an MCP client uses as it is, for one end user; the URL is in this answer only. */
  async createMcpUrl(id: string, input: Body<'createMcpUrl'>): Promise<Res<'createMcpUrl'>> {
    return this.json('POST', `/v1/mcp-servers/${encodeURIComponent(id)}/urls`, input);
  }
  async listMcpUrls(id: string): Promise<Res<'listMcpUrls'>['urls']> {
    return (await this.json<Res<'listMcpUrls'>>('GET', `/v1/mcp-servers/${encodeURIComponent(id)}/urls`)).urls;
  }
  async revokeMcpUrl(id: string, urlId: string): Promise<Res<'revokeMcpUrl'>> {
    return this.json('DELETE', `/v1/mcp-servers/${encodeURIComponent(id)}/urls/${encodeURIComponent(urlId)}`);
  }

  // Webhooks (verify what they deliver with verifyWebhook below)

  async listWebhooks(): Promise<Res<'listWebhooks'>['webhooks']> {
    return (await this.json<Res<'listWebhooks'>>('GET', '/v1/webhooks')).webhooks;
  }
  /** Registers an endpoint; the answer's `secret` is shown this once. */
  async createWebhook(input: Body<'createWebhook'>): Promise<Res<'createWebhook'>> {
    return this.json('POST', '/v1/webhooks', input);
  }
  async getWebhook(id: string): Promise<Res<'getWebhook'>> {
    return this.json('GET', `/v1/webhooks/${encodeURIComponent(id)}`);
  }
  async updateWebhook(id: string, input: Body<'updateWebhook'>): Promise<Res<'updateWebhook'>> {
    return this.json('PATCH', `/v1/webhooks/${encodeURIComponent(id)}`, input);
  }
  async deleteWebhook(id: string): Promise<Res<'deleteWebhook'>> {
    return this.json('DELETE', `/v1/webhooks/${encodeURIComponent(id)}`);
  }
  /** A new signing secret, shown this once; the old one stops signing at once. */
  async rotateWebhookSecret(id: string): Promise<Res<'rotateWebhookSecret'>> {
    return this.json('POST', `/v1/webhooks/${encodeURIComponent(id)}/rotate-secret`);
  }
  async listWebhookDeliveries(
    id: string,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<Res<'listWebhookDeliveries'>> {
    const q = new URLSearchParams();
    if (options.limit !== undefined) q.set('limit', String(options.limit));
    if (options.cursor !== undefined) q.set('cursor', options.cursor);
    const qs = q.size ? `?${q}` : '';
    return this.json('GET', `/v1/webhooks/${encodeURIComponent(id)}/deliveries${qs}`);
  }
  async redeliverWebhook(id: string, deliveryId: string): Promise<Res<'redeliverWebhook'>['delivery']> {
    return (
      await this.json<Res<'redeliverWebhook'>>(
        'POST',
        `/v1/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`,
      )
    ).delivery;
  }

  // Triggers (docs/triggers.md): their events reach webhooks subscribed to `trigger.<name>`

  async listTriggerTypes(connector?: string): Promise<Res<'listTriggerTypes'>['triggers']> {
    const qs = connector ? `?connector=${encodeURIComponent(connector)}` : '';
    return (await this.json<Res<'listTriggerTypes'>>('GET', `/v1/trigger-types${qs}`)).triggers;
  }
  async createTrigger(input: Body<'createTrigger'>): Promise<Res<'createTrigger'>> {
    return this.json('POST', '/v1/triggers', input);
  }
  async listTriggers(
    options: {
      trigger?: string;
      connection_name?: string;
      identifier?: string;
      status?: 'active' | 'paused' | 'failing' | 'needs_reauth';
      limit?: number;
      cursor?: string;
    } = {},
  ): Promise<Res<'listTriggers'>> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(options)) if (v !== undefined) q.set(k, String(v));
    const qs = q.size ? `?${q}` : '';
    return this.json('GET', `/v1/triggers${qs}`);
  }
  async getTrigger(id: string): Promise<Res<'getTrigger'>> {
    return this.json('GET', `/v1/triggers/${encodeURIComponent(id)}`);
  }
  async pauseTrigger(id: string): Promise<Res<'pauseTrigger'>> {
    return this.json('POST', `/v1/triggers/${encodeURIComponent(id)}/pause`);
  }
  async resumeTrigger(id: string): Promise<Res<'resumeTrigger'>> {
    return this.json('POST', `/v1/triggers/${encodeURIComponent(id)}/resume`);
  }
  async deleteTrigger(id: string): Promise<Res<'deleteTrigger'>> {
    return this.json('DELETE', `/v1/triggers/${encodeURIComponent(id)}`);
  }

  // Tools

  async listTools(connector?: string): Promise<Tool[]> {
    const r = await this.json<Operations['listTools']['response']>(
      'GET',
      `/v1/tools${connector ? `?connector=${encodeURIComponent(connector)}` : ''}`,
    );
    return r.tools as Tool[];
  }

  /**
   * The tools as one LLM vendor's tool definitions, ready for its SDK: `tools` of OpenAI's Chat Completions
   * (`openai`, `openai-strict`) or Responses API (`api: 'responses'`), Anthropic's Messages API (`anthropic`),
   * Gemini's `config.tools` (`gemini`: one Tool with every function declaration), or MCP `Tool` objects (`mcp`).
   */
  async getTools<F extends ToolFormat, A extends 'chat' | 'responses' = 'chat'>(
    p: GetToolsParams<F, A>,
  ): Promise<Array<ToolDefinitionOf<F, A>>> {
    const q = new URLSearchParams({ format: p.format });
    if (p.api) q.set('api', p.api);
    if (p.connector) q.set('connector', p.connector);
    if (p.connectionNames) q.set('connection_names', p.connectionNames.join(','));
    if (p.names) q.set('names', p.names.join(','));
    if (p.identifier !== undefined) q.set('identifier', p.identifier);
    const r = await this.json<Operations['listTools']['response']>('GET', `/v1/tools?${q.toString()}`);
    return r.tools as Array<ToolDefinitionOf<F, A>>;
  }

  /** The tools that fit a task in plain words, best first (`GET /v1/tools/search`). */
  async searchTools(q: string, options: { limit?: number; connector?: string } = {}): Promise<ToolSearchHit[]> {
    const p = new URLSearchParams({ q });
    if (options.limit !== undefined) p.set('limit', String(options.limit));
    if (options.connector) p.set('connector', options.connector);
    return (await this.json<Operations['searchTools']['response']>('GET', `/v1/tools/search?${p.toString()}`)).tools;
  }

  /**
   * Runs the tool calls of a model's answer for one end user, in parallel, and returns what to send back to the
   * model, in the calls' order:
   * - OpenAI Chat Completions `toolCalls` (`message.tool_calls`) → `{role: 'tool', tool_call_id, content}` messages;
   * - OpenAI Responses API `output` (its `function_call` items; others are skipped) → `function_call_output` items;
   * - Anthropic `content` (its `tool_use` blocks; others are skipped) → `tool_result` blocks;
   * - Gemini `functionCalls` → `functionResponse` parts (`response: {output}` or `response: {error}`).
   * A call that fails (bad arguments, an account to connect, the provider refusing) becomes an error result the
   * model can read — `{"error": {code, message, …}}`, with `is_error` for Anthropic — never an exception. A success
   * carries the provider's data as JSON (`{"ok": true, "data": null}` when the provider answered with no content).
   */
  async handleToolCalls(
    p: HandleToolCallsBase & { toolCalls: readonly OpenAIToolCallLike[] | null | undefined },
  ): Promise<OpenAIToolMessage[]>;
  async handleToolCalls<B extends { type: string }>(
    p: HandleToolCallsBase & { output: readonly B[] },
  ): Promise<OpenAIFunctionCallOutput[]>;
  async handleToolCalls<B extends { type: string }>(
    p: HandleToolCallsBase & { content: readonly B[] },
  ): Promise<AnthropicToolResultBlock[]>;
  async handleToolCalls(
    p: HandleToolCallsBase & { functionCalls: readonly GeminiFunctionCall[] | null | undefined },
  ): Promise<GeminiFunctionResponsePart[]>;
  async handleToolCalls(
    p: HandleToolCallsBase & {
      toolCalls?: readonly OpenAIToolCallLike[] | null;
      output?: ReadonlyArray<{ type: string }>;
      content?: ReadonlyArray<{ type: string }>;
      functionCalls?: readonly GeminiFunctionCall[] | null;
    },
  ): Promise<
    OpenAIToolMessage[] | OpenAIFunctionCallOutput[] | AnthropicToolResultBlock[] | GeminiFunctionResponsePart[]
  > {
    if (typeof p.identifier !== 'string') throw new Error('handleToolCalls: identifier is required');
    const given = (['toolCalls', 'output', 'content', 'functionCalls'] as const).filter((k) => k in p);
    if (given.length !== 1)
      throw new Error(
        'handleToolCalls: give one of toolCalls, output (OpenAI), content (Anthropic), functionCalls (Gemini)',
      );
    const run = (calls: ToolCallRequest[]) => Promise.all(calls.map((c) => this.runToolCall(p, c)));
    if (given[0] === 'toolCalls') {
      const calls = p.toolCalls ?? [];
      const outcomes = await run(calls.map(openaiCall));
      return calls.map((c, i): OpenAIToolMessage => ({
        role: 'tool',
        tool_call_id: c.id,
        content: outcomes[i]!.content,
      }));
    }
    if (given[0] === 'output') {
      const calls = (p.output ?? []).filter(
        (b) => b.type === 'function_call',
      ) as unknown as OpenAIResponsesFunctionCall[];
      const outcomes = await run(
        calls.map((c) =>
          openaiCall({ id: c.call_id, type: 'function', function: { name: c.name, arguments: c.arguments } }),
        ),
      );
      return calls.map((c, i): OpenAIFunctionCallOutput => ({
        type: 'function_call_output',
        call_id: c.call_id,
        output: outcomes[i]!.content,
      }));
    }
    if (given[0] === 'functionCalls') {
      const calls = p.functionCalls ?? [];
      const outcomes = await run(
        calls.map((c) => ({ name: c.name ?? '', input: c.args ?? {}, format: 'gemini' as const })),
      );
      return calls.map((c, i): GeminiFunctionResponsePart => {
        const o = outcomes[i]!;
        return {
          functionResponse: {
            ...(c.id !== undefined ? { id: c.id } : {}),
            name: c.name ?? '',
            response: o.isError ? (o.value as Record<string, unknown>) : { output: o.value },
          },
        };
      });
    }
    if (!Array.isArray(p.content)) throw new Error('handleToolCalls: content must be an array of content blocks');
    const content = p.content as ReadonlyArray<{ type: string }>;
    const uses = content.filter((b) => b.type === 'tool_use') as unknown as AnthropicToolUseBlock[];
    const outcomes = await run(uses.map((b) => ({ name: b.name, input: b.input, format: 'anthropic' as const })));
    return uses.map((b, i): AnthropicToolResultBlock => ({
      type: 'tool_result',
      tool_use_id: b.id,
      content: outcomes[i]!.content,
      ...(outcomes[i]!.isError ? { is_error: true } : {}),
    }));
  }

  /** One tool call, executed: its data, or the error as the model should read it. */
  async runToolCall(p: HandleToolCallsBase, call: ToolCallRequest): Promise<ToolCallOutcome> {
    const fail = (error: Record<string, unknown>): ToolCallOutcome => ({
      value: { error },
      content: JSON.stringify({ error }),
      isError: true,
    });
    if (call.argumentsError) {
      return fail({ code: 'invalid_arguments', message: call.argumentsError, details: [] });
    }
    if (call.input === null || typeof call.input !== 'object' || Array.isArray(call.input)) {
      return fail({
        code: 'invalid_arguments',
        message: 'The arguments must be a JSON object',
        details: [{ field: '(input)', message: 'must be a JSON object' }],
      });
    }
    try {
      const connectionName = p.connectionFor?.(call.name);
      const r = await this.json<Operations['executeTool']['response']>('POST', '/v1/tools/execute', {
        tool_name: call.name,
        tool_input: call.input,
        input_format: call.format,
        identifier: p.identifier,
        ...(connectionName ? { connection_name: connectionName } : {}),
        ...(p.dryRun ? { dry_run: true } : {}),
      });
      // A provider that answers with no content (202, 204) still tells the model the call worked.
      const value = r.data ?? { ok: true, data: null };
      return { value, content: JSON.stringify(value), isError: false };
    } catch (e) {
      if (e instanceof ConnectorServiceError) {
        return fail({
          code: e.code,
          message: e.message,
          // The model relays the link to the user, who connects; the call is then retried.
          ...(e instanceof AuthorizationRequiredError ? { link: e.link, link_expires_at: e.linkExpiresAt } : {}),
          ...(e.details.length ? { details: e.details } : {}),
          ...(e.providerStatus !== undefined ? { provider_status: e.providerStatus } : {}),
          ...(e.providerBody !== undefined ? { provider_body: e.providerBody } : {}),
        });
      }
      return fail({ code: 'client_error', message: e instanceof Error ? e.message : String(e) });
    }
  }

  async listConnectors(): Promise<Connector[]> {
    return (await this.json<Operations['listConnectors']['response']>('GET', '/v1/connectors')).connectors;
  }

  /** Executes a named tool; `toolInput` is typed per tool from the generated types. */
  async executeTool<N extends ToolName>(
    p: ExecuteParams<N>,
  ): Promise<{ data: unknown; executionId: string; warnings?: Array<{ field?: string; message: string }> }> {
    const r = await this.json<Operations['executeTool']['response']>('POST', '/v1/tools/execute', {
      tool_name: p.toolName,
      tool_input: p.toolInput,
      ...('connectedAccountId' in p
        ? { connected_account_id: p.connectedAccountId }
        : { connection_name: p.connectionName, identifier: p.identifier }),
      ...(p.dryRun ? { dry_run: true } : {}),
    });
    return { data: r.data, executionId: r.execution_id, ...(r.warnings ? { warnings: r.warnings } : {}) };
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

/** An OpenAI tool call's arguments (JSON text) read; OpenAI strict mode's nulls are the service's to map back. */
function openaiCall(c: OpenAIToolCallLike): ToolCallRequest {
  const name = c?.function?.name ?? '';
  if (c?.type !== 'function' || !c.function)
    return {
      name,
      input: {},
      format: 'openai-strict',
      argumentsError: `Only function tool calls can run here (this one is of type "${String(c?.type)}")`,
    };
  const raw = c?.function?.arguments;
  if (typeof raw !== 'string') return { name, input: raw ?? {}, format: 'openai-strict' };
  if (!raw.trim()) return { name, input: {}, format: 'openai-strict' };
  try {
    return { name, input: JSON.parse(raw) as unknown, format: 'openai-strict' };
  } catch (e) {
    return {
      name,
      input: raw,
      format: 'openai-strict',
      argumentsError: `The arguments are not JSON (${(e as Error).message})`,
    };
  }
}

function toError(status: number, body: Record<string, unknown> | undefined): ConnectorServiceError {
  const e = (body?.error ?? {}) as Record<string, unknown>;
  if (e.code === 'authorization_required' && typeof e.link === 'string') {
    const str = (v: unknown) => (typeof v === 'string' ? v : '');
    return new AuthorizationRequiredError(
      status,
      str(e.message),
      e.link,
      new Date(str(e.link_expires_at)),
      str(e.reason) as AuthorizationRequiredError['reason'],
      str(e.connection_name),
      str(e.identifier),
      str(e.connected_account_id),
      Array.isArray(e.missing_scopes) ? (e.missing_scopes as string[]) : [],
      body?.execution_id as string | undefined,
      body?.request_id as string | undefined,
    );
  }
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

/** A webhook event as the service sends it (see POST /v1/webhooks). */
export interface WebhookEventBody {
  type: string;
  timestamp: string;
  data: {
    connected_account_id: string;
    connection_name: string;
    connector: string;
    identifier: string;
    status: string;
    reason: string | null;
  };
}

/**
 * Verifies a webhook delivery with the endpoint's secret (`whsec_…`), as the Standard Webhooks specification says:
 * the signature over `webhook-id`, `webhook-timestamp` and the raw body, and a timestamp within five minutes.
 * Returns the event; throws `WebhookVerificationError` when anything does not match. Pass the body exactly as
 * received (the raw text, not a re-serialised object).
 */
export function verifyWebhook(
  payload: string | Buffer,
  headers: Record<string, string | string[] | undefined> | Headers,
  secret: string,
): WebhookEventBody {
  const get = (name: string): string => {
    const v = headers instanceof Headers ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
    return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
  };
  return new Webhook(secret).verify(payload, {
    'webhook-id': get('webhook-id'),
    'webhook-timestamp': get('webhook-timestamp'),
    'webhook-signature': get('webhook-signature'),
  }) as WebhookEventBody;
}

export { WebhookVerificationError } from 'standardwebhooks';
