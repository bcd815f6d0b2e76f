/**
 * The runtime's one MCP client: the official SDK's `Client` over its Streamable HTTP transport, with the upstream
 * layer's fetch underneath. The SDK does the protocol — initialize, the negotiated version and session id echoed on
 * every request, notifications/initialized, request ids, result schemas. The fetch below does what the upstream
 * layer does for every call: the address guard, connect/idle/whole-answer timeouts and the size limit, each failure
 * classified; and, reading the buffered answer, it ends an exchange at once when the server answered an HTTP error,
 * a JSON-RPC error, or no reply to the request at all (the SDK would otherwise wait for a reply that never comes).
 *
 * One session per account and endpoint, reused while the credentials stay the same: a new token opens a new
 * session, and a session the server forgot (404) is initialized again.
 */
import type { BoundedCache } from '../caches.ts';
import type { IncomingHttpHeaders } from 'node:http';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, JSONRPCMessage, Tool } from '@modelcontextprotocol/sdk/types.js';
import { createParser } from 'eventsource-parser';
import { ProviderError, ServiceError, UpstreamFailure } from '../../core/errors.ts';
import { fetchRequest, toResponse, type Fetch, type FetchPolicy } from './fetch.ts';
import { sendOnce } from './http.ts';

async function loadSdk() {
  const [client, transport, types, ajv] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/validation/ajv'),
  ]);
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: transport.StreamableHTTPClientTransport,
    CallToolResultSchema: types.CallToolResultSchema,
    ListToolsResultSchema: types.ListToolsResultSchema,
    JSONRPCMessageSchema: types.JSONRPCMessageSchema,
    McpError: types.McpError,
    RequestTimeout: types.ErrorCode.RequestTimeout,
    // One for every client: the SDK would build an Ajv instance per client, and the requests here compile nothing.
    validator: new ajv.AjvJsonSchemaValidator(),
  };
}
let sdk: ReturnType<typeof loadSdk> | undefined;
/**
 * The MCP SDK, loaded on the first MCP call rather than at start: with its schema library it adds about a second
 * and 20 MB of memory to every start (measured), also where no connection uses an MCP server.
 */
const mcpSdk = () => (sdk ??= loadSdk());

const CLIENT_INFO = { name: 'agent-connector-service', version: '0.1.0' };
const USER_AGENT = 'agent-connector-service/0.1';
/** Pages of tools/list followed before the listing stops (a server whose cursor never ends). */
const MAX_TOOL_PAGES = 10;

/** The MCP endpoint answered with an HTTP status other than 2xx. */
export class McpHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: IncomingHttpHeaders,
  ) {
    super(`MCP server answered HTTP ${status}`);
  }
}

/** The MCP server answered a request with a JSON-RPC error. */
class McpRpcError extends Error {
  constructor(readonly error: { code: number; message: string; data?: unknown }) {
    super(error.message);
  }
}

const malformed = (detail: string) =>
  new UpstreamFailure('provider_malformed_response', `The MCP server's answer is not usable MCP: ${detail}`);

/**
 * The reply to request `id` in an MCP server's answer: a JSON body (one message or a batch), or an event stream
 * whose `message` events each carry one message — read as the SDK's transport reads them — checked against the
 * SDK's JSON-RPC message schema.
 */
export async function findReply(body: string, contentType: string, id: number): Promise<JSONRPCMessage> {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const messages: unknown[] = [];
  if (type === 'text/event-stream') {
    const parser = createParser({
      onEvent: (event) => {
        if (event.data && (event.event === undefined || event.event === 'message')) {
          try {
            messages.push(JSON.parse(event.data));
          } catch {
            // The SDK skips an event that is not JSON, and so does the search for the reply.
          }
        }
      },
    });
    parser.feed(body);
  } else if (type === 'application/json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw malformed('malformed JSON');
    }
    messages.push(...(Array.isArray(parsed) ? (parsed as unknown[]) : [parsed]));
  } else {
    throw malformed(`content type ${JSON.stringify(contentType)} is neither JSON nor an event stream`);
  }
  const reply = messages.find(
    (m): m is Record<string, unknown> =>
      !!m && typeof m === 'object' && Number((m as { id?: unknown }).id) === id && ('result' in m || 'error' in m),
  );
  if (!reply) throw malformed(`no reply to request ${id}`);
  const checked = (await mcpSdk()).JSONRPCMessageSchema.safeParse(reply);
  if (!checked.success) throw malformed(`the reply to request ${id} is not a JSON-RPC response`);
  return checked.data;
}

function parsedBody(body: Buffer): unknown {
  const text = body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The session whose client sends through this fetch; its policy is the one of its latest use. */
export interface Session {
  credentials: string;
  policy: FetchPolicy;
  client: Promise<Client>;
}

/** The upstream fetch as an MCP transport needs it (see the module comment). */
function mcpFetch(session: Pick<Session, 'policy'>): Fetch {
  return async (input, init) => {
    const req = fetchRequest(input, init);
    // The service asks and reads the answers; it never listens for server-initiated messages, so it opens no
    // standing GET stream per session (a socket held for nothing). 405 is how a server says it offers none.
    if (req.method === 'GET') return new Response(null, { status: 405 });
    const res = await sendOnce(req, {
      ...session.policy,
      credentialHeaders: [],
      ...(init?.signal ? { signal: init.signal } : {}),
    });
    if (res.status < 200 || res.status >= 300) throw new McpHttpError(res.status, parsedBody(res.body), res.headers);
    const id = requestId(req.body);
    if (id !== undefined) {
      const reply = await findReply(res.body.toString('utf8'), String(res.headers['content-type'] ?? ''), id);
      if ('error' in reply) throw new McpRpcError(reply.error);
    }
    return toResponse(res);
  };
}

/** The id of the JSON-RPC request a transport POSTs (undefined for a notification or a response). */
function requestId(body: Buffer | string | undefined): number | undefined {
  if (typeof body !== 'string') return undefined;
  const message = JSON.parse(body) as { id?: unknown; method?: unknown };
  return typeof message.id === 'number' && typeof message.method === 'string' ? message.id : undefined;
}

/**
 * Later than the transport's own deadline (connect + response, see `sendOnce`), which ends a slow exchange first
 * and names its limit: this one only ends a request whose reply the SDK never delivers.
 */
const requestOptions = (policy: FetchPolicy): RequestOptions => ({
  timeout: policy.connectTimeoutMs + policy.responseTimeoutMs + 1_000,
});

/** What a failed MCP exchange is for the service's callers. */
async function mcpFailure(e: unknown, policy: FetchPolicy): Promise<Error> {
  if (e instanceof McpHttpError) return new ProviderError(e.status, e.body, e.headers);
  if (e instanceof McpRpcError)
    return new ProviderError([-32600, -32601, -32602].includes(e.error.code) ? 400 : 502, { error: e.error });
  if (e instanceof ServiceError) return e;
  const { McpError, RequestTimeout } = await mcpSdk();
  if (e instanceof McpError && e.code === (RequestTimeout as number)) {
    return new UpstreamFailure(
      'upstream_timeout',
      `The MCP server did not answer in time (after ${requestOptions(policy).timeout} ms)`,
      504,
    );
  }
  return malformed((e as Error)?.message ?? String(e));
}

export interface McpTarget {
  accountId: string;
  url: string;
  /** The account's credential headers, sent on every request of the session. */
  credentials: Record<string, string>;
  policy: FetchPolicy;
}

export class McpClients {
  /**
   * Sessions by account and server: an LRU bounded by MCP_SESSION_CACHE_SIZE, each kept at most as long as
   * decrypted credentials are (it holds them), then initialized again.
   */
  constructor(private readonly sessions: BoundedCache<string, Session>) {}

  /** Calls a tool; a result flagged `isError` is the provider's error, carrying the result. */
  async callTool(target: McpTarget, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const { CallToolResultSchema } = await mcpSdk();
    const result = await this.request(target, (client, options) =>
      client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema, options),
    );
    if (result.isError) throw new ProviderError(502, result);
    return result;
  }

  /** Every tool the server lists, following its cursor for at most MAX_TOOL_PAGES pages. */
  async listTools(target: McpTarget): Promise<Tool[]> {
    const { ListToolsResultSchema } = await mcpSdk();
    return this.request(target, async (client, options) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const result = await client.request(
          { method: 'tools/list', params: cursor ? { cursor } : {} },
          ListToolsResultSchema,
          options,
        );
        tools.push(...result.tools);
        cursor = result.nextCursor;
        if (!cursor) break;
      }
      return tools;
    });
  }

  /**
   * Runs `use` on the target's session. A session the server forgot (404) is initialized again, twice at most. A
   * 401 is thrown as the `McpHttpError` it is, for the caller to refresh the token; every other failure is the
   * service's error (see `mcpFailure`). A session survives the provider's answers (an HTTP error, a JSON-RPC
   * error); a broken exchange, a 401 or a 404 ends it.
   */
  private async request<T>(target: McpTarget, use: (client: Client, options: RequestOptions) => Promise<T>) {
    const key = `${target.accountId} ${target.url}`;
    for (let attempt = 0; ; attempt++) {
      const session = this.session(key, target);
      try {
        return await use(await session.client, requestOptions(session.policy));
      } catch (e) {
        const answered =
          e instanceof McpRpcError || (e instanceof McpHttpError && e.status !== 401 && e.status !== 404);
        if (!answered && this.sessions.get(key) === session) this.sessions.delete(key);
        if (e instanceof McpHttpError && e.status === 404 && attempt < 2) continue;
        if (e instanceof McpHttpError && e.status === 401) throw e;
        throw await mcpFailure(e, session.policy);
      }
    }
  }

  private session(key: string, target: McpTarget): Session {
    const credentials = Object.entries(target.credentials).join('\n');
    const existing = this.sessions.get(key);
    if (existing && existing.credentials === credentials) {
      existing.policy = target.policy;
      return existing;
    }
    // A replaced or evicted session is dropped, not closed: calls still running on it finish on their own.
    const session = { credentials, policy: target.policy } as Session;
    session.client = connect(target.url, target.credentials, session);
    session.client.catch(() => {
      if (this.sessions.get(key) === session) this.sessions.delete(key);
    });
    this.sessions.set(key, session);
    return session;
  }
}

/** A client with an initialized session (the SDK's handshake). */
async function connect(
  url: string,
  credentials: Record<string, string>,
  session: Pick<Session, 'policy'>,
): Promise<Client> {
  const { Client, StreamableHTTPClientTransport, validator } = await mcpSdk();
  const client = new Client(CLIENT_INFO, { jsonSchemaValidator: validator });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: mcpFetch(session),
    requestInit: { headers: { ...credentials, 'user-agent': USER_AGENT } },
  });
  try {
    await client.connect(transport, requestOptions(session.policy));
  } catch (e) {
    if (e instanceof McpRpcError)
      throw new UpstreamFailure('mcp_initialize_failed', `MCP initialize failed: ${e.error.message}`);
    throw e;
  }
  return client;
}

/**
 * What an MCP endpoint answers an initialize without credentials: the `WWW-Authenticate` challenge of its 401
 * (MCP authorization, RFC 9728 §5.1), or undefined when it answers anything else.
 */
export async function unauthenticatedChallenge(url: string, policy: FetchPolicy): Promise<string | undefined> {
  try {
    const client = await connect(url, {}, { policy });
    await client.close();
    return undefined;
  } catch (e) {
    if (!(e instanceof McpHttpError) || e.status !== 401) return undefined;
    const header = e.headers['www-authenticate'];
    return Array.isArray(header) ? header.join(', ') : header;
  }
}
