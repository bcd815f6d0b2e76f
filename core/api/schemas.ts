/**
 * The JSON Schemas (2020-12, the dialect of OpenAPI 3.1) of what the service's HTTP API takes and answers.
 * Endpoints (./endpoints.ts) are built from these objects; the generator names each object of `components` once
 * in the OpenAPI document and in the client's types, wherever an endpoint uses it.
 *
 * `x-message` is this project's annotation: the message any validation error of that schema's value gets, where
 * the keywords' own messages would not tell the client what to send.
 */
export type JsonSchema = { readonly [keyword: string]: unknown };

import { ALL_SCOPES, SCOPES } from './scopes.ts';

export const ACCOUNT_STATUSES = ['PENDING_AUTH', 'PENDING_VERIFICATION', 'ACTIVE', 'EXPIRED', 'DISCONNECTED'] as const;

/** The account lifecycle events a webhook endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  'connected_account.created',
  'connected_account.active',
  'connected_account.expired',
  'connected_account.disconnected',
  'connected_account.deleted',
  'connected_account.verification_required',
] as const;

/** An optional field may also be given as null, which means the same as leaving it out. */
export const orNull = (schema: JsonSchema): JsonSchema => ({ ...schema, type: [schema.type, 'null'] });

const str = { type: 'string' } as const;
const nullableStr = { type: ['string', 'null'] } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' } as const;
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

/**
 * An end user's identifier: any text the client chooses, 1–255 characters, no control characters, and
 * well-formed Unicode (the store keeps UTF-8, where every lone surrogate becomes U+FFFD: two identifiers would
 * become one account).
 */
export const identifier: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[^\\u0000-\\u001f\\u007f\\uD800-\\uDFFF]+$',
  description: "The end user's identifier in the client application (any text, 1-255 characters)",
  'x-message': 'must be 1-255 characters of well-formed text without control characters',
};

export const connectionName: JsonSchema = {
  type: 'string',
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
  'x-message': 'must be 1-64 characters of letters, digits, _ . - (starting with a letter or digit)',
};

/** A required text field: given, and not empty. */
export const requiredText = (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', minLength: 1, ...extra });

export const fieldError: JsonSchema = {
  type: 'object',
  required: ['field', 'message'],
  additionalProperties: false,
  properties: {
    field: { type: 'string', description: 'The input field, e.g. `identifier` or `api_hosts.drive`' },
    message: { type: 'string' },
  },
};

/** The service's own error. */
export const errorResponse: JsonSchema = {
  type: 'object',
  required: ['error', 'request_id'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      additionalProperties: false,
      properties: {
        code: { type: 'string', examples: ['invalid_input', 'unauthorized', 'account_expired', 'not_found'] },
        message: { type: 'string' },
        details: {
          description: 'For invalid input: every bad field',
          anyOf: [{ type: 'array', items: fieldError }, { type: 'object' }],
        },
      },
    },
    request_id: { type: 'string' },
    execution_id: { type: 'string', description: 'For a failed tool execution' },
  },
};

/**
 * 403 `authorization_required`: the end user must connect (reconnect, or grant more to) the account first; the
 * error carries a single-use link for that connection and identifier (docs/connect.md).
 */
export const authorizationRequiredResponse: JsonSchema = {
  type: 'object',
  required: ['error', 'request_id'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: [
        'code',
        'message',
        'link',
        'link_expires_at',
        'reason',
        'connection_name',
        'identifier',
        'connected_account_id',
      ],
      additionalProperties: false,
      properties: {
        code: { const: 'authorization_required' },
        message: { type: 'string' },
        link: { type: 'string', description: 'A single-use link the end user opens to connect the account' },
        link_expires_at: { type: 'string', format: 'date-time' },
        reason: {
          enum: ['not_connected', 'pending_auth', 'expired', 'disconnected', 'missing_scopes'],
          description: 'Why the user must connect',
        },
        connection_name: { type: 'string' },
        identifier: { type: 'string' },
        connected_account_id: { type: 'string' },
        missing_scopes: {
          type: 'array',
          items: { type: 'string' },
          description: 'For `missing_scopes`: the provider scopes the tool needs and the account was not granted',
        },
      },
    },
    request_id: { type: 'string' },
    execution_id: { type: 'string' },
  },
};

/** A provider's refusal of a tool call: the provider's status (also the response's) and body. */
export const providerErrorResponse: JsonSchema = {
  type: 'object',
  required: ['error', 'request_id'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'provider_status', 'provider_body'],
      additionalProperties: false,
      properties: {
        code: { const: 'provider_error' },
        message: { type: 'string' },
        provider_status: { type: 'integer', description: 'The status the provider answered' },
        provider_body: { description: 'The body the provider answered' },
      },
    },
    request_id: { type: 'string' },
    execution_id: { type: 'string' },
  },
};

/** `POST /oauth/token` answers errors as RFC 6749 §5.2 says, not in the service's own shape. */
export const tokenErrorResponse: JsonSchema = {
  type: 'object',
  required: ['error', 'error_description'],
  additionalProperties: false,
  properties: {
    error: { enum: ['invalid_request', 'unsupported_grant_type', 'invalid_client', 'slow_down'] },
    error_description: { type: 'string' },
  },
};

/** An error of the MCP authorization server (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707). */
export const oauthErrorResponse: JsonSchema = {
  type: 'object',
  required: ['error', 'error_description'],
  additionalProperties: false,
  properties: {
    error: {
      enum: [
        'invalid_request',
        'invalid_client',
        'invalid_grant',
        'unsupported_grant_type',
        'invalid_scope',
        'invalid_target',
        'invalid_redirect_uri',
        'invalid_client_metadata',
        'temporarily_unavailable',
        'server_error',
      ],
    },
    error_description: { type: 'string' },
  },
};

/** Parameters it does not know are ignored, as RFC 6749 §3.2 says; a grant it does not offer is its own error. */
export const tokenRequest: JsonSchema = {
  type: 'object',
  properties: {
    grant_type: { type: 'string', description: '`client_credentials` (the default, and the only grant)' },
    client_id: { type: 'string', description: 'Or in HTTP Basic' },
    client_secret: { type: 'string', writeOnly: true, description: 'Or in HTTP Basic' },
  },
};

export const tokenResponse: JsonSchema = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in'],
  additionalProperties: false,
  properties: { access_token: str, token_type: { const: 'Bearer' }, expires_in: { type: 'integer' } },
};

export const serviceIndex: JsonSchema = {
  type: 'object',
  required: ['service', 'links'],
  additionalProperties: false,
  properties: {
    service: { const: 'agent-connector-service' },
    links: {
      type: 'object',
      description: 'Absolute URLs',
      required: ['health', 'ready', 'openapi', 'docs', 'dashboard'],
      additionalProperties: false,
      properties: {
        health: { ...str, description: 'Liveness' },
        ready: { ...str, description: 'Readiness (503 while starting or draining)' },
        openapi: { ...str, description: 'The OpenAPI 3.1 document of the HTTP API' },
        docs: { ...str, description: 'The generated documentation of every connector and tool' },
        dashboard: { ...str, description: 'The dashboard, for people' },
      },
    },
  },
};

export const readiness: JsonSchema = {
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: {
    status: { enum: ['ready', 'starting', 'store_unavailable', 'draining'] },
  },
};

export const health: JsonSchema = {
  type: 'object',
  required: ['status', 'store', 'tools'],
  additionalProperties: false,
  properties: {
    status: { const: 'ok' },
    store: { enum: ['sqlite', 'postgres'] },
    tools: { type: 'integer', description: 'How many tools the service offers' },
  },
};

const accountField: JsonSchema = {
  type: 'object',
  required: ['name', 'title', 'description', 'secret', 'required'],
  additionalProperties: false,
  properties: {
    name: str,
    title: str,
    description: nullableStr,
    secret: { type: 'boolean' },
    required: { type: 'boolean' },
    host_allowlist: { type: 'array', items: str },
  },
};

export const connector: JsonSchema = {
  type: 'object',
  required: ['name', 'title', 'description', 'provider', 'docs_url', 'auth', 'api_base_url', 'tool_count'],
  additionalProperties: false,
  properties: {
    name: str,
    title: str,
    description: str,
    provider: str,
    docs_url: nullableStr,
    auth: {
      type: 'array',
      items: {
        anyOf: [
          {
            type: 'object',
            required: ['kind', 'default_scopes', 'available_scopes', 'pkce'],
            additionalProperties: false,
            properties: {
              kind: { const: 'oauth2' },
              default_scopes: { type: 'array', items: str },
              available_scopes: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['name'],
                  additionalProperties: false,
                  properties: { name: str, description: str },
                },
              },
              pkce: { type: 'boolean' },
            },
          },
          {
            type: 'object',
            required: ['kind', 'resource', 'dynamic_client_registration'],
            additionalProperties: false,
            properties: {
              kind: { const: 'oauth2_mcp' },
              resource: str,
              dynamic_client_registration: { type: 'boolean' },
            },
          },
          {
            type: 'object',
            required: ['kind', 'fields'],
            additionalProperties: false,
            properties: {
              kind: { enum: ['api_key', 'bearer', 'basic'] },
              fields: { type: 'array', items: accountField },
            },
          },
        ],
      },
    },
    api_base_url: str,
    tool_count: { type: 'integer' },
    tools: { type: 'array', items: str, description: "The connector's tool names (one connector only)" },
  },
};

const versionChoice: JsonSchema = {
  type: 'object',
  required: ['default', 'available'],
  additionalProperties: false,
  properties: { default: str, available: { type: 'array', items: str } },
};

export const tool: JsonSchema = {
  type: 'object',
  required: ['name', 'connector', 'title', 'description', 'read_only', 'input_schema', 'output_schema'],
  additionalProperties: false,
  properties: {
    name: str,
    connector: str,
    title: str,
    description: str,
    read_only: { type: 'boolean' },
    input_schema: { type: 'object', description: "The tool's input, as a JSON Schema" },
    output_schema: {
      type: 'object',
      description:
        "The tool's answer (`data`), as a JSON Schema: the fields of the concise answer; a detailed answer (response_format detailed) is the provider's own and has these and more",
    },
    versions: {
      type: 'object',
      required: ['schema', 'tool'],
      additionalProperties: false,
      properties: {
        schema: versionChoice,
        tool: versionChoice,
      },
    },
    provider_notes: { type: 'string', description: 'Where the provider differs from what one would expect' },
  },
};

/** What `data` holds after a dry run: the upstream requests the tool would send, credentials redacted. */
export const executeResponse: JsonSchema = {
  type: 'object',
  required: ['data', 'execution_id'],
  additionalProperties: false,
  properties: {
    data: {
      description:
        "The tool's answer: by default the concise answer (an object with the fields of the tool's output schema, `next_cursor` when there is more, `truncated` when the answer budget cut it); with response_format detailed the provider's payload; for a dry run, `{requests: [{method, url, headers, body?}]}` with credential values redacted",
    },
    execution_id: str,
    warnings: {
      type: 'array',
      description:
        'Present when the call went ahead but something could not be done as asked: an input the provider cannot ' +
        'act on (a note it has no field for), a default the service chose. Declared per tool (its notes say which).',
      items: {
        type: 'object',
        required: ['message'],
        additionalProperties: false,
        properties: {
          field: { type: 'string', description: 'The input field it concerns' },
          message: { type: 'string' },
        },
      },
    },
  },
};

/** A connection delete, running in the background or done (runtime/jobs/connection-deletions.ts). */
export const connectionDeletion: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'deleted',
    'connection_name',
    'connector',
    'status',
    'accounts_deleted',
    'requested_at',
    'finished_at',
  ],
  additionalProperties: false,
  properties: {
    id: { type: 'string', description: 'The deletion; `GET /v1/connection-deletions/{id}` reads its progress' },
    deleted: {
      const: true,
      description: 'The connection is gone for every caller from the request on, and its name is free',
    },
    connection_name: { type: 'string' },
    connector: { type: 'string' },
    status: {
      enum: ['running', 'done'],
      description: '`running`: its accounts are being deleted in the background; `done`: nothing of it is left',
    },
    accounts_deleted: {
      type: 'integer',
      description: 'Accounts deleted so far, each reported by a `connected_account.deleted` event',
    },
    requested_at: dateTime,
    finished_at: { ...nullableDateTime, description: 'When the last account and the connection were gone' },
  },
};

export const connection: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'connection_name',
    'connector',
    'auth_kind',
    'client_id',
    'has_client_secret',
    'scopes',
    'redirect_uri',
    'api_base_url',
    'api_hosts',
    'oauth',
    'created_at',
    'updated_at',
  ],
  additionalProperties: false,
  properties: {
    id: str,
    connection_name: str,
    connector: str,
    auth_kind: str,
    auth_kinds: {
      type: 'array',
      items: str,
      description: 'Connections whose users choose between several auth kinds: the kinds, the first being auth_kind',
    },
    client_id: nullableStr,
    has_client_secret: { type: 'boolean' },
    scopes: { type: 'array', items: str },
    redirect_uri: {
      type: ['string', 'null'],
      description: "OAuth connections: the URI to register in the provider's app",
    },
    api_base_url: nullableStr,
    api_hosts: stringMap,
    oauth: {
      type: 'object',
      additionalProperties: false,
      properties: { authorize_url: str, token_url: str, resource: str },
    },
    client_registered: {
      type: 'boolean',
      description: 'MCP connections: whether the service has registered itself as a client at the authorization server',
    },
    account_count: { type: 'integer' },
    created_at: dateTime,
    updated_at: dateTime,
  },
};

/** The fields of a connection a client sets; `connection` (above) is what the service answers. */
const connectionFields = {
  auth_kind: orNull({ type: 'string', description: 'For connectors with several auth kinds' }),
  auth_kinds: orNull({
    type: 'array',
    items: { type: 'string', maxLength: 64 },
    minItems: 1,
    maxItems: 8,
    description:
      "Lets the end user choose between several of the connector's auth kinds on the connect page (an OAuth kind first); auth_kind is then its first",
  }),
  client_id: orNull({ type: 'string', maxLength: 1024 }),
  client_secret: orNull({ type: 'string', maxLength: 4096, writeOnly: true }),
  scopes: orNull({ type: 'array', items: str }),
  api_base_url: orNull({
    type: 'string',
    maxLength: 2048,
    description:
      "Overrides the connector's API base URL (self-hosted providers, tests); may use account fields such as {domain}; null removes the override",
  }),
  api_hosts: orNull({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: "Overrides the connector's other hosts, by the host names its spec declares",
  }),
  oauth: orNull({
    type: 'object',
    additionalProperties: false,
    properties: { authorize_url: str, token_url: str, resource: str },
    description: 'OAuth endpoint overrides: authorize_url and token_url (OAuth 2.0), resource (MCP)',
  }),
};

export const connectionCreate: JsonSchema = {
  type: 'object',
  required: ['connection_name', 'connector'],
  additionalProperties: false,
  properties: {
    connection_name: connectionName,
    connector: requiredText({ description: 'The connector, e.g. `mail`' }),
    ...connectionFields,
  },
};

export const connectionUpdate: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    connection_name: orNull({ type: 'string', description: 'Cannot change; accepted when it is the current one' }),
    connector: orNull({ type: 'string', description: 'Cannot change; accepted when it is the current one' }),
    ...connectionFields,
  },
};

export const connectedAccount: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'connection_name',
    'connector',
    'identifier',
    'status',
    'fields',
    'token_expires_at',
    'last_used_at',
    'last_error',
    'created_at',
    'updated_at',
  ],
  additionalProperties: false,
  properties: {
    id: str,
    connection_name: str,
    connector: str,
    identifier: str,
    status: { enum: [...ACCOUNT_STATUSES] },
    fields: { ...stringMap, description: 'Non-secret credential fields (for example a desk domain)' },
    token_expires_at: nullableDateTime,
    last_used_at: nullableDateTime,
    last_error: nullableStr,
    auth_kind: {
      type: 'string',
      description: 'Accounts of a connection with several auth kinds: the kind its credentials are of',
    },
    created_at: dateTime,
    updated_at: dateTime,
  },
};

export const accountEnvelope: JsonSchema = {
  type: 'object',
  required: ['connected_account'],
  additionalProperties: false,
  properties: { connected_account: connectedAccount },
};

/** A credential's scopes: each one of core/api/scopes.ts, or `*` alone (every scope, present and future). */
export const credentialScopes: JsonSchema = {
  type: 'array',
  maxItems: 64,
  items: {
    enum: [...SCOPES, ALL_SCOPES],
    'x-message': `must be one of: ${SCOPES.join(', ')} (or * for every scope)`,
  },
  description:
    'What the credential may do: each route names the one scope it needs (the `x-required-scope` of each operation). `["*"]`: every scope, present and future.',
};

/** The connections a credential is restricted to; null: every connection. */
export const credentialConnections: JsonSchema = {
  type: ['array', 'null'],
  maxItems: 1000,
  items: { type: 'string', minLength: 1, maxLength: 200 },
  description: 'Only these connections (by name); null or absent: every connection',
};

/** An audit log entry (runtime/audit/log.ts). */
export const auditEvent: JsonSchema = {
  type: 'object',
  required: [
    'seq',
    'id',
    'at',
    'actor_type',
    'actor_id',
    'action',
    'target_type',
    'target_id',
    'source_address',
    'request_id',
    'changes',
    'prev_hash',
    'hash',
  ],
  additionalProperties: false,
  properties: {
    seq: { type: 'integer', description: 'Its place in the chain' },
    id: str,
    at: dateTime,
    actor_type: { enum: ['credential', 'dashboard_user', 'end_user', 'anonymous', 'system'] },
    actor_id: { type: 'string', description: 'The API credential id, the dashboard user, or the end user' },
    action: { type: 'string', description: 'e.g. `connection.update`, `credential.create`, `dashboard.sign_in`' },
    target_type: str,
    target_id: str,
    source_address: nullableStr,
    request_id: nullableStr,
    changes: {
      type: 'object',
      description: 'What changed, by field (`{from, to}` on an update); a secret only as `set`, `changed` or `removed`',
    },
    prev_hash: { type: 'string', description: 'The previous entry’s hash (SHA-256, hex)' },
    hash: { type: 'string', description: 'SHA-256 over this entry’s canonical JSON and prev_hash' },
  },
};

export const apiCredential: JsonSchema = {
  type: 'object',
  required: ['id', 'client_id', 'name', 'created_at', 'revoked_at', 'last_used_at', 'scopes', 'connection_names'],
  additionalProperties: false,
  properties: {
    id: str,
    client_id: str,
    name: str,
    created_at: dateTime,
    revoked_at: nullableDateTime,
    last_used_at: nullableDateTime,
    scopes: credentialScopes,
    connection_names: credentialConnections,
  },
};

/**
 * The tool formats `GET /v1/tools?format=` answers, one per LLM vendor's own tool-definition shape
 * (runtime/tools/llm-formats.ts builds them and documents each vendor's rules).
 */
export const LLM_TOOL_FORMATS = ['openai', 'openai-strict', 'anthropic', 'gemini', 'mcp'] as const;

const toolName = { type: 'string', description: 'The tool name, as in `POST /v1/tools/execute`' } as const;
const parametersSchema = { type: 'object', description: "The tool's input as the vendor's dialect of JSON Schema" };

/** OpenAI Chat Completions: an entry of `tools`. */
export const openaiTool: JsonSchema = {
  type: 'object',
  required: ['type', 'function'],
  additionalProperties: false,
  properties: {
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name', 'description', 'parameters'],
      additionalProperties: false,
      properties: {
        name: toolName,
        description: str,
        parameters: parametersSchema,
        strict: { type: 'boolean', description: 'Present (true) in strict mode (structured outputs)' },
      },
    },
  },
};

/** OpenAI Responses API: an entry of `tools` (the function's fields flat). */
export const openaiResponsesTool: JsonSchema = {
  type: 'object',
  required: ['type', 'name', 'description', 'parameters', 'strict'],
  additionalProperties: false,
  properties: {
    type: { const: 'function' },
    name: toolName,
    description: str,
    parameters: parametersSchema,
    strict: { type: 'boolean' },
  },
};

/** Anthropic Messages API: an entry of `tools`. */
export const anthropicTool: JsonSchema = {
  type: 'object',
  required: ['name', 'description', 'input_schema'],
  additionalProperties: false,
  properties: { name: toolName, description: str, input_schema: parametersSchema },
};

/** Gemini: a `Tool` holding `functionDeclarations` (its `parameters` is the API's OpenAPI-subset Schema). */
export const geminiTool: JsonSchema = {
  type: 'object',
  required: ['functionDeclarations'],
  additionalProperties: false,
  properties: {
    functionDeclarations: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'description'],
        additionalProperties: false,
        properties: {
          name: toolName,
          description: str,
          parameters: { type: 'object', description: 'Left out for a function without parameters' },
          responseJsonSchema: { type: 'object', description: "The function's answer, as JSON Schema" },
        },
      },
    },
  },
};

/** MCP: a `Tool` of a `tools/list` result. */
export const mcpTool: JsonSchema = {
  type: 'object',
  required: ['name', 'title', 'description', 'inputSchema', 'outputSchema'],
  additionalProperties: false,
  properties: {
    name: toolName,
    title: str,
    description: str,
    inputSchema: parametersSchema,
    outputSchema: {
      type: 'object',
      description: "The answer's JSON Schema: a result's structuredContent conforms to it",
    },
    icons: {
      type: 'array',
      description: "The connector's icon, served by the service (`/icons/<connector>.svg`)",
      items: {
        type: 'object',
        required: ['src'],
        additionalProperties: false,
        properties: { src: str, mimeType: str, sizes: { type: 'array', items: str } },
      },
    },
    annotations: {
      type: 'object',
      description: "MCP's tool annotations, as the tool's YAML declares them",
      required: ['title', 'readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'],
      additionalProperties: false,
      properties: {
        title: str,
        readOnlyHint: { type: 'boolean' },
        destructiveHint: { type: 'boolean' },
        idempotentHint: { type: 'boolean' },
        openWorldHint: { type: 'boolean' },
      },
    },
  },
};

/** `GET /v1/tools?format=…`: `tools` goes to the vendor's SDK as it is. */
export const llmToolList = (
  format: JsonSchema,
  items: JsonSchema,
  description: string,
  extra: Record<string, JsonSchema> = {},
): JsonSchema => ({
  type: 'object',
  required: ['format', ...Object.keys(extra), 'tools', 'count'],
  additionalProperties: false,
  description,
  properties: {
    format,
    ...extra,
    tools: { type: 'array', items },
    count: { type: 'integer', description: 'How many tools (functions) the list holds' },
  },
});

export const toolSearchHit: JsonSchema = {
  type: 'object',
  required: ['name', 'connector', 'title', 'description', 'score'],
  additionalProperties: false,
  properties: {
    name: str,
    connector: str,
    title: str,
    description: str,
    score: { type: 'number', description: 'Relevance (BM25+ with field boosts); higher is better' },
  },
};

export const MCP_MODES = ['tools', 'search'] as const;

const mcpMode: JsonSchema = {
  enum: MCP_MODES,
  description:
    '`tools` (default): tools/list lists every configured tool; `search`: two meta-tools, `search_tools` (task → the best ' +
    'matching configured tools with their input schemas) and `execute_tool` (name + input)',
  'x-message': `must be one of: ${MCP_MODES.join(', ')}`,
};
const nameList = (what: string): JsonSchema => ({
  type: 'array',
  maxItems: 1000,
  items: { type: 'string', minLength: 1, maxLength: 200 },
  description: what,
});
const mcpToolNames = nameList(
  'Tool names to expose (each runs on the listed connection of its connector, or the only one)',
);
const mcpConnectionNames = nameList("Connection names: every tool of each connection's connector is exposed");

const mcpVerifyDescription =
  "Where the authorization links this server's tools hand out (an account not connected yet) send the user after " +
  "authorizing, with `auth_request_id`: your application checks that its signed-in user is the MCP URL's identifier " +
  'and calls POST /v1/connected-accounts/verify. A link that reaches a transcript or a log is then of no use to ' +
  "anyone else. Its origin must be the service's or in ALLOWED_REDIRECT_ORIGINS; null: links connect whoever opens them";
const mcpVerifyUrl: JsonSchema = { type: ['string', 'null'], maxLength: 2048, description: mcpVerifyDescription };

/** The OpenID provider end users of an MCP server's OAuth-protected endpoint sign in at (docs/mcp.md "OAuth"). */
const mcpIdentityProviderView: JsonSchema = {
  type: ['object', 'null'],
  required: ['issuer', 'client_id', 'identifier_claim', 'client_secret_set'],
  additionalProperties: false,
  description:
    "This server's own OpenID provider for its oauth_url's sign-ins; null: the service's (MCP_OAUTH_OIDC_*), if set",
  properties: {
    issuer: str,
    client_id: str,
    identifier_claim: { type: 'string', description: "The claim whose value is the end user's identifier" },
    client_secret_set: { type: 'boolean', description: 'Whether a client secret is stored (it is never shown)' },
  },
};

const mcpIdentityProviderInput: JsonSchema = {
  type: ['object', 'null'],
  required: ['issuer', 'client_id'],
  additionalProperties: false,
  description:
    "This server's own OpenID provider for its oauth_url's sign-ins (register {PUBLIC_URL}/oauth/mcp/callback as " +
    "its redirect URI); null: the service's (MCP_OAUTH_OIDC_*). On an update, a client_secret left out is kept " +
    'when the issuer and client id stay the same',
  properties: {
    issuer: { type: 'string', maxLength: 512, description: "The provider's issuer URL (https)" },
    client_id: { type: 'string', minLength: 1, maxLength: 200 },
    client_secret: {
      type: ['string', 'null'],
      maxLength: 200,
      writeOnly: true,
      description: 'Absent or null: a public client at the provider',
    },
    identifier_claim: {
      type: 'string',
      pattern: '^[A-Za-z0-9_.:-]{1,64}$',
      'x-message': 'must be a claim name (letters, digits, _.:-, at most 64)',
      description: "The ID token (or userinfo) claim whose value is the end user's identifier; `sub` by default",
    },
  },
};

/** An MCP server configuration: which tools its MCP endpoint exposes, and how. */
export const mcpServer: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'name',
    'mode',
    'tools',
    'connections',
    'tool_count',
    'active_urls',
    'mcp_endpoint',
    'oauth_url',
    'oauth_identity_provider',
    'user_verify_url',
    'created_at',
    'updated_at',
  ],
  additionalProperties: false,
  properties: {
    id: str,
    name: str,
    mode: { enum: MCP_MODES },
    tools: { type: 'array', items: str },
    connections: { type: 'array', items: str },
    tool_count: { type: 'integer', description: 'How many tools the server exposes now' },
    active_urls: { type: 'integer', description: 'URLs neither revoked nor expired' },
    mcp_endpoint: {
      type: 'string',
      description:
        'The endpoint for server-side agents: the service bearer token, and the end user in the header x-identifier',
    },
    oauth_url: {
      type: 'string',
      description:
        "The OAuth-protected endpoint for MCP clients: bearer tokens from the service's authorization server, for an end " +
        'user who signed in at the identity provider (docs/mcp.md "OAuth")',
    },
    oauth_identity_provider: mcpIdentityProviderView,
    user_verify_url: { type: ['string', 'null'], description: mcpVerifyDescription },
    created_at: dateTime,
    updated_at: dateTime,
  },
};

export const mcpServerCreate: JsonSchema = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { ...connectionName, description: 'Unique among MCP servers' },
    mode: { ...mcpMode, enum: [...MCP_MODES, null] },
    tools: orNull(mcpToolNames),
    connections: orNull(mcpConnectionNames),
    user_verify_url: mcpVerifyUrl,
    oauth_identity_provider: mcpIdentityProviderInput,
  },
};

export const mcpServerUpdate: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: orNull(connectionName),
    mode: { ...mcpMode, enum: [...MCP_MODES, null] },
    tools: orNull(mcpToolNames),
    connections: orNull(mcpConnectionNames),
    user_verify_url: { ...mcpVerifyUrl, description: `${mcpVerifyDescription}. An empty string removes it` },
    oauth_identity_provider: mcpIdentityProviderInput,
  },
};

/** An MCP URL as listed: never its token. */
export const mcpUrl: JsonSchema = {
  type: 'object',
  required: ['id', 'identifier', 'status', 'created_at', 'expires_at', 'revoked_at', 'last_used_at'],
  additionalProperties: false,
  properties: {
    id: str,
    identifier: str,
    status: { enum: ['active', 'revoked', 'expired'] },
    created_at: dateTime,
    expires_at: dateTime,
    revoked_at: nullableDateTime,
    last_used_at: nullableDateTime,
  },
};

/** A JSON-RPC 2.0 message the MCP endpoint answers: a result, or an error. */
export const jsonRpcResponse: JsonSchema = {
  type: 'object',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer', 'null'] },
    result: { type: 'object' },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'integer' }, message: str, data: {} },
    },
  },
};

/** The schemas the OpenAPI document and the client's types name, by name. */
export const components: Readonly<Record<string, JsonSchema>> = {
  Error: errorResponse,
  ProviderError: providerErrorResponse,
  FieldError: fieldError,
  TokenError: tokenErrorResponse,
  OAuthError: oauthErrorResponse,
  Connector: connector,
  Tool: tool,
  Connection: connection,
  ConnectionCreate: connectionCreate,
  ConnectionUpdate: connectionUpdate,
  ConnectedAccount: connectedAccount,
  ApiCredential: apiCredential,
  AuditEvent: auditEvent,
  ExecuteToolResponse: executeResponse,
  OpenAITool: openaiTool,
  OpenAIResponsesTool: openaiResponsesTool,
  AnthropicTool: anthropicTool,
  GeminiTool: geminiTool,
  McpTool: mcpTool,
  ToolSearchHit: toolSearchHit,
  McpServer: mcpServer,
  McpServerCreate: mcpServerCreate,
  McpServerUpdate: mcpServerUpdate,
  McpUrl: mcpUrl,
  JsonRpcResponse: jsonRpcResponse,
};

/** Trigger events: `trigger.<trigger name>`, `trigger.failing`, `trigger.recovered` (docs/triggers.md). */
export const TRIGGER_EVENT_PATTERN = '^trigger\\.[a-z][a-z0-9_]*$';

/** An event type: an account lifecycle event, or a trigger's. */
const webhookEventType: JsonSchema = {
  type: 'string',
  maxLength: 128,
  anyOf: [{ enum: [...WEBHOOK_EVENT_TYPES] }, { pattern: TRIGGER_EVENT_PATTERN }],
};

const webhookEvents: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 256,
  uniqueItems: true,
  items: {
    ...webhookEventType,
    'x-message': `must be one of: ${WEBHOOK_EVENT_TYPES.join(', ')}, or trigger.<trigger name>, trigger.failing, trigger.recovered`,
  },
  description: 'The events to receive: account lifecycle events, and trigger events (`trigger.<trigger name>`)',
};

const webhookUrl: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  description:
    'Where events are POSTed (http or https); a private address only when its host is in WEBHOOK_ALLOWED_HOSTS',
};

export const webhookCreate: JsonSchema = {
  type: 'object',
  required: ['url', 'events'],
  additionalProperties: false,
  properties: { url: webhookUrl, events: webhookEvents },
};

export const webhookUpdate: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { url: orNull(webhookUrl), events: orNull(webhookEvents) },
};

export const webhook: JsonSchema = {
  type: 'object',
  required: ['id', 'url', 'events', 'created_at', 'updated_at'],
  additionalProperties: false,
  properties: {
    id: str,
    url: str,
    events: { type: 'array', items: webhookEventType },
    created_at: dateTime,
    updated_at: dateTime,
  },
};

export const webhookWithSecret: JsonSchema = {
  ...webhook,
  required: [...(webhook.required as string[]), 'secret'],
  properties: {
    ...(webhook.properties as Record<string, JsonSchema>),
    secret: {
      type: 'string',
      description: 'The signing secret (`whsec_…`), shown in this answer only: verify deliveries with it',
    },
  },
};

export const webhookDelivery: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'webhook_id',
    'event_id',
    'event_type',
    'event',
    'status',
    'attempts',
    'next_attempt_at',
    'last_status_code',
    'last_error',
    'latency_ms',
    'created_at',
    'delivered_at',
  ],
  additionalProperties: false,
  properties: {
    id: str,
    webhook_id: str,
    event_id: { ...str, description: 'The `webhook-id` header: the same on every attempt and redelivery' },
    event_type: webhookEventType,
    event: { type: 'object', description: 'The body sent: `{type, timestamp, data}`' },
    status: { enum: ['pending', 'succeeded', 'failed'] },
    attempts: { type: 'integer' },
    next_attempt_at: nullableDateTime,
    last_status_code: { type: ['integer', 'null'], description: "The receiver's HTTP status on the last attempt" },
    last_error: nullableStr,
    latency_ms: { type: ['integer', 'null'], description: 'How long the last attempt took' },
    created_at: dateTime,
    delivered_at: nullableDateTime,
  },
};

/** Trigger instances (docs/triggers.md). */
export const TRIGGER_STATUS_VALUES = ['active', 'paused', 'failing', 'needs_reauth'] as const;

export const triggerCreate: JsonSchema = {
  type: 'object',
  required: ['trigger', 'connection_name', 'identifier'],
  additionalProperties: false,
  properties: {
    trigger: { type: 'string', maxLength: 128, description: 'The trigger’s name, e.g. `callintel_call_created`' },
    connection_name: { type: 'string', maxLength: 128, description: 'The connection of the account to watch' },
    identifier,
    config: orNull({
      type: 'object',
      description: 'The trigger’s settings, as its `config_schema` declares (GET /v1/trigger-types)',
    }),
    interval_seconds: orNull({
      type: 'integer',
      minimum: 1,
      maximum: 86_400,
      description: 'How often to poll (polling triggers); never below TRIGGER_MIN_INTERVAL_SECONDS',
    }),
  },
};

export const triggerInstance: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'trigger',
    'connector',
    'kind',
    'connection_name',
    'identifier',
    'connected_account_id',
    'config',
    'status',
    'interval_seconds',
    'events_sent',
    'last_event_at',
    'last_poll_at',
    'next_poll_at',
    'last_error',
    'last_error_at',
    'created_at',
    'updated_at',
  ],
  additionalProperties: false,
  properties: {
    id: str,
    trigger: str,
    connector: str,
    kind: { enum: ['polling', 'push'] },
    connection_name: nullableStr,
    identifier: nullableStr,
    connected_account_id: str,
    config: { type: 'object' },
    status: {
      enum: [...TRIGGER_STATUS_VALUES],
      description:
        'active; paused; failing (3 failed polls in a row); needs_reauth (the account needs new credentials)',
    },
    interval_seconds: { type: 'integer' },
    events_sent: { type: 'integer' },
    last_event_at: nullableDateTime,
    last_poll_at: nullableDateTime,
    next_poll_at: nullableDateTime,
    last_error: nullableStr,
    last_error_at: nullableDateTime,
    created_at: dateTime,
    updated_at: dateTime,
    ingress_url: {
      type: 'string',
      description:
        "Push instances: the connection's ingress URL, where its provider posts notifications (an app webhook's " +
        "target URL, such as a HubSpot app's); registered instances get their own URL under it",
    },
  },
};

export const triggerType: JsonSchema = {
  type: 'object',
  required: ['name', 'connector', 'title', 'description', 'kind', 'event_type', 'config_schema', 'event_schema'],
  additionalProperties: false,
  properties: {
    name: str,
    connector: str,
    title: str,
    description: str,
    kind: { enum: ['polling', 'push'] },
    event_type: { ...str, description: 'The webhook event type its events have: `trigger.<name>`' },
    config_schema: { type: 'object' },
    event_schema: { type: 'object', description: 'JSON Schema of `data.item` in its events' },
  },
};
