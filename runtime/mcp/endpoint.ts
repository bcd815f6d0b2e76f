/**
 * The MCP endpoint (issue 10): the official SDK's server over its Streamable HTTP transport, stateless — a new
 * server and transport per request (`sessionIdGenerator: undefined`), answering in JSON — so any instance of the
 * service answers any request. tools/list lists the configuration's tools (or, in search mode, search_tools and
 * execute_tool); tools/call runs a tool through the same executor as POST /v1/tools/execute, for the scope's
 * end user on the tool's connection, and turns every failure into a tool error an agent can act on.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { ProviderError, ServiceError } from '../../core/errors.ts';
import type { FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { jsonBody } from '../api/json-body.ts';
import { connectors, isOAuthKind } from '../connectors/catalog.ts';
import type { Services } from '../services.ts';
import { mcpTool } from '../tools/llm-formats.ts';
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

const SEARCH_TOOLS: Tool = {
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

const EXECUTE_TOOL: Tool = {
  name: 'execute_tool',
  title: 'Execute a tool',
  description:
    "Run a tool found with search_tools: its name, and an input that follows the tool's input schema. What the tool " +
    'does depends on the tool: check its annotations in the search result before running one that changes data.',
  inputSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 1, description: 'The tool name, as search_tools gave it' },
      input: { type: 'object', description: "The tool's input, following its input schema" },
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
    outputSchema: base.outputSchema as Tool['outputSchema'],
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

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

export class McpEndpoint {
  readonly servers: McpServers;
  private readonly parseJson: Middleware;
  /** Search indexes by tool set (most configurations share a few). */
  private readonly searches = new Map<string, ToolSearch>();

  constructor(
    private readonly s: Services,
    servers = new McpServers(s),
  ) {
    this.servers = servers;
    this.parseJson = jsonBody(s.config.bodyLimitBytes);
  }

  /** `POST /mcp/{token}`: the token is the credential. The body is read here, so its errors are JSON-RPC errors. */
  async serveToken(req: IncomingMessage & { body?: unknown }, res: ServerResponse, token: string): Promise<void> {
    let scope: McpScope;
    try {
      scope = await this.servers.scopeOfToken(token);
    } catch (e) {
      if (!(e instanceof McpUrlRefused)) throw e;
      return jsonRpcError(res, e.status, -32001, e.message);
    }
    try {
      await new Promise<void>((resolve, reject) =>
        this.parseJson(req, res, (err) =>
          err ? reject(err instanceof Error ? err : new Error('The request body could not be read')) : resolve(),
        ),
      );
    } catch (e) {
      const type = (e as { type?: string }).type;
      if (type === 'entity.too.large')
        return jsonRpcError(res, 413, ErrorCode.InvalidRequest, 'The body is larger than BODY_LIMIT_BYTES');
      if (type === 'entity.parse.failed') return jsonRpcError(res, 400, ErrorCode.ParseError, 'Parse error: not JSON');
      return jsonRpcError(res, 415, ErrorCode.InvalidRequest, (e as Error).message);
    }
    await this.serve(req, res, scope, req.body);
  }

  /** Serves one JSON-RPC message for the scope: a fresh SDK server and transport, closed when the answer ends. */
  async serve(req: IncomingMessage, res: ServerResponse, scope: McpScope, body: unknown): Promise<void> {
    const server = new McpServer(SERVER_INFO, {
      capabilities: { tools: { listChanged: false } },
      instructions:
        scope.server.mode === 'search'
          ? 'Find the tool for a task with search_tools, then run it with execute_tool.'
          : 'Tools act on the end user’s own accounts; a tool error that carries a link means the user must connect that account first.',
    });
    let exposed: Promise<Map<string, ExposedTool>> | undefined;
    const tools = () =>
      (exposed ??= this.servers.exposedTools(scope.server).then((list) => new Map(list.map((e) => [e.tool.name, e]))));

    server.server.setRequestHandler(ListToolsRequestSchema, async () => {
      if (scope.server.mode === 'search') return { tools: [SEARCH_TOOLS, EXECUTE_TOOL] };
      return { tools: [...(await tools()).values()].map((e) => listedTool(e.tool, this.s.config.publicUrl)) };
    });
    server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const { name, arguments: args = {} } = request.params;
      const available = await tools();
      if (scope.server.mode === 'search') {
        if (name === 'search_tools') return this.search(available, args);
        if (name === 'execute_tool') {
          const target = args.name;
          const input = args.input ?? {};
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
          return this.run(scope, e, input);
        }
        throw new McpError(
          ErrorCode.InvalidParams,
          `Unknown tool: ${name} (this server has search_tools and execute_tool)`,
        );
      }
      const e = available.get(name);
      if (!e) {
        const hint = suggest(name, [...available.keys()]);
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}${hint ? ` (did you mean ${hint}?)` : ''}`);
      }
      return this.run(scope, e, args);
    });

    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
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
        description: h.description,
        score: h.score,
        inputSchema: listed.inputSchema,
        ...(listed.annotations ? { annotations: listed.annotations } : {}),
      };
    });
    return text(JSON.stringify({ tools: found }));
  }

  /** Runs one tool for the scope's end user, through the executor; every failure becomes a tool error. */
  private async run(scope: McpScope, e: ExposedTool, input: unknown): Promise<CallToolResult> {
    if (!e.connectionName) return text(e.problem ?? `Tool ${e.tool.name} has no connection to run on`, true);
    try {
      const result = await this.s.executor.execute({
        toolName: e.tool.name,
        input,
        account: { connectionName: e.connectionName, identifier: scope.identifier },
        // The caller's claims: a credential restricted to named connections runs no tool of another.
        ...(scope.access ? { scope: { access: scope.access } } : {}),
      });
      return structured(result.data);
    } catch (err) {
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
