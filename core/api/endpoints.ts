/**
 * Every endpoint of the service's HTTP API (the dashboard aside), once: method, path, what it takes and what it
 * answers, as JSON Schemas. The generator turns this into the OpenAPI document, the precompiled request
 * validators and the client library's types; the runtime's route table (runtime/api/routes.ts) gives each
 * endpoint its handler.
 */
import * as S from './schemas.ts';
import type { JsonSchema } from './schemas.ts';
import type { Scope } from './scopes.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ResponseSpec {
  description: string;
  /** Media type → schema of the body; no `content`, no body (or one that is not described). */
  content?: Readonly<Record<string, JsonSchema>>;
  headers?: Readonly<Record<string, { description: string; schema: JsonSchema }>>;
}

export interface HeaderParameter {
  name: string;
  required: boolean;
  description: string;
}

interface EndpointFields {
  /** `ANY`: every method (the proxy). */
  method: Method | 'ANY';
  /** The path as OpenAPI writes it, with `{parameter}` segments. */
  path: string;
  summary: string;
  description?: string;
  /** What invalid input is called in error messages: "Invalid connection: …". */
  noun?: string;
  /** The path parameters, as one object schema. */
  params?: JsonSchema;
  /** The path parameter that takes the rest of the path, as sent (not decoded, query included). */
  rest?: string;
  /** The query parameters, as one object schema; values arrive as text and are converted to the declared types. */
  query?: JsonSchema;
  headers?: readonly HeaderParameter[];
  /** `form`: also `application/x-www-form-urlencoded`. */
  body?: { schema: JsonSchema; required: boolean; form?: boolean };
  /** Status (or `4XX`, `5XX`, `default`) → response. */
  responses: Readonly<Record<string, ResponseSpec>>;
}

/**
 * Who may call a route. `bearer`: a service token from POST /oauth/token, which must carry `scope` (one of
 * core/api/scopes.ts; a token without it is answered 403 `insufficient_scope`); `client`: the API credential itself;
 * `none`: public. Every route says its scope once, here: a bearer route without one fails type-checking.
 */
export type EndpointAccess = { auth: 'bearer'; scope: Scope } | { auth: 'client' | 'none'; scope: null };

export type Endpoint = EndpointFields & EndpointAccess;

/**
 * Every string a request carries has a length bound, declared in the schema (so the validators refuse it before
 * any use, and the OpenAPI document says it): the one an input gives itself, else these. Identifiers, names and
 * tokens are far shorter; free text rides in tool inputs, bounded by BODY_LIMIT_BYTES.
 */
export const DEFAULT_MAX_LENGTH = { params: 1024, query: 2048, body: 8192 } as const;

function boundStrings(schema: JsonSchema, max: number): JsonSchema {
  if (!schema || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  const out: Record<string, unknown> = { ...s };
  const types = Array.isArray(s.type) ? (s.type as unknown[]) : [s.type];
  if (types.includes('string') && s.maxLength === undefined && s.enum === undefined && s.const === undefined)
    out.maxLength = max;
  if (s.properties && typeof s.properties === 'object')
    out.properties = Object.fromEntries(
      Object.entries(s.properties as Record<string, JsonSchema>).map(([k, v]) => [k, boundStrings(v, max)]),
    );
  if (s.items && typeof s.items === 'object') out.items = boundStrings(s.items as JsonSchema, max);
  if (s.additionalProperties && typeof s.additionalProperties === 'object')
    out.additionalProperties = boundStrings(s.additionalProperties as JsonSchema, max);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const)
    if (Array.isArray(s[k])) out[k] = (s[k] as JsonSchema[]).map((v) => boundStrings(v, max));
  return out;
}

/** The route table with DEFAULT_MAX_LENGTH applied to every request input that declares no bound of its own. */
function boundRequestInputs<T extends Record<string, Endpoint>>(table: T): T {
  const out: Record<string, Endpoint> = {};
  for (const [id, e] of Object.entries(table)) {
    out[id] = {
      ...e,
      ...(e.params ? { params: boundStrings(e.params, DEFAULT_MAX_LENGTH.params) } : {}),
      ...(e.query ? { query: boundStrings(e.query, DEFAULT_MAX_LENGTH.query) } : {}),
      ...(e.body ? { body: { ...e.body, schema: boundStrings(e.body.schema, DEFAULT_MAX_LENGTH.body) } } : {}),
    };
  }
  return out as T;
}

const json = (schema: JsonSchema) => ({ 'application/json': schema });
const ok = (description: string, schema: JsonSchema): ResponseSpec => ({ description, content: json(schema) });
const error = (description: string): ResponseSpec => ({ description, content: json(S.errorResponse) });
const html = (description: string): ResponseSpec => ({ description, content: { 'text/html': { type: 'string' } } });
/** A browser endpoint's error: a page, or (a request it could not read) the service's error. */
const pageOrError = (description: string): ResponseSpec => ({
  description,
  content: { 'text/html': { type: 'string' }, 'application/json': S.errorResponse },
});
const object = (properties: Record<string, JsonSchema>, required = Object.keys(properties)): JsonSchema => ({
  type: 'object',
  required,
  additionalProperties: false,
  properties,
});
const pathParams = (properties: Record<string, JsonSchema>) => object(properties);
const text: JsonSchema = { type: 'string' };

const unauthorized = error('Missing, expired, revoked or invalid service token');
const internal = error('Internal error; the message quotes the request id');
const forbidden = error(
  '`insufficient_scope`: the token’s credential does not hold the scope this route needs (named in the message and ' +
    'in `details.required_scope`); or `connection_not_allowed`: the credential is restricted to other connections',
);
/** What any endpoint behind a service token may answer. */
const bearer = { '401': unauthorized, '403': forbidden, '500': internal };
/** What reading a JSON body may answer. */
const bodyErrors = {
  '400': error('Invalid input: `details` names every bad field; or the body is not valid JSON'),
  '413': error('The body is larger than BODY_LIMIT_BYTES'),
  '415': error('An unsupported body encoding or charset'),
};

const connectionParam = pathParams({ connection_name: { type: 'string', description: "The connection's name" } });
const accountParam = pathParams({ id: { type: 'string', description: "The connected account's id" } });
const connectionNotFound = error('No connection of that name');
const mcpServerParam = pathParams({ id: { type: 'string', description: "The MCP server's id" } });
const mcpServerNotFound = error('No MCP server with that id');
/** An MCP URL lives 30 days unless asked otherwise, at most a year. */
export const MCP_URL_DEFAULT_TTL = 30 * 86_400;
export const MCP_URL_MAX_TTL = 365 * 86_400;
const rpcError = (description: string): ResponseSpec => ({ description, content: json(S.jsonRpcResponse) });
/** Errors of reading the body may come in the service's shape (the bearer endpoint reads it as every API route does). */
const rpcOrServiceError = (description: string): ResponseSpec => ({
  description,
  content: json({ anyOf: [S.jsonRpcResponse, S.errorResponse] }),
});
const mcpNotAllowed: ResponseSpec = {
  ...rpcError('Method not allowed: only POST'),
  headers: { allow: { description: '`POST`', schema: text } },
};
/** What the MCP Streamable HTTP transport answers a POST. */
const mcpAnswers = {
  '200': ok('The JSON-RPC response', S.jsonRpcResponse),
  '202': { description: 'A notification or a response was accepted (no body)' },
  '400': rpcOrServiceError('Not JSON, not a JSON-RPC message, or an unsupported MCP-Protocol-Version'),
  '406': rpcError('The Accept header does not take both application/json and text/event-stream'),
  '413': rpcOrServiceError('The body is larger than BODY_LIMIT_BYTES'),
  '415': rpcOrServiceError('The body is not application/json'),
} as const;
const accountNotFound = error('No connected account with that id');
/** The same status and shape on every route that needs a connected account (docs/connect.md). */
const authorizationRequired: ResponseSpec = {
  description:
    '`authorization_required`: the end user has no usable account (missing, PENDING_AUTH, EXPIRED, DISCONNECTED) or it ' +
    'lacks the scopes the tool needs; `error.link` (until `error.link_expires_at`) lets them connect, then retry. ' +
    'Or `insufficient_scope`: the token’s credential does not hold the scope this route needs',
  content: json({ anyOf: [S.authorizationRequiredResponse, S.errorResponse] }),
};
const webhookParam = pathParams({ id: { type: 'string', description: "The webhook's id" } });
const webhookNotFound = error('No webhook with that id');
/** What a push-trigger ingress answers (docs/triggers.md, "Push triggers"). */
const ingressResponses: Readonly<Record<string, ResponseSpec>> = {
  '200': {
    description: 'Notifications verified and stored; or a validation request answered (its token, text/plain)',
    content: { 'application/json': { type: 'object' }, 'text/plain': { type: 'string' } },
  },
  '202': { description: 'Accepted: notifications whose resources are read after the answer (Graph)' },
  '400': ok('A verified body that is not JSON or not a list of notifications; or a malformed path', { type: 'object' }),
  '401': ok('Not verified: no or bad signature, stale timestamp, unknown token or instance', { type: 'object' }),
  '413': ok('The body is over TRIGGER_INGRESS_MAX_BYTES', { type: 'object' }),
  '500': internal,
};
const triggerParam = pathParams({ id: { type: 'string', maxLength: 64, description: "The trigger instance's id" } });
const triggerNotFound = error('No trigger instance with that id');

/**
 * Scalekit's AgentKit REST shape (`/api/v1/…`): bodies and answers are the snake_case JSON mapping of the
 * protobuf messages the official SDK ships (runtime/scalekit/descriptors.ts), decoded and encoded with those
 * descriptors, so their fields are not listed again here; an unknown field is refused naming it.
 */
const scalekitMessage = (name: string): JsonSchema => ({
  type: 'object',
  description: `The JSON of scalekit.v1.${name} (snake_case field names)`,
});
const scalekitBody = (name: string) => ({ required: false, schema: scalekitMessage(name) });
const scalekitErrors = {
  ...bodyErrors,
  '404': error('No connection or connected account of that name'),
  '409': error('The account is not ACTIVE, or already exists'),
  ...bearer,
};
const scalekitQuery = (properties: Record<string, JsonSchema>): JsonSchema => ({ type: 'object', properties });
const accountQuery = {
  connector: { type: 'string', description: 'The connection name' },
  identifier: { type: 'string' },
  id: { type: 'string', description: 'The connected account id' },
} as const;
const pageQuery = {
  page_size: { type: 'integer', minimum: 0, maximum: 1000, 'x-message': 'must be an integer from 0 to 1000' },
  page_token: { type: 'string' },
} as const;

export const endpoints = boundRequestInputs({
  index: {
    method: 'GET',
    path: '/',
    summary: 'Where to start: a browser goes to the dashboard; an API client gets links to the rest',
    description:
      'A request that accepts text/html (a browser) is redirected to /dashboard; anything else gets a small JSON ' +
      'index: the service, its health and readiness, the OpenAPI document, the docs and the dashboard.',
    auth: 'none',
    scope: null,
    responses: {
      '200': ok('The index', S.serviceIndex),
      '302': {
        description: 'A browser, to the dashboard',
        headers: { location: { description: 'The dashboard', schema: text } },
      },
      '500': internal,
    },
  },
  openapi: {
    method: 'GET',
    path: '/openapi.json',
    summary: 'This document: the OpenAPI 3.1 description of the HTTP API, with every tool’s input schema',
    auth: 'none',
    scope: null,
    responses: { '200': ok('The OpenAPI document', { type: 'object' }), '500': internal },
  },
  health: {
    method: 'GET',
    path: '/health',
    summary: 'Liveness: the service answers, with its store kind and tool count',
    auth: 'none',
    scope: null,
    responses: { '200': ok('Healthy', S.health), '500': internal },
  },
  ready: {
    method: 'GET',
    path: '/ready',
    summary: 'Readiness: 200 once the store answers and its migrations ran; 503 before, and while draining',
    description:
      'For a load balancer or an orchestrator: send traffic only while this answers 200. After SIGTERM it answers 503 ' +
      '(`status: draining`) while in-flight requests finish.',
    auth: 'none',
    scope: null,
    responses: {
      '200': ok('Ready', S.readiness),
      '503': ok('Not ready: starting, the store does not answer, or draining', S.readiness),
      '500': internal,
    },
  },
  metrics: {
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus metrics: requests, tool executions, upstream latency, token refreshes, accounts, webhooks',
    description:
      'The Prometheus text format. Open unless METRICS_TOKEN is set; then it needs `Authorization: Bearer <METRICS_TOKEN>` ' +
      '(its own token, not a service token).',
    auth: 'none',
    scope: null,
    responses: {
      '200': { description: 'The metrics', content: { 'text/plain': { type: 'string' } } },
      '401': error('METRICS_TOKEN is set and the request does not carry it'),
      '500': internal,
    },
  },
  issueToken: {
    method: 'POST',
    path: '/oauth/token',
    summary: 'Exchange an API credential for a short-lived service token (client_credentials grant)',
    description:
      'The credential goes as form fields, JSON fields, or HTTP Basic (RFC 6749 §2.3.1). Errors are RFC 6749 §5.2 errors, ' +
      'except those of reading the body (too large, not JSON), which have the service’s error shape.',
    auth: 'client',
    scope: null,
    body: { schema: S.tokenRequest, required: false, form: true },
    responses: {
      '200': ok('A service token', S.tokenResponse),
      '400': {
        description: 'unsupported_grant_type or invalid_request; or a body that could not be read',
        content: json({ anyOf: [S.tokenErrorResponse, S.errorResponse] }),
      },
      '401': ok('invalid_client: unknown client or wrong secret', S.tokenErrorResponse),
      '413': error('The body is larger than 16 KB'),
      '415': error('An unsupported body encoding or charset'),
      '429': {
        ...ok('slow_down: too many failed attempts; retry after Retry-After seconds', S.tokenErrorResponse),
        headers: { 'retry-after': { description: 'Seconds to wait', schema: { type: 'string' } } },
      },
      '500': internal,
    },
  },
  listConnectors: {
    method: 'GET',
    path: '/v1/connectors',
    summary: 'The connector catalogue',
    auth: 'bearer',
    scope: 'connections:read',
    responses: { '200': ok('Connectors', object({ connectors: { type: 'array', items: S.connector } })), ...bearer },
  },
  getConnector: {
    method: 'GET',
    path: '/v1/connectors/{name}',
    summary: 'One connector, with its tool names',
    auth: 'bearer',
    scope: 'connections:read',
    params: pathParams({ name: { type: 'string', description: 'The connector, e.g. `mail`' } }),
    responses: { '200': ok('Connector', S.connector), '404': error('No connector of that name'), ...bearer },
  },
  listTools: {
    method: 'GET',
    path: '/v1/tools',
    summary: 'Tools with their input JSON Schemas, or as LLM tool definitions (OpenAI, Anthropic, Gemini, MCP)',
    description:
      'Without `format`, each tool with its JSON Schema and metadata. With `format`, the tools in that vendor’s own ' +
      'tool-definition shape, ready to hand to its SDK as they are: `openai` (Chat Completions function tools; ' +
      '`api=responses` for the Responses API’s flat shape), `openai-strict` (or `format=openai&strict=true`: strict ' +
      'mode, every property required, optional ones nullable), `anthropic` (`name`, `description`, `input_schema`), ' +
      '`gemini` (one Tool with `functionDeclarations`, in Gemini’s OpenAPI subset), `mcp` (MCP `Tool` objects). ' +
      'Filters combine: `connector`, `names` (exact tool names), `connection_names` (the tools of those connections’ ' +
      'connectors) and `identifier` (only tools whose connection has an ACTIVE account for that end user). ' +
      'Send a model’s arguments back with `POST /v1/tools/execute` and the same `input_format`.',
    auth: 'bearer',
    scope: 'tools:execute',
    noun: 'query',
    query: {
      type: 'object',
      properties: {
        connector: { type: 'string', description: "Only this connector's tools" },
        format: {
          enum: [...S.LLM_TOOL_FORMATS, ''],
          description: 'The LLM vendor shape to answer in; left out, the service’s own tool view',
          'x-message': `must be one of: ${S.LLM_TOOL_FORMATS.join(', ')}`,
        },
        strict: {
          type: 'boolean',
          description: 'With format=openai: strict mode (the same as format=openai-strict)',
          'x-message': 'must be true or false',
        },
        api: {
          enum: ['chat', 'responses', ''],
          description: 'With an OpenAI format: the Chat Completions shape (default) or the Responses API’s',
          'x-message': 'must be one of: chat, responses',
        },
        names: {
          type: 'string',
          description: 'Only these tools: a comma-separated list of tool names (an unknown one is a 400)',
        },
        connection_names: {
          type: 'string',
          description: "Only the tools of these connections' connectors: a comma-separated list of connection names",
        },
        identifier: {
          ...S.identifier,
          description: 'Only the tools whose connection has an ACTIVE connected account for this end user',
        },
        granted_scopes_only: {
          type: 'boolean',
          description:
            "With identifier: only the tools the account's granted OAuth scopes allow (a tool left out would answer authorization_required asking for more)",
          'x-message': 'must be true or false',
        },
      },
    },
    responses: {
      '200': ok('Tools', {
        anyOf: [
          object({ tools: { type: 'array', items: S.tool }, count: { type: 'integer' } }),
          S.llmToolList(
            { enum: ['openai', 'openai-strict'] },
            S.openaiTool,
            'format=openai or openai-strict: OpenAI Chat Completions function tools',
            { api: { const: 'chat' } },
          ),
          S.llmToolList(
            { enum: ['openai', 'openai-strict'] },
            S.openaiResponsesTool,
            'format=openai or openai-strict with api=responses: OpenAI Responses API function tools',
            { api: { const: 'responses' } },
          ),
          S.llmToolList({ const: 'anthropic' }, S.anthropicTool, 'format=anthropic: Anthropic tools'),
          S.llmToolList(
            { const: 'gemini' },
            S.geminiTool,
            'format=gemini: one Gemini Tool with every function declaration (none when no tool is left)',
          ),
          S.llmToolList({ const: 'mcp' }, S.mcpTool, 'format=mcp: MCP Tool objects'),
        ],
      }),
      '400': error(
        'An unknown connector, tool name or connection name (with suggestions), a bad format, or a parameter given twice',
      ),
      ...bearer,
    },
  },
  searchTools: {
    method: 'GET',
    path: '/v1/tools/search',
    summary: 'The tools that fit a task described in plain words, best first',
    description:
      'Ranks every tool by relevance to a task such as “reply to the customer’s ticket saying we fixed it”: ' +
      'BM25+ with field boosts, prefix and fuzzy matching over each tool’s name, title, description, parameters, ' +
      'connector and keywords. Fewer than `limit` tools come back when fewer match at all.',
    auth: 'bearer',
    scope: 'tools:execute',
    noun: 'search',
    query: {
      type: 'object',
      required: ['q'],
      properties: {
        q: S.requiredText({ maxLength: 1000, description: 'The task, in natural language (at most 1,000 characters)' }),
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          default: 5,
          description: 'At most this many tools (all tools when it is more than there are)',
          'x-message': 'must be an integer from 1 to 1000',
        },
        connector: { type: 'string', description: "Only this connector's tools" },
      },
    },
    responses: {
      '200': ok('Matching tools, best first', object({ tools: { type: 'array', items: S.toolSearchHit } })),
      '400': error('An empty query, a bad limit, an unknown connector, or a parameter given twice'),
      ...bearer,
    },
  },
  getTool: {
    method: 'GET',
    path: '/v1/tools/{tool_name}',
    summary: 'One tool with its input JSON Schema',
    auth: 'bearer',
    scope: 'tools:execute',
    params: pathParams({ tool_name: { type: 'string' } }),
    responses: { '200': ok('Tool', S.tool), '404': error('No tool of that name'), ...bearer },
  },
  executeTool: {
    method: 'POST',
    path: '/v1/tools/execute',
    summary: 'Execute a named tool for a connected account',
    description:
      'The account is given by `connected_account_id`, or by `connection_name` and `identifier`, or by `identifier` ' +
      'alone: the account of that end user on the connection of the tool’s connector (if several connections ' +
      'qualify, the one with an ACTIVE account; still several: 400, give `connection_name`). With `dry_run`, ' +
      'nothing is sent: `data.requests` holds the upstream requests the tool would send, credentials redacted. ' +
      "A provider's refusal keeps the provider's status, with `code: provider_error` and the header `x-error-source: provider`.",
    auth: 'bearer',
    scope: 'tools:execute',
    noun: 'tool execution',
    body: {
      required: true,
      schema: object(
        {
          tool_name: S.requiredText({ maxLength: 200 }),
          tool_input: S.orNull({ type: 'object', description: "The tool's input (see the tool's input_schema)" }),
          connected_account_id: S.orNull({ type: 'string', maxLength: 200 }),
          connection_name: S.orNull({ type: 'string', maxLength: 200 }),
          identifier: S.orNull({ type: 'string', maxLength: 255 }),
          dry_run: S.orNull({ type: 'boolean', default: false }),
          input_format: {
            enum: [...S.LLM_TOOL_FORMATS, null],
            description:
              'The tool format the model was given (`GET /v1/tools?format=`), to read its arguments back: ' +
              '`openai-strict` drops the nulls strict mode sends for optional fields and parses objects sent as ' +
              'JSON text; `gemini` also restores renamed parameters. The result is then validated as any input.',
            'x-message': `must be one of: ${S.LLM_TOOL_FORMATS.join(', ')}`,
          },
        },
        ['tool_name'],
      ),
    },
    responses: {
      '200': ok('The provider payload in `data`', S.executeResponse),
      ...bodyErrors,
      '4XX': {
        description:
          "The service's error (404 unknown tool or connection, or an account given by id that does not exist; 409 account waiting for its user verification or its credentials unreadable), or the provider's refusal",
        content: json({ anyOf: [S.errorResponse, S.providerErrorResponse] }),
      },
      '5XX': {
        description:
          "The provider's error, or the service's: provider unreachable (502), timed out (504), answered malformed data (502)",
        content: json({ anyOf: [S.errorResponse, S.providerErrorResponse] }),
      },
      ...bearer,
      '403': authorizationRequired,
    },
  },
  listConnections: {
    method: 'GET',
    path: '/v1/connections',
    summary: 'Connections (one per provider app)',
    auth: 'bearer',
    scope: 'connections:read',
    responses: {
      '200': ok('Connections', object({ connections: { type: 'array', items: S.connection } })),
      ...bearer,
    },
  },
  createConnection: {
    method: 'POST',
    path: '/v1/connections',
    summary: 'Create a connection',
    auth: 'bearer',
    scope: 'connections:write',
    noun: 'connection',
    body: { schema: S.connectionCreate, required: true },
    responses: {
      '201': ok('Created', S.connection),
      ...bodyErrors,
      '409': error('A connection of that name exists'),
      ...bearer,
    },
  },
  getConnection: {
    method: 'GET',
    path: '/v1/connections/{connection_name}',
    summary: 'One connection, with its account count',
    auth: 'bearer',
    scope: 'connections:read',
    params: connectionParam,
    responses: { '200': ok('Connection', S.connection), '404': connectionNotFound, ...bearer },
  },
  updateConnection: {
    method: 'PATCH',
    path: '/v1/connections/{connection_name}',
    summary: 'Update a connection (only the fields given change)',
    auth: 'bearer',
    scope: 'connections:write',
    noun: 'connection update',
    params: connectionParam,
    body: { schema: S.connectionUpdate, required: true },
    responses: { '200': ok('Updated', S.connection), ...bodyErrors, '404': connectionNotFound, ...bearer },
  },
  deleteConnection: {
    method: 'DELETE',
    path: '/v1/connections/{connection_name}',
    summary: 'Delete a connection and its connected accounts',
    description:
      'The connection is gone for every caller at once, and its name is free for a new connection. Its accounts are ' +
      'deleted in batches, each reported by a `connected_account.deleted` event: a connection with few accounts is ' +
      'gone when the answer comes (200, `status: done`); with more, the answer comes at once (202, `status: ' +
      'running`) and the rest goes on in the background, resumed after a restart, its progress at the `Location` ' +
      'given.',
    auth: 'bearer',
    scope: 'connections:write',
    params: connectionParam,
    responses: {
      '200': {
        ...ok('Deleted, with every account', S.connectionDeletion),
        headers: { location: { description: 'Where the deletion can be read', schema: text } },
      },
      '202': {
        ...ok('Deleting: the accounts are being deleted in the background', S.connectionDeletion),
        headers: { location: { description: 'Where its progress can be read', schema: text } },
      },
      '404': connectionNotFound,
      ...bearer,
    },
  },
  getConnectionDeletion: {
    method: 'GET',
    path: '/v1/connection-deletions/{id}',
    summary: "A connection delete's progress",
    auth: 'bearer',
    scope: 'connections:read',
    params: pathParams({ id: { type: 'string', description: 'The `id` the delete answered with' } }),
    responses: {
      '200': ok('The deletion', S.connectionDeletion),
      '404': error('No deletion with that id'),
      ...bearer,
    },
  },
  listConnectedAccounts: {
    method: 'GET',
    path: '/v1/connected-accounts',
    summary: 'Connected accounts, newest first, a page at a time',
    auth: 'bearer',
    scope: 'accounts:read',
    noun: 'query',
    query: {
      type: 'object',
      properties: {
        connection_name: { type: 'string' },
        identifier: { type: 'string' },
        status: {
          enum: [...S.ACCOUNT_STATUSES, ''],
          'x-message': `must be one of: ${S.ACCOUNT_STATUSES.join(', ')}`,
        },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          default: 100,
          'x-message': 'must be an integer from 1 to 1000',
        },
        cursor: { type: 'string', description: '`next_cursor` of the previous page' },
      },
    },
    responses: {
      '200': ok(
        'A page of accounts',
        object({
          connected_accounts: { type: 'array', items: S.connectedAccount },
          next_cursor: { type: ['string', 'null'], description: 'null on the last page' },
        }),
      ),
      '400': error('A bad limit, status or cursor, or a parameter given twice'),
      '404': connectionNotFound,
      ...bearer,
    },
  },
  getOrCreateConnectedAccount: {
    method: 'POST',
    path: '/v1/connected-accounts',
    summary: 'Get or create a connected account by (connection_name, identifier)',
    auth: 'bearer',
    scope: 'accounts:write',
    noun: 'connected account',
    body: {
      required: true,
      schema: object({ connection_name: S.requiredText(), identifier: S.identifier }),
    },
    responses: {
      '200': ok('It existed', object({ connected_account: S.connectedAccount, created: { const: false } })),
      '201': ok('Created (PENDING_AUTH)', object({ connected_account: S.connectedAccount, created: { const: true } })),
      ...bodyErrors,
      '404': connectionNotFound,
      ...bearer,
    },
  },
  upsertConnectedAccount: {
    method: 'PUT',
    path: '/v1/connected-accounts',
    summary: 'Store credentials on a connected account (created if need be) and make it ACTIVE',
    description:
      'Key-type connectors take the fields their spec declares; OAuth connectors take existing tokens (access_token, refresh_token, expires_in or expires_at). With `verify`, the provider is asked first and nothing is saved if it refuses.',
    auth: 'bearer',
    scope: 'accounts:write',
    noun: 'connected account upsert',
    body: {
      required: true,
      schema: object(
        {
          connection_name: S.requiredText(),
          identifier: S.identifier,
          credentials: { type: 'object', description: "The connector's credential fields, or OAuth tokens" },
          verify: S.orNull({ type: 'boolean', default: false }),
          auth_kind: S.orNull({
            type: 'string',
            maxLength: 64,
            description:
              "A connection with several auth kinds (`auth_kinds`): which one the credentials are of; inferred from the credentials' fields when left out",
          }),
        },
        ['connection_name', 'identifier', 'credentials'],
      ),
    },
    responses: {
      '200': ok('Saved', S.accountEnvelope),
      ...bodyErrors,
      '404': connectionNotFound,
      '502': error('verify: the provider could not be asked; nothing was saved'),
      ...bearer,
    },
  },
  createAuthorizationLink: {
    method: 'POST',
    path: '/v1/connected-accounts/authorization-link',
    summary: 'Create an authorization link for (connection_name, identifier), for the user to open',
    auth: 'bearer',
    scope: 'links:create',
    noun: 'authorization link request',
    body: {
      required: true,
      schema: object(
        {
          connection_name: S.requiredText(),
          identifier: S.identifier,
          redirect_url: S.orNull({
            type: 'string',
            maxLength: 2048,
            description: "Where the user lands after authorizing; its origin must be the service's or allowed",
          }),
          user_verify_url: S.orNull({
            type: 'string',
            maxLength: 2048,
            description:
              "Where the user's browser goes after authorizing, with `auth_request_id`: your application checks that the signed-in user is the identifier and calls POST /v1/connected-accounts/verify; until then the account is PENDING_VERIFICATION. Its origin must be the service's or allowed",
          }),
          tools: S.orNull({
            type: 'array',
            maxItems: 200,
            items: { type: 'string', maxLength: 200 },
            description:
              "OAuth: the tools the user connects for; the link asks for exactly their scopes and the connector's base scopes (least privilege). Absent: the connection's scopes",
          }),
        },
        ['connection_name', 'identifier'],
      ),
    },
    responses: {
      '200': ok(
        'Link',
        object({ link: text, expires_at: { type: 'string', format: 'date-time' }, connected_account_id: text }),
      ),
      ...bodyErrors,
      '404': connectionNotFound,
      '409': error('The OAuth connection has no client_id and client_secret yet'),
      '502': error("The MCP server's authorization server could not be discovered"),
      ...bearer,
    },
  },
  verifyConnectedAccountUser: {
    method: 'POST',
    path: '/v1/connected-accounts/verify',
    summary: 'Confirm the user of an authorization started with a user_verify_url: the account becomes ACTIVE',
    description:
      "Send the `auth_request_id` your user_verify_url received and the identifier of the user signed in to your application. The request is single-use: an unknown, expired or used one is refused, and so is an identifier other than the account's (which also discards that authorization).",
    auth: 'bearer',
    scope: 'links:create',
    noun: 'verification',
    body: {
      required: true,
      schema: object({ auth_request_id: S.requiredText(), identifier: S.identifier }),
    },
    responses: {
      '200': ok('Verified: the account is ACTIVE', S.accountEnvelope),
      ...bodyErrors,
      '404': error('No pending verification with this auth_request_id (unknown, expired or used)'),
      '409': error('The account no longer waits for a verification'),
      ...bearer,
      '403': error(
        "The identifier is not the account's (the authorization is discarded); or the token lacks the scope (`insufficient_scope`)",
      ),
    },
  },
  getConnectedAccount: {
    method: 'GET',
    path: '/v1/connected-accounts/{id}',
    summary: 'One connected account',
    auth: 'bearer',
    scope: 'accounts:read',
    params: accountParam,
    responses: { '200': ok('Account', S.accountEnvelope), '404': accountNotFound, ...bearer },
  },
  disconnectConnectedAccount: {
    method: 'POST',
    path: '/v1/connected-accounts/{id}/disconnect',
    summary: 'Forget the credentials of a connected account and mark it DISCONNECTED',
    auth: 'bearer',
    scope: 'accounts:write',
    params: accountParam,
    responses: { '200': ok('Disconnected', S.accountEnvelope), '404': accountNotFound, ...bearer },
  },
  deleteConnectedAccount: {
    method: 'DELETE',
    path: '/v1/connected-accounts/{id}',
    summary: 'Delete a connected account',
    auth: 'bearer',
    scope: 'accounts:write',
    params: accountParam,
    responses: {
      '200': ok('Deleted', object({ deleted: { const: true }, id: text })),
      '404': accountNotFound,
      ...bearer,
    },
  },
  listApiCredentials: {
    method: 'GET',
    path: '/v1/api-credentials',
    summary: 'API credentials (never their secrets)',
    auth: 'bearer',
    scope: 'credentials:admin',
    responses: {
      '200': ok('Credentials', object({ api_credentials: { type: 'array', items: S.apiCredential } })),
      ...bearer,
    },
  },
  createApiCredential: {
    method: 'POST',
    path: '/v1/api-credentials',
    summary: 'Create an API credential; its client secret is in this answer only',
    auth: 'bearer',
    scope: 'credentials:admin',
    noun: 'API credential',
    description:
      'The new credential holds the scopes given (at most those of the credential that creates it: a scope it does not ' +
      'hold is refused with 403 `insufficient_scope`), and may be restricted to named connections (again within the ' +
      "creator's own). Without `scopes`, it holds the creator's.",
    body: {
      required: false,
      schema: object(
        {
          name: S.orNull({ type: 'string', maxLength: 200 }),
          scopes: S.orNull(S.credentialScopes),
          connection_names: S.credentialConnections,
        },
        [],
      ),
    },
    responses: {
      '201': ok(
        'Created',
        object({
          id: text,
          client_id: text,
          client_secret: { type: 'string', description: 'Shown once' },
          name: text,
          scopes: S.credentialScopes,
          connection_names: S.credentialConnections,
        }),
      ),
      ...bodyErrors,
      ...bearer,
      '403': error(
        'The token lacks `credentials:admin`, or asks for a scope or connection its own credential does not hold (`insufficient_scope`)',
      ),
    },
  },
  revokeApiCredential: {
    method: 'DELETE',
    path: '/v1/api-credentials/{id}',
    summary: 'Revoke an API credential: its service tokens stop working at once',
    auth: 'bearer',
    scope: 'credentials:admin',
    params: pathParams({ id: { type: 'string', description: "The credential's id" } }),
    responses: {
      '200': ok('Revoked', object({ revoked: { const: true }, id: text })),
      '404': error('No active credential with that id'),
      ...bearer,
    },
  },
  listAuditEvents: {
    method: 'GET',
    path: '/v1/audit-events',
    summary: 'The audit log, newest first: who changed what, when and from where',
    description:
      'Every change to connections, accounts, API credentials, webhooks and MCP servers, every dashboard sign-in ' +
      '(success or failure) and every completed authorization link, with its actor, source address and request id. ' +
      'Filters combine; `next_cursor` pages on. Entries are hash-chained: `npm run keys -- verify-audit` checks them.',
    auth: 'bearer',
    scope: 'audit:read',
    noun: 'query',
    query: {
      type: 'object',
      properties: {
        actor: { type: 'string', maxLength: 200, description: 'Only this actor (a credential id, a dashboard user)' },
        action: { type: 'string', maxLength: 100, description: 'Only this action, e.g. `connection.update`' },
        target: { type: 'string', maxLength: 500, description: 'Only this target (a connection name, an id)' },
        from: { type: 'string', maxLength: 40, description: 'From this time (inclusive), ISO 8601' },
        to: { type: 'string', maxLength: 40, description: 'Before this time, ISO 8601' },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          default: 100,
          'x-message': 'must be an integer from 1 to 1000',
        },
        cursor: { type: 'string', maxLength: 20, description: '`next_cursor` of the previous page' },
      },
    },
    responses: {
      '200': ok(
        'A page of entries',
        object({
          audit_events: { type: 'array', items: S.auditEvent },
          next_cursor: { type: ['string', 'null'], description: 'null on the last page' },
        }),
      ),
      '400': error('A bad filter, limit or cursor'),
      ...bearer,
    },
  },
  exportAuditEvents: {
    method: 'GET',
    path: '/v1/audit-events/export',
    summary: 'The audit log as JSON lines, oldest first (the same filters), for a log store or an archive',
    auth: 'bearer',
    scope: 'audit:read',
    noun: 'query',
    query: {
      type: 'object',
      properties: {
        actor: { type: 'string', maxLength: 200 },
        action: { type: 'string', maxLength: 100 },
        target: { type: 'string', maxLength: 500 },
        from: { type: 'string', maxLength: 40 },
        to: { type: 'string', maxLength: 40 },
      },
    },
    responses: {
      '200': {
        description: 'One audit entry (the shape of GET /v1/audit-events) per line, streamed',
        content: { 'application/x-ndjson': { type: 'string' } },
      },
      '400': error('A bad filter'),
      ...bearer,
    },
  },
  listMcpServers: {
    method: 'GET',
    path: '/v1/mcp-servers',
    summary: 'MCP server configurations',
    auth: 'bearer',
    scope: 'mcp:admin',
    responses: {
      '200': ok('MCP servers', object({ mcp_servers: { type: 'array', items: S.mcpServer } })),
      ...bearer,
    },
  },
  createMcpServer: {
    method: 'POST',
    path: '/v1/mcp-servers',
    summary: 'Create an MCP server configuration: the tools it exposes (by name, or every tool of some connections)',
    auth: 'bearer',
    scope: 'mcp:admin',
    noun: 'MCP server',
    body: { schema: S.mcpServerCreate, required: true },
    responses: {
      '201': ok('Created', S.mcpServer),
      ...bodyErrors,
      '409': error('An MCP server of that name exists'),
      ...bearer,
    },
  },
  getMcpServer: {
    method: 'GET',
    path: '/v1/mcp-servers/{id}',
    summary: 'One MCP server configuration',
    auth: 'bearer',
    scope: 'mcp:admin',
    params: mcpServerParam,
    responses: { '200': ok('MCP server', S.mcpServer), '404': mcpServerNotFound, ...bearer },
  },
  updateMcpServer: {
    method: 'PATCH',
    path: '/v1/mcp-servers/{id}',
    summary: 'Update an MCP server configuration (only the fields given change)',
    auth: 'bearer',
    scope: 'mcp:admin',
    noun: 'MCP server update',
    params: mcpServerParam,
    body: { schema: S.mcpServerUpdate, required: true },
    responses: {
      '200': ok('Updated', S.mcpServer),
      ...bodyErrors,
      '404': mcpServerNotFound,
      '409': error('Another MCP server has that name'),
      ...bearer,
    },
  },
  deleteMcpServer: {
    method: 'DELETE',
    path: '/v1/mcp-servers/{id}',
    summary: 'Delete an MCP server configuration and its URLs (they stop working at once)',
    auth: 'bearer',
    scope: 'mcp:admin',
    params: mcpServerParam,
    responses: {
      '200': ok('Deleted', object({ deleted: { const: true }, id: text })),
      '404': mcpServerNotFound,
      ...bearer,
    },
  },
  createMcpUrl: {
    method: 'POST',
    path: '/v1/mcp-servers/{id}/urls',
    summary: 'Make an MCP URL for one end user; the URL is in this answer only',
    description:
      'The URL carries a random token (only its hash is stored), scoped to this server and this identifier. An MCP client ' +
      '(Claude Desktop, Cursor, the MCP Inspector, the OpenAI Agents SDK) uses it as it is, with no other credential.',
    auth: 'bearer',
    scope: 'mcp:admin',
    noun: 'MCP URL',
    params: mcpServerParam,
    body: {
      required: true,
      schema: object(
        {
          identifier: S.identifier,
          expires_in: S.orNull({
            type: 'integer',
            minimum: 60,
            maximum: MCP_URL_MAX_TTL,
            default: MCP_URL_DEFAULT_TTL,
            description: `Seconds until the URL stops working (default ${MCP_URL_DEFAULT_TTL}: 30 days; at most one year)`,
            'x-message': `must be a whole number of seconds from 60 to ${MCP_URL_MAX_TTL}`,
          }),
        },
        ['identifier'],
      ),
    },
    responses: {
      '201': ok(
        'Created',
        object({
          id: text,
          url: { type: 'string', description: 'Shown once: the MCP endpoint for this end user' },
          identifier: text,
          expires_at: { type: 'string', format: 'date-time' },
        }),
      ),
      ...bodyErrors,
      '404': mcpServerNotFound,
      ...bearer,
    },
  },
  listMcpUrls: {
    method: 'GET',
    path: '/v1/mcp-servers/{id}/urls',
    summary: "An MCP server's URLs, newest first (never their tokens)",
    auth: 'bearer',
    scope: 'mcp:admin',
    params: mcpServerParam,
    responses: {
      '200': ok('URLs', object({ urls: { type: 'array', items: S.mcpUrl } })),
      '404': mcpServerNotFound,
      ...bearer,
    },
  },
  revokeMcpUrl: {
    method: 'DELETE',
    path: '/v1/mcp-servers/{id}/urls/{url_id}',
    summary: 'Revoke an MCP URL: it stops working at once',
    auth: 'bearer',
    scope: 'mcp:admin',
    params: pathParams({ id: text, url_id: { type: 'string', description: "The URL's id" } }),
    responses: {
      '200': ok('Revoked', object({ revoked: { const: true }, id: text })),
      '404': error('No such MCP server, or no URL of it with that id that is not revoked yet'),
      ...bearer,
    },
  },
  mcpServerPost: {
    method: 'POST',
    path: '/v1/mcp-servers/{id}/mcp',
    summary:
      'The MCP endpoint (Streamable HTTP, stateless) for server-side agents: bearer token + end user in a header',
    description:
      'A JSON-RPC message per request, as the MCP Streamable HTTP transport sends it: protocol revision 2026-07-28 ' +
      '(stateless, `server/discover`, per-request `_meta`), and 2025-11-25 and earlier through the initialize ' +
      'handshake; answered in JSON. No session: any instance answers any request.',
    auth: 'bearer',
    scope: 'tools:execute',
    params: mcpServerParam,
    headers: [
      { name: 'x-identifier', required: true, description: 'The end user the tools run for (or `identifier`)' },
      { name: 'mcp-protocol-version', required: false, description: 'The negotiated MCP protocol revision' },
    ],
    responses: { ...mcpAnswers, '404': error('No MCP server with that id'), ...bearer },
  },
  mcpServerGet: {
    method: 'GET',
    path: '/v1/mcp-servers/{id}/mcp',
    summary: 'No server-sent event stream: this MCP server is stateless (405, as the transport specifies)',
    auth: 'bearer',
    scope: 'tools:execute',
    params: mcpServerParam,
    responses: { '405': mcpNotAllowed, '404': mcpServerNotFound, ...bearer },
  },
  mcpServerDelete: {
    method: 'DELETE',
    path: '/v1/mcp-servers/{id}/mcp',
    summary: 'No session to end: this MCP server is stateless (405, as the transport specifies)',
    auth: 'bearer',
    scope: 'tools:execute',
    params: mcpServerParam,
    responses: { '405': mcpNotAllowed, '404': mcpServerNotFound, ...bearer },
  },
  mcpUrlPost: {
    method: 'POST',
    path: '/mcp/{token}',
    summary: "An end user's MCP endpoint (Streamable HTTP, stateless), as made by POST /v1/mcp-servers/{id}/urls",
    description:
      'The token in the path is the credential: scoped to one MCP server and one identifier, revocable and expiring.',
    auth: 'none',
    scope: null,
    params: pathParams({ token: { type: 'string', description: "The URL's token" } }),
    headers: [
      { name: 'mcp-protocol-version', required: false, description: 'The MCP protocol revision' },
      {
        name: 'mcp-method',
        required: false,
        description: 'The JSON-RPC method (2026-07-28; checked against the body)',
      },
      { name: 'mcp-name', required: false, description: 'The tool, prompt or resource named (2026-07-28; checked)' },
    ],
    responses: {
      ...mcpAnswers,
      '401': rpcError('A revoked or expired URL'),
      '403': rpcError('The Host or Origin header names another site than PUBLIC_URL (DNS rebinding)'),
      '404': rpcError('No such URL'),
      '500': rpcError('Internal error'),
    },
  },
  mcpUrlGet: {
    method: 'GET',
    path: '/mcp/{token}',
    summary: 'No server-sent event stream: this MCP server is stateless (405, as the transport specifies)',
    auth: 'none',
    scope: null,
    params: pathParams({ token: text }),
    responses: { '405': mcpNotAllowed },
  },
  mcpUrlDelete: {
    method: 'DELETE',
    path: '/mcp/{token}',
    summary: 'No session to end: this MCP server is stateless (405, as the transport specifies)',
    auth: 'none',
    scope: null,
    params: pathParams({ token: text }),
    responses: { '405': mcpNotAllowed },
  },
  // --- The OAuth-protected MCP endpoint (issue 39, docs/mcp.md "OAuth") ---
  mcpOAuthPost: {
    method: 'POST',
    path: '/mcp/oauth/{server_id}',
    summary: "An MCP server's OAuth-protected endpoint (Streamable HTTP, stateless): its `oauth_url`",
    description:
      "The credential is an access token from the service's authorization server (Authorization: Bearer), issued for " +
      'this URL as its resource (RFC 8707) to an end user who signed in at the identity provider and consented. ' +
      'Without one: 401 with `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728).',
    auth: 'none',
    scope: null,
    params: pathParams({ server_id: { type: 'string', description: "The MCP server's id" } }),
    headers: [
      { name: 'authorization', required: true, description: '`Bearer` and the access token' },
      { name: 'mcp-protocol-version', required: false, description: 'The MCP protocol revision' },
    ],
    responses: {
      ...mcpAnswers,
      '401': {
        ...rpcError('No token, or an unknown, expired, revoked or foreign one (`error="invalid_token"`)'),
        headers: {
          'www-authenticate': {
            description: '`Bearer` with `resource_metadata` (and `error="invalid_token"` for a bad token)',
            schema: text,
          },
        },
      },
      '403': rpcError('The Host or Origin header names another site than PUBLIC_URL (DNS rebinding)'),
      '404': rpcError('No MCP server with that id'),
      '500': rpcError('Internal error'),
    },
  },
  mcpOAuthGet: {
    method: 'GET',
    path: '/mcp/oauth/{server_id}',
    summary: 'No server-sent event stream: this MCP server is stateless (405, as the transport specifies)',
    auth: 'none',
    scope: null,
    params: pathParams({ server_id: text }),
    responses: { '405': mcpNotAllowed },
  },
  mcpOAuthDelete: {
    method: 'DELETE',
    path: '/mcp/oauth/{server_id}',
    summary: 'No session to end: this MCP server is stateless (405, as the transport specifies)',
    auth: 'none',
    scope: null,
    params: pathParams({ server_id: text }),
    responses: { '405': mcpNotAllowed },
  },
  mcpProtectedResourceMetadata: {
    method: 'GET',
    path: '/.well-known/oauth-protected-resource/mcp/oauth/{server_id}',
    summary: "OAuth 2.0 Protected Resource Metadata (RFC 9728) of an MCP server's OAuth-protected endpoint",
    auth: 'none',
    scope: null,
    params: pathParams({ server_id: text }),
    responses: {
      '200': ok(
        'The metadata',
        object({
          resource: text,
          authorization_servers: { type: 'array', items: text },
          scopes_supported: { type: 'array', items: text },
          bearer_methods_supported: { type: 'array', items: text },
          resource_name: text,
        }),
      ),
      '404': error('No MCP server with that id'),
    },
  },
  mcpAuthorizationServerMetadata: {
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    summary: "OAuth 2.0 Authorization Server Metadata (RFC 8414) of the service's authorization server for MCP clients",
    auth: 'none',
    scope: null,
    responses: { '200': ok('The metadata', { type: 'object', required: ['issuer'] }) },
  },
  mcpOAuthAuthorize: {
    method: 'GET',
    path: '/oauth/mcp/authorize',
    summary:
      "The MCP authorization server's authorization endpoint: sends the browser to sign in at the identity provider",
    description:
      "Authorization code with PKCE S256 (required) and an RFC 8707 `resource` (required: an MCP server's oauth_url). " +
      'Errors after the client and redirect URI are known go back to the client with `iss` (RFC 9207).',
    auth: 'none',
    scope: null,
    query: {
      type: 'object',
      properties: {
        response_type: text,
        client_id: { type: 'string', maxLength: 2048 },
        redirect_uri: { type: 'string', maxLength: 2048 },
        state: { type: 'string', maxLength: 1024 },
        scope: { type: 'string', maxLength: 200 },
        code_challenge: { type: 'string', maxLength: 128 },
        code_challenge_method: { type: 'string', maxLength: 16 },
        resource: { type: 'string', maxLength: 2048 },
      },
    },
    responses: {
      '302': {
        description: "To the identity provider's sign-in; or back to the client with an error, `state` and `iss`",
        headers: { location: { description: 'Where the browser goes', schema: text } },
      },
      '4XX': pageOrError('An unknown client, or a redirect URI it did not register'),
    },
  },
  mcpOAuthCallback: {
    method: 'GET',
    path: '/oauth/mcp/callback',
    summary: "The identity provider's redirect target: signs the end user in and shows the consent page",
    description:
      'The redirect URI to register at the identity provider (OpenID Connect) for MCP sign-ins: `{PUBLIC_URL}/oauth/mcp/callback`.',
    auth: 'none',
    scope: null,
    responses: {
      '200': html('The consent page: the MCP server, the signed-in identifier, the tools'),
      '302': {
        description: 'Back to the client with `error` (the user refused at the identity provider), `state` and `iss`',
        headers: { location: { description: 'Where the browser goes', schema: text } },
      },
      '4XX': pageOrError("No sign-in in progress in this browser, or the identity provider's answer was not valid"),
    },
  },
  mcpOAuthConsent: {
    method: 'POST',
    path: '/oauth/mcp/consent',
    summary: "The consent page's form: a code (allow) or access_denied, back to the client",
    auth: 'none',
    scope: null,
    body: {
      required: true,
      form: true,
      schema: {
        type: 'object',
        properties: {
          csrf: { type: 'string', maxLength: 100, description: 'The CSRF token the page put in the form' },
          decision: { type: 'string', maxLength: 10, description: '`allow` or `deny`' },
        },
      },
    },
    responses: {
      '303': {
        description: 'Back to the client with `code` (or `error=access_denied`), `state` and `iss` (RFC 9207)',
        headers: { location: { description: 'Where the browser goes', schema: text } },
      },
      '403': html('The CSRF token does not match'),
      '4XX': pageOrError('No signed-in authorization in progress, or already answered'),
    },
  },
  mcpOAuthToken: {
    method: 'POST',
    path: '/oauth/mcp/token',
    summary: "The MCP authorization server's token endpoint: authorization_code (PKCE) and refresh_token (rotated)",
    auth: 'none',
    scope: null,
    body: {
      required: true,
      form: true,
      schema: {
        type: 'object',
        properties: {
          grant_type: text,
          client_id: { type: 'string', maxLength: 2048 },
          code: { type: 'string', maxLength: 200 },
          code_verifier: { type: 'string', maxLength: 200 },
          redirect_uri: { type: 'string', maxLength: 2048 },
          refresh_token: { type: 'string', maxLength: 200 },
          resource: { type: 'string', maxLength: 2048 },
          scope: { type: 'string', maxLength: 200 },
        },
      },
    },
    responses: {
      '200': ok(
        'Tokens',
        object({
          access_token: text,
          token_type: { const: 'Bearer' },
          expires_in: { type: 'integer' },
          refresh_token: text,
          scope: text,
        }),
      ),
      '400': ok('An RFC 6749 §5.2 error (invalid_grant, invalid_request, invalid_target…)', S.oauthErrorResponse),
      '401': ok(
        'invalid_client: an unknown client, or a metadata document that could not be used',
        S.oauthErrorResponse,
      ),
    },
  },
  mcpOAuthRevoke: {
    method: 'POST',
    path: '/oauth/mcp/revoke',
    summary: 'Token revocation (RFC 7009): an access or refresh token revokes its whole grant',
    auth: 'none',
    scope: null,
    body: {
      required: true,
      form: true,
      schema: {
        type: 'object',
        properties: {
          token: { type: 'string', maxLength: 200 },
          token_type_hint: { type: 'string', maxLength: 20 },
          client_id: { type: 'string', maxLength: 2048 },
        },
      },
    },
    responses: {
      '200': { description: 'Revoked (also for a token that is unknown, as RFC 7009 asks)' },
      '400': ok('invalid_request', S.oauthErrorResponse),
      '401': ok('invalid_client', S.oauthErrorResponse),
    },
  },
  mcpOAuthRegister: {
    method: 'POST',
    path: '/oauth/mcp/register',
    summary: 'Dynamic Client Registration (RFC 7591) for MCP clients that do not use a Client ID Metadata Document',
    description:
      'Public clients only (`token_endpoint_auth_method: none`). `application_type` `web` takes https redirect URIs; ' +
      '`native` also http on a loopback address and private-use schemes. Without it: `native` when every redirect ' +
      'URI is a native one.',
    auth: 'none',
    scope: null,
    body: { required: true, form: true, schema: { type: 'object' } },
    responses: {
      '201': ok('The registered client', { type: 'object', required: ['client_id', 'redirect_uris'] }),
      '400': ok('invalid_redirect_uri or invalid_client_metadata (RFC 7591 §3.2.2)', S.oauthErrorResponse),
    },
  },
  listWebhooks: {
    method: 'GET',
    path: '/v1/webhooks',
    summary: 'Webhook endpoints (never their secrets)',
    auth: 'bearer',
    scope: 'webhooks:admin',
    responses: { '200': ok('Webhooks', object({ webhooks: { type: 'array', items: S.webhook } })), ...bearer },
  },
  createWebhook: {
    method: 'POST',
    path: '/v1/webhooks',
    summary: 'Subscribe a URL to account lifecycle events; the signing secret is in this answer only',
    description:
      'Deliveries follow the Standard Webhooks specification (`webhook-id`, `webhook-timestamp`, `webhook-signature`), ' +
      'are retried with exponential backoff for 24 hours, and never carry a credential.',
    auth: 'bearer',
    scope: 'webhooks:admin',
    noun: 'webhook',
    body: { schema: S.webhookCreate, required: true },
    responses: { '201': ok('Created', S.webhookWithSecret), ...bodyErrors, ...bearer },
  },
  getWebhook: {
    method: 'GET',
    path: '/v1/webhooks/{id}',
    summary: 'One webhook endpoint',
    auth: 'bearer',
    scope: 'webhooks:admin',
    params: webhookParam,
    responses: { '200': ok('Webhook', S.webhook), '404': webhookNotFound, ...bearer },
  },
  updateWebhook: {
    method: 'PATCH',
    path: '/v1/webhooks/{id}',
    summary: 'Change a webhook’s URL or events (only the fields given change)',
    auth: 'bearer',
    scope: 'webhooks:admin',
    noun: 'webhook update',
    params: webhookParam,
    body: { schema: S.webhookUpdate, required: true },
    responses: { '200': ok('Updated', S.webhook), ...bodyErrors, '404': webhookNotFound, ...bearer },
  },
  deleteWebhook: {
    method: 'DELETE',
    path: '/v1/webhooks/{id}',
    summary: 'Delete a webhook endpoint and its delivery log',
    auth: 'bearer',
    scope: 'webhooks:admin',
    params: webhookParam,
    responses: {
      '200': ok('Deleted', object({ deleted: { const: true }, id: text })),
      '404': webhookNotFound,
      ...bearer,
    },
  },
  rotateWebhookSecret: {
    method: 'POST',
    path: '/v1/webhooks/{id}/rotate-secret',
    summary: 'Replace the signing secret; the new one is in this answer only',
    auth: 'bearer',
    scope: 'webhooks:admin',
    params: webhookParam,
    responses: { '200': ok('Rotated', S.webhookWithSecret), '404': webhookNotFound, ...bearer },
  },
  listWebhookDeliveries: {
    method: 'GET',
    path: '/v1/webhooks/{id}/deliveries',
    summary: 'The delivery log: each event sent to this endpoint, newest first, with its status, attempts and latency',
    auth: 'bearer',
    scope: 'webhooks:admin',
    noun: 'query',
    params: webhookParam,
    query: {
      type: 'object',
      properties: {
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: 100,
          default: 20,
          'x-message': 'must be an integer from 1 to 100',
        },
        cursor: { type: 'string', description: '`next_cursor` of the previous page' },
      },
    },
    responses: {
      '200': ok(
        'A page of deliveries',
        object({
          deliveries: { type: 'array', items: S.webhookDelivery },
          next_cursor: { type: ['string', 'null'], description: 'null on the last page' },
        }),
      ),
      '400': error('A bad limit or cursor'),
      '404': webhookNotFound,
      ...bearer,
    },
  },
  redeliverWebhook: {
    method: 'POST',
    path: '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver',
    summary: 'Send a delivery again now (same `webhook-id`, so a receiver can tell it from a new event)',
    auth: 'bearer',
    scope: 'webhooks:admin',
    params: pathParams({ id: { type: 'string', description: "The webhook's id" }, delivery_id: text }),
    responses: {
      '200': ok('Queued', object({ delivery: S.webhookDelivery })),
      '404': error('No such webhook, or no such delivery for it'),
      ...bearer,
    },
  },
  listTriggerTypes: {
    method: 'GET',
    path: '/v1/trigger-types',
    summary: 'The triggers connectors declare: kind, config schema and event item schema',
    auth: 'bearer',
    scope: 'triggers:admin',
    noun: 'query',
    query: { type: 'object', properties: { connector: { type: 'string', maxLength: 64 } } },
    responses: {
      '200': ok('Trigger types', object({ triggers: { type: 'array', items: S.triggerType } })),
      '400': error('A bad query'),
      ...bearer,
    },
  },
  createTrigger: {
    method: 'POST',
    path: '/v1/triggers',
    summary: 'Watch a connected account for a trigger’s events; they go to webhooks subscribed to `trigger.<name>`',
    description:
      'A polling instance starts where the provider is now: nothing that existed before it is sent. The account must be ACTIVE.',
    auth: 'bearer',
    scope: 'triggers:admin',
    noun: 'trigger',
    body: { schema: S.triggerCreate, required: true },
    responses: {
      '201': ok('Created', S.triggerInstance),
      ...bodyErrors,
      '404': error('No such trigger, connection or connected account'),
      '409': error('The account is not ACTIVE'),
      '502': error('The provider could not be read to start the instance'),
      ...bearer,
    },
  },
  listTriggers: {
    method: 'GET',
    path: '/v1/triggers',
    summary: 'Trigger instances, oldest first, by trigger, connection, identifier or status',
    auth: 'bearer',
    scope: 'triggers:admin',
    noun: 'query',
    query: {
      type: 'object',
      properties: {
        trigger: { type: 'string', maxLength: 128 },
        connection_name: { type: 'string', maxLength: 128 },
        identifier: { type: 'string', maxLength: 255 },
        status: {
          enum: [...S.TRIGGER_STATUS_VALUES],
          'x-message': `must be one of: ${S.TRIGGER_STATUS_VALUES.join(', ')}`,
        },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: 100,
          default: 50,
          'x-message': 'must be an integer from 1 to 100',
        },
        cursor: { type: 'string', maxLength: 512, description: '`next_cursor` of the previous page' },
      },
    },
    responses: {
      '200': ok(
        'A page of instances',
        object({
          triggers: { type: 'array', items: S.triggerInstance },
          next_cursor: { type: ['string', 'null'], description: 'null on the last page' },
        }),
      ),
      '400': error('A bad filter, limit or cursor'),
      '404': error('No connection of that name'),
      ...bearer,
    },
  },
  getTrigger: {
    method: 'GET',
    path: '/v1/triggers/{id}',
    summary: 'One trigger instance: status, last event, last poll, last error',
    auth: 'bearer',
    scope: 'triggers:admin',
    params: triggerParam,
    responses: { '200': ok('Instance', S.triggerInstance), '404': triggerNotFound, ...bearer },
  },
  pauseTrigger: {
    method: 'POST',
    path: '/v1/triggers/{id}/pause',
    summary: 'Stop polling; the cursor stays, so a resume sends what happened meanwhile',
    auth: 'bearer',
    scope: 'triggers:admin',
    params: triggerParam,
    responses: { '200': ok('Paused', S.triggerInstance), '404': triggerNotFound, ...bearer },
  },
  resumeTrigger: {
    method: 'POST',
    path: '/v1/triggers/{id}/resume',
    summary: 'Poll again, at once, from where the instance was',
    auth: 'bearer',
    scope: 'triggers:admin',
    params: triggerParam,
    responses: { '200': ok('Resumed', S.triggerInstance), '404': triggerNotFound, ...bearer },
  },
  deleteTrigger: {
    method: 'DELETE',
    path: '/v1/triggers/{id}',
    summary: 'Delete a trigger instance (instances also go with their account or connection)',
    auth: 'bearer',
    scope: 'triggers:admin',
    params: triggerParam,
    responses: {
      '200': ok('Deleted', object({ deleted: { const: true }, id: text })),
      '404': triggerNotFound,
      ...bearer,
    },
  },
  proxy: {
    method: 'ANY',
    path: '/proxy/{path}',
    summary: "Send a raw request to the provider's API, with the account's credentials injected",
    description:
      "Request and response stream both ways. The provider's answer passes as it is (status, headers, body), marked " +
      "`x-error-source: provider` when it is an error; the statuses listed are the service's own, marked `x-error-source: service`.",
    auth: 'bearer',
    scope: 'proxy',
    rest: 'path',
    params: pathParams({
      path: {
        type: 'string',
        // The request line's own bound: Node reads at most 16 KB of request line and headers.
        maxLength: 16_384,
        description: "The upstream path (and query) relative to the provider's API root, sent as it is",
      },
    }),
    headers: [
      { name: 'connection_name', required: true, description: 'The connection (or x-connection-name)' },
      {
        name: 'identifier',
        required: false,
        description: 'The identifier, when it is printable ASCII (or x-identifier); else x-identifier-encoded',
      },
      { name: 'x-identifier-encoded', required: false, description: 'The identifier as percent-encoded UTF-8' },
    ],
    responses: {
      default: { description: "The provider's response, streamed", content: { '*/*': {} } },
      '400': error('Missing headers, an identifier given twice, or a path that leaves the API root'),
      '404': error('No such connection'),
      '409': error('The account waits for its user verification, or its credentials are unreadable'),
      '502': error('Provider unreachable, or it answered malformed HTTP'),
      '504': error('The provider did not answer in time'),
      ...bearer,
      '403': authorizationRequired,
    },
  },
  oauthAuthorize: {
    method: 'GET',
    path: '/sso/v1/oauth/{connection_id}/authorize',
    summary:
      'Where an authorization link leads: redirects the browser to the provider (OAuth), or shows the hosted connect page (keys and tokens)',
    auth: 'none',
    scope: null,
    params: pathParams({ connection_id: text }),
    query: { type: 'object', properties: { link: { type: 'string', description: "The link's token" } } },
    responses: {
      '200': html("The hosted connect page: a form made from the connector's credential fields"),
      '302': {
        description: "To the provider's authorization page (state and PKCE S256 challenge)",
        headers: { location: { description: "The provider's authorization URL", schema: text } },
      },
      '4XX': pageOrError('An expired, used or unknown link'),
      '5XX': pageOrError("The provider's endpoints could not be discovered"),
    },
  },
  oauthClientMetadata: {
    method: 'GET',
    path: '/oauth/client-metadata/{connection_id}',
    summary:
      "An MCP connection's Client ID Metadata Document: its URL is the client id the service uses at an authorization server that supports them",
    description:
      "Fetched by the MCP server's authorization server (draft-ietf-oauth-client-id-metadata-document) when it advertises " +
      '`client_id_metadata_document_supported`; otherwise the service registers by Dynamic Client Registration.',
    auth: 'none',
    scope: null,
    params: pathParams({ connection_id: { type: 'string', description: "The connection's id" } }),
    responses: {
      '200': ok(
        'The client metadata',
        object({
          client_id: text,
          client_name: text,
          client_uri: text,
          redirect_uris: { type: 'array', items: text },
          grant_types: { type: 'array', items: text },
          response_types: { type: 'array', items: text },
          token_endpoint_auth_method: { const: 'none' },
        }),
      ),
      '404': error('No MCP connection with that id'),
    },
  },
  connectSubmit: {
    method: 'POST',
    path: '/sso/v1/oauth/{connection_id}/authorize',
    summary: "The hosted connect page's form: checks the credentials with the provider, then connects the account",
    description:
      'For a connection that takes keys or tokens, the authorization link (GET) shows a form made from the ' +
      "connector's credential fields; it posts here. The credentials are validated as the API validates them, checked " +
      "with the provider (the auth's verify request), then saved on the link's account, and the link is spent. " +
      'A CSRF token (an HttpOnly SameSite=Strict cookie and the same value in the form) must match. See docs/connect.md.',
    auth: 'none',
    scope: null,
    params: pathParams({ connection_id: text }),
    body: {
      required: true,
      form: true,
      schema: {
        type: 'object',
        required: ['link', 'csrf'],
        properties: {
          link: { type: 'string', maxLength: 200, description: "The link's token" },
          csrf: { type: 'string', maxLength: 200, description: 'The CSRF token the page put in the form' },
          choose: {
            type: 'string',
            maxLength: 64,
            description: 'A connection with several auth kinds: the kind the user chose (its button)',
          },
          auth_kind: {
            type: 'string',
            maxLength: 64,
            description: 'A connection with several auth kinds: the kind whose fields the form carries',
          },
        },
        patternProperties: {
          '^c_[A-Za-z0-9_]{1,64}$': {
            type: 'string',
            maxLength: 4096,
            description: '`c_<field>`: a credential field of the connector',
          },
        },
        additionalProperties: false,
      },
    },
    responses: {
      '200': html('Connected'),
      '303': {
        description: 'To redirect_url (status=success), or to user_verify_url with auth_request_id',
        headers: { location: { description: 'Where the browser goes', schema: text } },
      },
      '400': pageOrError("The form again, each problem next to its field (the provider's refusal too)"),
      '403': html('The CSRF token does not match'),
      '4XX': pageOrError('An expired, used or unknown link'),
      '5XX': pageOrError('Internal error'),
    },
  },
  oauthCallback: {
    method: 'GET',
    path: '/sso/v1/oauth/{connection_id}/callback',
    summary: "The provider's redirect target: exchanges the code and makes the account ACTIVE",
    auth: 'none',
    scope: null,
    params: pathParams({ connection_id: text }),
    query: {
      type: 'object',
      properties: { code: text, state: text, error: text, error_description: text },
    },
    responses: {
      '200': html('Account connected'),
      '302': {
        description:
          "To the link's user_verify_url with auth_request_id, or else to its redirect_url, with status, connected_account_id and identifier",
        headers: { location: { description: 'The redirect URL', schema: text } },
      },
      '4XX': pageOrError('A forged, expired or replayed state, a link already used, or the provider refused'),
      '5XX': pageOrError('The code exchange failed'),
    },
  },
  triggerIngress: {
    method: 'POST',
    path: '/v1/ingress/{token}',
    summary: "A connection's push-trigger ingress: app webhooks (routed to accounts by a provider id)",
    description:
      'Providers post notifications here (docs/triggers.md, "Push triggers"). No API credential: each notification is ' +
      'verified as its trigger declares (signature, timestamp window) before it is used; an unknown token and a bad ' +
      'signature are answered alike.',
    auth: 'none',
    scope: null,
    params: pathParams({ token: { type: 'string', maxLength: 64, description: "The connection's ingress token" } }),
    responses: ingressResponses,
  },
  triggerIngressInstance: {
    method: 'POST',
    path: '/v1/ingress/{token}/{instance_id}',
    summary: "A push-trigger instance's ingress: its provider's notifications, and the provider's validation request",
    description:
      'The URL registered with the provider for one instance. A validation request (Graph: `?validationToken=`) is ' +
      'answered with the token as text/plain; notifications are verified (signature, per-instance secret or ' +
      'clientState) before use; an unknown instance is answered as a failed verification is.',
    auth: 'none',
    scope: null,
    params: pathParams({
      token: { type: 'string', maxLength: 64, description: "The connection's ingress token" },
      instance_id: { type: 'string', maxLength: 80, description: 'The trigger instance' },
    }),
    responses: ingressResponses,
  },
  scalekitListConnectedAccounts: {
    method: 'GET',
    path: '/api/v1/connected_accounts',
    summary: 'Scalekit REST shape: ListConnectedAccounts',
    auth: 'bearer',
    scope: 'accounts:read',
    noun: 'query',
    query: scalekitQuery({
      connector: accountQuery.connector,
      identifier: accountQuery.identifier,
      provider: { type: 'string', description: 'The connector' },
      query: { type: 'string', description: 'Part of the identifier' },
      ...pageQuery,
    }),
    responses: {
      '200': ok('Accounts', scalekitMessage('connected_accounts.ListConnectedAccountsResponse')),
      ...scalekitErrors,
    },
  },
  scalekitCreateConnectedAccount: {
    method: 'POST',
    path: '/api/v1/connected_accounts',
    summary: 'Scalekit REST shape: CreateConnectedAccount',
    auth: 'bearer',
    scope: 'accounts:write',
    body: scalekitBody('connected_accounts.CreateConnectedAccountRequest'),
    responses: {
      '200': ok('Created', scalekitMessage('connected_accounts.CreateConnectedAccountResponse')),
      ...scalekitErrors,
    },
  },
  scalekitUpdateConnectedAccount: {
    method: 'PUT',
    path: '/api/v1/connected_accounts',
    summary: 'Scalekit REST shape: UpdateConnectedAccount',
    auth: 'bearer',
    scope: 'accounts:write',
    body: scalekitBody('connected_accounts.UpdateConnectedAccountRequest'),
    responses: {
      '200': ok('Updated', scalekitMessage('connected_accounts.UpdateConnectedAccountResponse')),
      ...scalekitErrors,
    },
  },
  scalekitDeleteConnectedAccount: {
    method: 'POST',
    path: '/api/v1/connected_accounts:delete',
    summary: 'Scalekit REST shape: DeleteConnectedAccount',
    auth: 'bearer',
    scope: 'accounts:write',
    body: scalekitBody('connected_accounts.DeleteConnectedAccountRequest'),
    responses: {
      '200': ok('Deleted', scalekitMessage('connected_accounts.DeleteConnectedAccountResponse')),
      ...scalekitErrors,
    },
  },
  scalekitMagicLink: {
    method: 'POST',
    path: '/api/v1/connected_accounts/magic_link',
    summary: 'Scalekit REST shape: GetMagicLinkForConnectedAccount (an authorization link)',
    auth: 'bearer',
    scope: 'links:create',
    body: scalekitBody('connected_accounts.GetMagicLinkForConnectedAccountRequest'),
    responses: {
      '200': ok('Link', scalekitMessage('connected_accounts.GetMagicLinkForConnectedAccountResponse')),
      ...scalekitErrors,
    },
  },
  scalekitVerifyConnectedAccountUser: {
    method: 'POST',
    path: '/api/v1/connected_accounts/verify',
    summary: 'Scalekit REST shape: VerifyConnectedAccountUser',
    auth: 'bearer',
    scope: 'links:create',
    body: scalekitBody('connected_accounts.VerifyConnectedAccountUserRequest'),
    responses: {
      '200': ok('Verified', scalekitMessage('connected_accounts.VerifyConnectedAccountUserResponse')),
      ...scalekitErrors,
      '403': error("The identifier is not the account's; or the token lacks the scope (`insufficient_scope`)"),
    },
  },
  scalekitGetConnectedAccountAuth: {
    method: 'GET',
    path: '/api/v1/connected_accounts/auth',
    summary: 'Scalekit REST shape: GetConnectedAccountAuth (never a credential)',
    auth: 'bearer',
    scope: 'accounts:read',
    noun: 'query',
    query: scalekitQuery(accountQuery),
    responses: {
      '200': ok('Account', scalekitMessage('connected_accounts.GetConnectedAccountByIdentifierResponse')),
      ...scalekitErrors,
    },
  },
  scalekitExecuteTool: {
    method: 'POST',
    path: '/api/v1/execute_tool',
    summary: 'Scalekit REST shape: ExecuteTool',
    auth: 'bearer',
    scope: 'tools:execute',
    body: scalekitBody('tools.ExecuteToolRequest'),
    responses: {
      '200': ok('The tool result', scalekitMessage('tools.ExecuteToolResponse')),
      ...scalekitErrors,
      '4XX': error(
        "The provider's failure: `provider_error` with the provider's status and body, and the execution_id",
      ),
      '5XX': error('The provider could not be reached, timed out or answered malformed'),
    },
  },
  scalekitListTools: {
    method: 'GET',
    path: '/api/v1/tools',
    summary: 'Scalekit REST shape: ListTools',
    auth: 'bearer',
    scope: 'tools:execute',
    noun: 'query',
    query: scalekitQuery({
      provider: { type: 'string', description: 'The connector' },
      connector: { type: 'string', description: 'The connection name' },
      identifier: { type: 'string', description: 'Only the connectors where this identifier has an ACTIVE account' },
      tool_name: { type: 'string', description: 'Comma-separated tool names' },
      query: { type: 'string' },
      summary: { type: 'boolean', description: 'Names only' },
      ...pageQuery,
    }),
    responses: { '200': ok('Tools', scalekitMessage('tools.ListToolsResponse')), ...scalekitErrors },
  },
  scalekitListAppConnections: {
    method: 'GET',
    path: '/api/v1/connections/app',
    summary: 'Scalekit REST shape: ListAppConnections',
    auth: 'bearer',
    scope: 'connections:read',
    noun: 'query',
    query: scalekitQuery({
      provider: { type: 'string', description: 'The connector' },
      query: { type: 'string' },
      ...pageQuery,
    }),
    responses: {
      '200': ok('Connections', scalekitMessage('connections.ListAppConnectionsResponse')),
      ...scalekitErrors,
    },
  },
} as const satisfies Record<string, Endpoint>);

export type OperationId = keyof typeof endpoints;
