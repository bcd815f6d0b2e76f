/**
 * The MCP endpoint (issues 10 and 39): a dual-era server built on the official SDK's v2 server package
 * (`@modelcontextprotocol/server`), which implements both protocol eras:
 *
 * - 2025-11-25 and earlier: the initialize handshake, served statelessly — a fresh server and
 *   `WebStandardStreamableHTTPServerTransport` per request (`sessionIdGenerator: undefined`), answering in JSON.
 * - 2026-07-28: stateless by design — the SDK's `createMcpHandler` (with `legacy: 'reject'`: the legacy leg is ours, so
 *   it answers in JSON as before) serves `server/discover`, reads the per-request `_meta` (protocol version, client
 *   capabilities), puts `resultType` on every result and `ttlMs`/`cacheScope` on list results, checks the
 *   `Mcp-Method`/`Mcp-Name` headers against the body, answers an unknown revision with UnsupportedProtocolVersionError
 *   naming the supported ones, and keeps JSON-RPC ids on its errors.
 *
 * The SDK's `isLegacyRequest` decides the era (its own classification step, so the two never disagree). What this file
 * adds, because the SDK leaves it to the host: the Node request → web `Request` bridge and back, the Host and Origin
 * checks against the service's public URL (the SDK ships the validators, `validateHostHeader` and
 * `validateOriginHeader`, but no policy), cache hints for this service (`tools/list` is per end user: private, short),
 * a `tools/list` in name order, and the tools themselves. Any instance of the service answers any request.
 *
 * tools/list lists the configuration's tools (or, in search mode, search_tools and execute_tool); tools/call runs a
 * tool through the same executor as POST /v1/tools/execute, for the scope's end user on the tool's connection, and
 * turns every failure into a tool error an agent can act on.
 */
import { agentDescription } from '../../core/agent-description.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import {
  createMcpHandler,
  isLegacyRequest,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  validateHostHeader,
  validateOriginHeader,
  WebStandardStreamableHTTPServerTransport,
  localhostAllowedHostnames,
  type CallToolResult,
  type InputRequiredResult,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { AuthorizationRequiredError, ProviderError, ServiceError } from '../../core/errors.ts';
import { authorizationText } from '../connect/mcp.ts';
import {
  argumentsHash,
  declaresUrlElicitation,
  Elicitations,
  envelopeCapabilities,
  scopeBinding,
  type CallState,
} from '../connect/elicitation.ts';
import type { FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { jsonBody } from '../api/json-body.ts';
import { connectors, isOAuthKind } from '../connectors/catalog.ts';
import type { Services } from '../services.ts';
import { inputFromModel, mcpTool } from '../tools/llm-formats.ts';
import { asObject } from '../tools/answer.ts';
import { mcpIcons } from '../connectors/icons.ts';
import { createToolSearch, MAX_QUERY_CHARS, type ToolSearch } from '../tools/search.ts';
import { suggest } from '../tools/validation.ts';
import { McpServers, McpUrlRefused, type ExposedTool, type McpScope } from './servers.ts';

const SERVER_INFO = { name: 'agent-connector-service', title: 'Agent connector service', version: '1.0.0' };

/** Most matches search_tools returns at once. */
const SEARCH_MAX = 20;

/** The account states an end user fixes by connecting (again): the tool error carries an authorization link. */
const NEEDS_CONNECTING = new Set([
  'account_not_found',
  'account_not_authorized',
  'account_expired',
  'account_disconnected',
]);

export const SEARCH_TOOLS: Tool = {
  name: 'search_tools',
  title: 'Search tools',
  description:
    'Find the tools that fit a task described in plain words ("reply to the customer\'s ticket", "send an email"), ' +
    'best first, each with its input schema. Then run one with execute_tool.',
  inputSchema: {
    type: 'object',
    properties: {
      query: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_QUERY_CHARS,
        description: `The task, in plain words (at most ${MAX_QUERY_CHARS} characters)`,
      },
      limit: { type: 'integer', minimum: 1, maximum: SEARCH_MAX, default: 5, description: 'Most tools to return' },
    },
    required: ['query'],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
};

export const EXECUTE_TOOL: Tool = {
  name: 'execute_tool',
  title: 'Execute a tool',
  description:
    "Run a tool found with search_tools: its name, and an input that follows the tool's input schema. What the tool " +
    'does depends on the tool: check its annotations in the search result before running one that changes data.',
  inputSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 1, description: 'The tool name, as search_tools gave it' },
      input: {
        type: 'string',
        description:
          "The tool's input: a JSON object following its input schema, written as text (an object is taken too)",
      },
    },
    required: ['name'],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
};

/**
 * The tool as MCP lists it: the shared MCP format (with the annotations and output schema its YAML declares), and its
 * connector's icon at the service's public URL.
 */
export function listedTool(tool: ToolDefinition, publicUrl: string): Tool {
  const base = mcpTool(tool);
  const icons = mcpIcons(connectors.get(tool.connector), publicUrl);
  return {
    ...base,
    inputSchema: base.inputSchema as Tool['inputSchema'],
    outputSchema: base.outputSchema,
    ...(icons ? { icons } : {}),
  };
}

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError: true } : {}),
});

/**
 * A tool's answer as an MCP result: `structuredContent` (an object, as the output schema declares it) and the same
 * JSON as text for clients that read only text. Never on an error.
 */
function structured(data: unknown): CallToolResult {
  const content = asObject(data);
  return { content: [{ type: 'text', text: JSON.stringify(content) }], structuredContent: content };
}

const fieldList = (details: FieldError[]) => details.map((d) => `${d.field} ${d.message}`).join('; ');

function describeBody(body: unknown): string {
  if (body === undefined || body === null || body === '') return '(empty body)';
  const t = typeof body === 'string' ? body : JSON.stringify(body);
  return t.length > 2000 ? `${t.slice(0, 2000)}…` : t;
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers = {}): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** GET and DELETE: no event stream, no session (the transport specification's answer for a stateless server). */
export function methodNotAllowed(res: ServerResponse): void {
  jsonRpcError(res, 405, -32000, 'Method not allowed: this MCP server is stateless; send JSON-RPC messages by POST', {
    allow: 'POST',
  });
}

/** How long a 2026-07-28 client may reuse a tools/list (and server/discover) answer. */
const TOOLS_TTL_MS = 60_000;
/** The same for the lists that never change (no prompts, no resources). */
const STATIC_TTL_MS = 3_600_000;

/**
 * The Node request as a web `Request` for the SDK (its v2 server speaks web-standard requests; the Node adapter
 * package does not follow its releases): the URL at the public URL, the headers, no body (the parsed body travels
 * beside it as `parsedBody`).
 */
function webRequest(req: IncomingMessage, publicUrl: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Request(new URL(req.url ?? '/', publicUrl), { method: req.method, headers, signal });
}

/** Writes the SDK's web `Response` to the Node response (status, headers, body as it comes). */
async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name === 'set-cookie') return;
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  await new Promise<void>((resolve) => {
    const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
    body.on('error', () => {
      res.destroy();
      resolve();
    });
    res.on('close', resolve);
    body.pipe(res);
  });
}

/** How a tool call asks for a connection by URL elicitation: the session (2025-11-25) or the request's state codec. */
type Elicit =
  | { era: 'legacy'; sessionId: string }
  | { era: 'modern'; ctx: ServerContext; codec: ReturnType<Elicitations['codec']>; state: CallState };

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

export class McpEndpoint {
  readonly servers: McpServers;
  private readonly parseJson: Middleware;
  /** Search indexes by tool set (most configurations share a few). */
  private readonly searches = new Map<string, ToolSearch>();
  /** URL-mode elicitation: signed sessions, requestState, the GET streams (runtime/connect/elicitation.ts). */
  readonly elicitations: Elicitations;

  constructor(
    private readonly s: Services,
    servers = new McpServers(s),
  ) {
    this.servers = servers;
    this.parseJson = jsonBody(s.config.bodyLimitBytes);
    this.elicitations = new Elicitations(s.sealer, s.store, s.log, s.lifecycle);
  }

  /**
   * The host names a request to an end user's MCP URL may name in `Host` and `Origin` (DNS rebinding): the public
   * URL's, the loopback names when the public URL is a loopback one, and MCP_ALLOWED_HOSTS.
   */
  private allowedHostnames(): string[] {
    const publicUrl = this.s.config.publicUrl;
    if (this.allowed?.publicUrl !== publicUrl) {
      const hostname = new URL(publicUrl).hostname.toLowerCase();
      const loopback = localhostAllowedHostnames();
      const names = new Set([hostname, ...this.s.config.mcpAllowedHosts]);
      if (loopback.includes(hostname)) for (const n of loopback) names.add(n);
      this.allowed = { publicUrl, names: [...names] };
    }
    return this.allowed.names;
  }
  private allowed?: { publicUrl: string; names: string[] };

  /** Why the request's Host or Origin header is refused (a request a browser was tricked into sending), if it is. */
  refusedHost(req: IncomingMessage, checkHost = true): string | undefined {
    const allowed = this.allowedHostnames();
    if (checkHost) {
      const host = validateHostHeader(req.headers.host, allowed);
      if (!host.ok) return `Forbidden: ${host.message}`;
    }
    const origin = validateOriginHeader(req.headers.origin, allowed);
    if (!origin.ok) return `Forbidden: ${origin.message}`;
    return undefined;
  }

  /** `POST /mcp/{token}`: the token is the credential. The body is read here, so its errors are JSON-RPC errors. */
  async serveToken(req: IncomingMessage & { body?: unknown }, res: ServerResponse, token: string): Promise<void> {
    const refused = this.refusedHost(req);
    if (refused) return jsonRpcError(res, 403, -32000, refused);
    let scope: McpScope;
    try {
      scope = await this.servers.scopeOfToken(token);
    } catch (e) {
      if (!(e instanceof McpUrlRefused)) throw e;
      return jsonRpcError(res, e.status, -32001, e.message);
    }
    await this.serveBody(req, res, scope);
  }

  /** Reads the JSON-RPC body (its errors are JSON-RPC errors) and serves it for the scope (the OAuth endpoint too). */
  async serveBody(req: IncomingMessage & { body?: unknown }, res: ServerResponse, scope: McpScope): Promise<void> {
    try {
      await new Promise<void>((resolve, reject) =>
        this.parseJson(req, res, (err) =>
          err ? reject(err instanceof Error ? err : new Error('The request body could not be read')) : resolve(),
        ),
      );
    } catch (e) {
      const type = (e as { type?: string }).type;
      if (type === 'entity.too.large')
        return jsonRpcError(res, 413, ProtocolErrorCode.InvalidRequest, 'The body is larger than BODY_LIMIT_BYTES');
      if (type === 'entity.parse.failed')
        return jsonRpcError(res, 400, ProtocolErrorCode.ParseError, 'Parse error: not JSON');
      return jsonRpcError(res, 415, ProtocolErrorCode.InvalidRequest, (e as Error).message);
    }
    await this.serve(req, res, scope, req.body);
  }

  /**
   * Serves one JSON-RPC message (its body already parsed) for the scope, in the era the request speaks: a fresh SDK
   * server per request either way, closed when the answer ends.
   */
  async serve(req: IncomingMessage, res: ServerResponse, scope: McpScope, body: unknown): Promise<void> {
    const aborted = new AbortController();
    const request = webRequest(req, this.s.config.publicUrl, aborted.signal);
    const cleanups: (() => Promise<unknown>)[] = [];
    res.on('close', () => {
      aborted.abort();
      for (const c of cleanups) void c().catch(() => undefined);
    });
    let response: Response;
    if (await isLegacyRequest(request, body)) {
      // 2025-11-25 and earlier: the handshake era, served statelessly in JSON (as before the SDK's v2). A client that
      // declares URL elicitation at initialize gets a signed session id, which tells any instance so on its later calls.
      const binding = scopeBinding(scope.server.id, scope.identifier);
      const given = req.headers['mcp-session-id'];
      const sessionId = typeof given === 'string' && this.elicitations.validSession(given, binding) ? given : undefined;
      const init = body as { method?: unknown; params?: { capabilities?: unknown } } | null;
      const newSession =
        init?.method === 'initialize' && declaresUrlElicitation(init.params?.capabilities)
          ? this.elicitations.mintSession(binding)
          : undefined;
      const server = this.buildServer(scope, { sessionId });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      cleanups.push(
        () => transport.close(),
        () => server.close(),
      );
      await server.connect(transport);
      response = await transport.handleRequest(request, { parsedBody: body });
      if (newSession && response.ok) response.headers.set('mcp-session-id', newSession);
    } else {
      // 2026-07-28: the SDK's modern leg; ours answers the legacy one, so it refuses what is not modern.
      const handler = createMcpHandler(() => this.buildServer(scope), {
        legacy: 'reject',
        // 'auto': one JSON body, since no handler here sends anything before its result ('json' would warn on stderr).
        onerror: (err) => this.s.log.debug({ err: err.message }, 'MCP request refused'),
      });
      cleanups.push(() => handler.close());
      response = await handler.fetch(request, { parsedBody: body });
    }
    await writeResponse(res, response);
  }

  /**
   * `GET` on an end user's MCP URL: for a handshake-era client with a session (it declared URL elicitation), the event
   * stream on which `notifications/elicitation/complete` arrives; 405 otherwise (a stateless server's answer).
   */
  async serveStream(req: IncomingMessage, res: ServerResponse, token: string): Promise<void> {
    const refused = this.refusedHost(req);
    if (refused) return jsonRpcError(res, 403, -32000, refused);
    let scope: McpScope;
    try {
      scope = await this.servers.scopeOfToken(token);
    } catch (e) {
      if (!(e instanceof McpUrlRefused)) throw e;
      return jsonRpcError(res, e.status, -32001, e.message);
    }
    const sessionId = req.headers['mcp-session-id'];
    if (
      typeof sessionId !== 'string' ||
      !this.elicitations.validSession(sessionId, scopeBinding(scope.server.id, scope.identifier))
    )
      return methodNotAllowed(res);
    const connections = new Set<string>();
    for (const e of await this.servers.exposedTools(scope.server))
      if (e.connectionName) connections.add(e.connectionName);
    // An event stream stays open: not a request in flight for the background work to wait for.
    this.s.foreground.release(res);
    this.elicitations.open(res, req, { sessionId, identifier: scope.identifier, connections: [...connections] });
  }

  /** The SDK server for one request of one scope: its tools, and (empty) resources and prompts. */
  private buildServer(scope: McpScope, legacy: { sessionId?: string } = {}): McpServer {
    // 2026-07-28 requestState: the SDK's HMAC codec, bound to this MCP URL's server and end user, verified by the SDK
    // before the handler runs (a tampered, expired or other user's state is refused there, as -32602).
    const codec = this.elicitations.codec(scopeBinding(scope.server.id, scope.identifier));
    const server = new McpServer(SERVER_INFO, {
      requestState: { verify: (state, ctx) => codec.verify(state, ctx) },
      capabilities: {
        tools: { listChanged: false },
        resources: { listChanged: false },
        prompts: { listChanged: false },
        logging: {},
      },
      instructions:
        scope.server.mode === 'search'
          ? 'Find the tool for a task with search_tools, then run it with execute_tool.'
          : 'Tools act on the end user’s own accounts; a tool error that carries a link means the user must connect that account first.',
      // 2026-07-28 cache hints: what tools/list answers depends on the end user's server configuration (private) and
      // changes when an operator edits it (a minute); the rest is the same for every request of this service.
      cacheHints: {
        'tools/list': { ttlMs: TOOLS_TTL_MS, cacheScope: 'private' },
        'server/discover': { ttlMs: TOOLS_TTL_MS, cacheScope: 'private' },
        'prompts/list': { ttlMs: STATIC_TTL_MS, cacheScope: 'public' },
        'resources/list': { ttlMs: STATIC_TTL_MS, cacheScope: 'public' },
        'resources/templates/list': { ttlMs: STATIC_TTL_MS, cacheScope: 'public' },
      },
    });
    let exposed: Promise<Map<string, ExposedTool>> | undefined;
    const tools = () =>
      (exposed ??= this.servers.exposedTools(scope.server).then((list) => new Map(list.map((e) => [e.tool.name, e]))));

    server.server.setRequestHandler('tools/list', async () => {
      if (scope.server.mode === 'search') return { tools: [SEARCH_TOOLS, EXECUTE_TOOL] };
      // In name order: the same configuration lists the same tools in the same order, whichever instance answers.
      const list = [...(await tools()).values()].map((e) => listedTool(e.tool, this.s.config.publicUrl));
      return { tools: list.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0)) };
    });
    server.server.setRequestHandler('tools/call', async (request, ctx) => {
      const { name, arguments: args = {} } = request.params;
      const available = await tools();
      // How this call asks the user to connect an account: URL elicitation when the client declared it, in its era.
      const elicit: Elicit | undefined = legacy.sessionId
        ? { era: 'legacy', sessionId: legacy.sessionId }
        : declaresUrlElicitation(envelopeCapabilities(ctx))
          ? { era: 'modern', ctx, codec, state: { t: name, a: argumentsHash(args), c: '' } }
          : undefined;
      if (elicit?.era === 'modern') {
        const echoed = ctx.mcpReq.requestState<CallState>();
        if (echoed !== undefined && (echoed.t !== name || echoed.a !== elicit.state.a))
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            'Invalid requestState: it was issued for another tool call (another tool or other arguments); call again without it',
          );
      }
      if (scope.server.mode === 'search') {
        if (name === 'search_tools') return this.search(available, args);
        if (name === 'execute_tool') {
          const target = args.name;
          let input: unknown = args.input ?? {};
          if (typeof input === 'string') {
            try {
              input = JSON.parse(input) as unknown;
            } catch {
              return text('Invalid input: input must be a JSON object (the tool’s input), written as text', true);
            }
          }
          if (typeof target !== 'string' || !target) return text('Invalid input: name is required (a tool name)', true);
          if (input === null || typeof input !== 'object' || Array.isArray(input))
            return text('Invalid input: input must be an object (the tool’s input)', true);
          const e = available.get(target);
          if (!e) {
            const hint = suggest(target, [...available.keys()]);
            return text(
              `Invalid input: name "${target}" is not a tool of this server${hint ? ` (did you mean ${hint}?)` : ''}; find one with search_tools`,
              true,
            );
          }
          return this.run(scope, e, input, elicit);
        }
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Unknown tool: ${name} (this server has search_tools and execute_tool)`,
        );
      }
      const e = available.get(name);
      if (!e) {
        const hint = suggest(name, [...available.keys()]);
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Unknown tool: ${name}${hint ? ` (did you mean ${hint}?)` : ''}`,
        );
      }
      return this.run(scope, e, args, elicit);
    });
    return server;
  }

  private search(available: Map<string, ExposedTool>, args: Record<string, unknown>): CallToolResult {
    const { query, limit = 5 } = args;
    if (typeof query !== 'string' || !query.trim())
      return text('Invalid input: query must describe the task in words', true);
    if (query.length > MAX_QUERY_CHARS)
      return text(`Invalid input: query must be at most ${MAX_QUERY_CHARS} characters (it has ${query.length})`, true);
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > SEARCH_MAX)
      return text(`Invalid input: limit must be an integer from 1 to ${SEARCH_MAX}`, true);
    if (!available.size) return text(JSON.stringify({ tools: [] }));
    const key = [...available.keys()].sort().join(',');
    let search = this.searches.get(key);
    if (!search) {
      if (this.searches.size >= 64) this.searches.clear();
      search = createToolSearch(new Map([...available].map(([n, e]) => [n, e.tool])), connectors);
      this.searches.set(key, search);
    }
    const hits = search(query, { limit: Math.min(limit, available.size) });
    const found = hits.map((h) => {
      const tool = available.get(h.name)!.tool;
      const listed = listedTool(tool, this.s.config.publicUrl);
      return {
        name: h.name,
        connector: h.connector,
        title: h.title,
        description: agentDescription(tool),
        score: h.score,
        inputSchema: listed.inputSchema,
        ...(listed.annotations ? { annotations: listed.annotations } : {}),
      };
    });
    return text(JSON.stringify({ tools: found }));
  }

  /** Runs one tool for the scope's end user, through the executor; every failure becomes a tool error. */
  private async run(
    scope: McpScope,
    e: ExposedTool,
    input: unknown,
    elicit?: Elicit,
  ): Promise<CallToolResult | InputRequiredResult> {
    if (!e.connectionName) return text(e.problem ?? `Tool ${e.tool.name} has no connection to run on`, true);
    // A free-form object parameter is listed as JSON text (strict-mode clients take no open object): read it back.
    const read = inputFromModel(e.tool, 'mcp', input);
    if (read.errors.length) return text(`Invalid input for ${e.tool.name}: ${fieldList(read.errors)}`, true);
    try {
      const result = await this.s.executor.execute({
        toolName: e.tool.name,
        input: read.input,
        account: { connectionName: e.connectionName, identifier: scope.identifier },
        // A user who must connect gets a link (runtime/connect/just-in-time.ts): the same unexpired link on a retry,
        // and the operator's verification setting, so that whoever opens a link from a transcript connects nobody else.
        authorization: { userVerifyUrl: scope.server.userVerifyUrl ?? undefined },
        // The caller's claims: a credential restricted to named connections runs no tool of another.
        ...(scope.access ? { scope: { access: scope.access } } : {}),
      });
      return structured(result.data);
    } catch (err) {
      if (err instanceof AuthorizationRequiredError && elicit) {
        if (elicit.era === 'legacy') {
          const connection = await this.s.store.getConnectionByName(err.info.connectionName);
          if (connection) throw this.elicitations.urlRequired(err, elicit.sessionId, connection.id);
        } else {
          return this.elicitations.inputRequired(
            err,
            elicit.codec,
            { ...elicit.state, c: err.info.connectionName },
            elicit.ctx,
          );
        }
      }
      return this.toolError(scope, e, err);
    }
  }

  private async toolError(scope: McpScope, e: ExposedTool, err: unknown): Promise<CallToolResult> {
    if (err instanceof ProviderError) {
      return text(`The provider answered HTTP ${err.status}: ${describeBody(err.body)}`, true);
    }
    if (!(err instanceof ServiceError)) {
      this.s.log.error({ tool: e.tool.name, err: (err as Error)?.stack ?? String(err) }, 'MCP tool call failed');
      return text(`Internal error while running ${e.tool.name}`, true);
    }
    if (err.code === 'invalid_input' && Array.isArray(err.details)) {
      return text(`Invalid input for ${e.tool.name}: ${fieldList(err.details)}`, true);
    }
    if (err instanceof AuthorizationRequiredError) return authorizationText(err);
    if (NEEDS_CONNECTING.has(err.code)) return this.connectHint(scope, e, err);
    return text(`${err.message} (${err.code})`, true);
  }

  /** The account is missing or unusable: a fresh authorization link (OAuth), or what to do (API keys). */
  private async connectHint(scope: McpScope, e: ExposedTool, err: ServiceError): Promise<CallToolResult> {
    const connection = await this.s.store.getConnectionByName(e.connectionName!);
    const title = connectors.get(e.tool.connector)?.title ?? e.tool.connector;
    const why =
      err.code === 'account_expired'
        ? `The user's ${title} account needs to be connected again (its authorization expired).`
        : err.code === 'account_disconnected'
          ? `The user's ${title} account was disconnected.`
          : `The user has not connected a ${title} account yet.`;
    if (!connection) return text(`${why} ${err.message}`, true);
    if (!isOAuthKind(connection.authKind)) {
      return text(
        `${why} This connection takes credentials rather than a sign-in: store the user's ${title} credentials ` +
          `(PUT /v1/connected-accounts, or the dashboard) for identifier "${scope.identifier}", then try again.`,
        true,
      );
    }
    try {
      // The operator's verification setting applies: with a user_verify_url, whoever opens the link (it ends up in
      // transcripts and logs) cannot connect an account for this user without the application confirming them.
      const { link } = await this.s.oauth.createLink(
        connection,
        scope.identifier,
        undefined,
        scope.server.userVerifyUrl ?? undefined,
      );
      return text(`${why} Ask the user to open this link to connect it, then try again: ${link}`, true);
    } catch (linkError) {
      if (!(linkError instanceof ServiceError)) throw linkError;
      return text(`${why} No authorization link could be made: ${linkError.message}`, true);
    }
  }
}
