/**
 * The connector YAML model, as validated by `specs/connector.schema.json`.
 * These types describe what a contributor writes; the generator turns them into `generated/`.
 */

export type ParamType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array';

/** A JSON-Schema-like description of one tool input parameter. */
export interface ParamSpec {
  type: ParamType;
  required?: boolean;
  description?: string;
  enum?: Array<string | number | boolean>;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  /** Whole numbers only, while keeping the spec's `number` type. */
  whole?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  /** Shorthand for a pattern: date (YYYY-MM-DD), date-time (ISO 8601), email, uuid, url. */
  format?: 'date' | 'date-time' | 'email' | 'uuid' | 'url';
  /** For arrays: the item schema. */
  items?: ParamSpec;
  minItems?: number;
  maxItems?: number;
  /** For objects: known properties (the object stays open unless `additionalProperties: false`). */
  properties?: Record<string, ParamSpec>;
  additionalProperties?: boolean;
  /** For objects: the least number of properties (e.g. 1 for "something to change"). */
  minProperties?: number;
  /** A string holding comma-separated values; `max_items` bounds their count. */
  csv?: { max_items?: number; item_pattern?: string };
  /** A credential passed as a parameter (e.g. another service's token): redacted in dry runs, never logged. */
  secret?: boolean;
  /** A string holding JSON; the parsed value must have one of these JSON types. */
  json?: { types: Array<'array' | 'object'> };
  examples?: unknown[];
}

export type Condition =
  | string
  | number
  | boolean
  | { equals: string | number | boolean }
  | { in: Array<string | number | boolean> }
  | { gt: number }
  | { present: boolean };

export type RuleSpec =
  | { requires: string[]; when: Record<string, Condition>; message?: string }
  | { at_least_one_of: string[]; message?: string }
  /** Parameters the spec offers but the provider has no place for: giving one is a 400 naming it. */
  | { unsupported: string[]; message?: string }
  | { max_page: { page: string; per_page: string; per_page_default: number; total: number }; message?: string };

/** A transform applied to a value in a request template. */
export type PipeStep = string | { map: Record<string, string> } | { prefix: string } | { suffix: string };

/** A request-template value: a literal, a nested object template, an array of templates, or an expression. */
export type Template = unknown;

export interface RequestSpec {
  /** Send this request only when the condition on the input holds (for tools with several `requests`). */
  when?: Record<string, Condition>;
  /** Named host from `api.hosts`; default is `api.base_url`. */
  host?: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path?: string;
  query?: Record<string, Template>;
  headers?: Record<string, Template>;
  body?: Template;
  /** How the body is encoded: json (default) or form. */
  body_encoding?: 'json' | 'form';
  /** Send one request per element of this array parameter; `{$item: true}` refers to the element. */
  for_each?: string;
  /** MCP transport: the upstream tool name and its arguments. */
  mcp_tool?: string;
  arguments?: Record<string, Template>;
  /** Leave the credentials off (a public endpoint such as a docs site). */
  anonymous?: boolean;
  /** Apply the account's credentials this way for this request instead of the auth kind's `apply`. */
  apply?: CredentialApply;
  /** How the response is shaped before it is returned as `data`. */
  response?: ResponseSpec;
}

export interface ResponseSpec {
  /** Statuses that are not errors although >= 400 (e.g. a 404 meaning "empty"), with the data to return. */
  empty_on?: Array<{ status: number; data: unknown }>;
}

export interface ExampleSpec {
  title?: string;
  input: Record<string, unknown>;
  /** The exact upstream request(s) this input must produce (credentials redacted). */
  requests: Array<{
    method: string;
    url: string;
    headers?: Record<string, string>;
    body?: unknown;
  }>;
}

export interface ToolSpec {
  name: string;
  title?: string;
  description: string;
  input: Record<string, ParamSpec>;
  rules?: RuleSpec[];
  /** Adds the spec's `schema_version` and `tool_version` selectors (never sent upstream). */
  versioned?: boolean;
  /**
   * The upstream request; or `requests` for a tool that sends several (each may carry `when` and `for_each`).
   * Only a tool with a hook may have neither (a hook that refuses with a clear error because the provider
   * offers no operation for it).
   */
  request?: RequestSpec;
  requests?: RequestSpec[];
  /** A named function in `specs/hooks/<connector>.ts` for what a template cannot say. */
  hook?: string;
  notes?: string;
  read_only?: boolean;
  examples: ExampleSpec[];
}

export interface AccountFieldSpec {
  name: string;
  title: string;
  description?: string;
  secret?: boolean;
  required?: boolean;
  pattern?: string;
  format?: 'email' | 'hostname' | 'url';
  /** Host patterns (`*.example.com`) a hostname field, or the host of a url field, must match. */
  host_allowlist?: string[];
  /** Used when the field is not given. */
  default?: string;
  example?: string;
}

export interface CredentialApply {
  bearer?: string;
  basic?: { username: string; password: string };
  headers?: Record<string, string>;
}

export interface OAuth2AuthSpec {
  kind: 'oauth2';
  title?: string;
  authorize_url: string;
  token_url: string;
  revoke_url?: string;
  scopes: {
    default: string[];
    available?: Array<{ name: string; description?: string }>;
    separator?: string;
  };
  pkce?: boolean;
  authorize_params?: Record<string, string>;
  token_auth?: 'client_secret_post' | 'client_secret_basic';
  /** Values lifted from the token response into the account's non-secret fields. */
  token_response_fields?: Record<string, string>;
  /** Whether the provider rotates refresh tokens (documentation; rotation is always handled). */
  rotates_refresh_token?: boolean;
  apply: CredentialApply;
}

export interface OAuth2McpAuthSpec {
  kind: 'oauth2_mcp';
  title?: string;
  /** The protected resource (the MCP endpoint); discovery starts here. */
  resource: string;
  client_name?: string;
  scopes?: { default: string[] };
  apply: CredentialApply;
}

export interface KeyAuthSpec {
  kind: 'api_key' | 'bearer' | 'basic';
  title?: string;
  fields: AccountFieldSpec[];
  apply: CredentialApply;
  /** A cheap request that proves the credentials work. */
  verify?: { method: 'GET' | 'POST'; path: string };
}

export type AuthSpec = OAuth2AuthSpec | OAuth2McpAuthSpec | KeyAuthSpec;

export interface RetrySpec {
  statuses: number[];
  max_attempts: number;
  retry_after_header?: string;
  /** Longest Retry-After the service waits for; longer ones are returned to the client. */
  max_wait_ms?: number;
}

export interface ApiSpec {
  /** The provider's API root; the proxy prepends it and tool paths are relative to it. May use account fields. */
  base_url: string;
  /** Other hosts some tools talk to. */
  hosts?: Record<string, string>;
  transport?: 'rest' | 'mcp';
  retry?: RetrySpec;
  timeouts?: { connect_ms?: number; response_ms?: number };
  /** Headers sent on every upstream request. */
  headers?: Record<string, string>;
}

export interface VersionsSpec {
  schema: { default: string; available: string[] };
  tool: { default: string; available: string[] };
}

export interface ConnectorSpec {
  name: string;
  title: string;
  description: string;
  provider: string;
  docs_url?: string;
  auth: AuthSpec[];
  api: ApiSpec;
  versions?: VersionsSpec;
  /** Account field values the examples assume, beyond the fields' own `example` values. */
  example_fields?: Record<string, string>;
  tools: ToolSpec[];
}
