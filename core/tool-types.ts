import type { ApiSpec, AuthSpec, ConnectorSearchSpec, CredentialApply, VersionsSpec } from './spec-model.ts';

/** One HTTP request (or MCP tool call) a tool sends upstream, before credentials are applied. */
export interface UpstreamRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  bodyEncoding?: 'json' | 'form';
  /** Named host from the connector's `api.hosts`, or undefined for the main API. */
  host?: string;
  /** Sent without the account's credentials (a public endpoint). */
  anonymous?: boolean;
  /** Credentials applied this way instead of the auth kind's default. */
  apply?: CredentialApply;
  /** For the MCP transport: the upstream tool called with `tools/call`. */
  mcp?: { tool: string; arguments: Record<string, unknown> };
  /** Upstream statuses that mean "nothing found" rather than an error. */
  emptyOn?: ReadonlyArray<{ status: number; data: unknown }>;
}

export interface BuildContext {
  /** The resolved base URL of the main API (no host name) or of a named host. */
  base: (host?: string) => string;
}

export interface FieldError {
  field: string;
  message: string;
}

export interface AjvError {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

export interface StandaloneValidator {
  (data: unknown): boolean;
  errors?: AjvError[] | null;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON when the response is JSON, else text; undefined when empty. */
  body: unknown;
  /** The JSON text `body` was parsed from, so a result can be written out without serializing it again. */
  json?: string;
}

/**
 * Something the caller should know about a call that went ahead: an input the provider could not act on (a note
 * it cannot store), a default the service chose. The execute response carries them as `warnings`.
 */
export interface ToolWarning {
  /** The input field it concerns, when there is one. */
  field?: string;
  message: string;
}

export interface HookContext<I> {
  input: I;
  /** Adds a warning to the execute response (the call still succeeds). */
  warn(warning: ToolWarning): void;
  /** The requests the tool's YAML template built for this input. */
  planned: UpstreamRequest[];
  base: (host?: string) => string;
  /** Sends one request with the account's credentials (retries, refresh and limits included). */
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  /** Like `send`, but a non-2xx answer becomes a provider error; returns the body. */
  call(request: UpstreamRequest): Promise<unknown>;
  /** The tools the MCP server (Streamable HTTP) at `url` lists, every page, asked with the account's credentials. */
  listMcpTools(url: string): Promise<McpToolInfo[]>;
  /**
   * Calls a tool of the MCP server at `url` with the account's credentials; returns the tool's result. A result
   * flagged `isError`, or a JSON-RPC error, is a provider error.
   */
  callMcpTool(url: string, tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** A tool an MCP server lists (`tools/list`). */
export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * In a planned request (what a dry run shows), a value that comes from an earlier response of the same call —
 * a run id, a user id looked up by email — and so cannot be known before that response arrives.
 */
export const FROM_PREVIOUS = '{from: previous response}';

/**
 * A named hook, for what a request template cannot say (several dependent requests, a lookup).
 * `plan` says which requests a dry run shows: every request `run` may send, in order, with FROM_PREVIOUS where
 * a value comes from an earlier answer (a request repeated while polling is shown once); without `plan`, the
 * template's requests are shown. `run` performs the tool and returns its `data`.
 */
export interface ToolHook<I> {
  plan?(input: I, planned: UpstreamRequest[], base: (host?: string) => string): UpstreamRequest[];
  run(ctx: HookContext<I>): Promise<unknown>;
}

export interface ToolExample {
  title?: string;
  input: Record<string, unknown>;
  requests: Array<{ method: string; url: string; headers?: Record<string, string>; body?: unknown }>;
}

/**
 * What a tool does to the world, as MCP's tool annotations say it (and as agents use it to decide what needs a
 * user's confirmation). Declared per tool in its YAML.
 */
export interface ToolAnnotations {
  /** Changes nothing at the provider. */
  readOnlyHint: boolean;
  /** May delete or overwrite what exists (meaningful when not read-only). */
  destructiveHint: boolean;
  /** Calling it again with the same input has no further effect. */
  idempotentHint: boolean;
  /** Reaches beyond the user's own account data (the open web, public profiles). */
  openWorldHint: boolean;
}

/**
 * How the concise answer is cut out of the provider's (declared as `output.shape` in the YAML): `true` keeps a value
 * as it came, 'html' keeps it with HTML turned into text, a one-item list maps a list, a mapping keeps the fields it
 * names (in its order, when the provider sent them), and `{$join: [from, at, sep]}` is the text of every string at
 * path `at` found under path `from` of the enclosing object, in document order, joined by `sep` (nothing by default);
 * `{$selected: shape}` is kept (as that shape) only when the caller chose the provider's fields (`output.selected_by`).
 */
export type AnswerShape =
  | true
  | 'html'
  | readonly [AnswerShape]
  | { readonly $join: readonly [readonly string[], readonly string[], string?] }
  | { readonly $selected: AnswerShape }
  | { readonly [field: string]: AnswerShape };

/** How the provider pages a list (from `output.paging`): the parameter that selects the page, and where "more" shows. */
export interface AnswerPaging {
  /** An item offset (`skip`), a page number from 1 (`page`), or the provider's opaque page token (`token`). */
  kind: 'skip' | 'page' | 'token';
  /** The input parameter of that kind. */
  param: string;
  /** The input parameter holding the page size, if any. */
  size?: string;
  /** With `page`: the input parameter taking the token the provider hands out for the next page (at `next`). */
  token?: string;
  /** Path in the provider's answer: present and not empty when there is a next page (for `token`, its token). */
  next?: readonly string[];
  /** Path in the provider's answer of the total number of items (`skip`) or pages (`page`). */
  total?: readonly string[];
}

/** A tool's answer as its YAML declares it: the concise shape, the list an answer budget cuts, and the paging. */
export interface ToolOutput {
  shape: AnswerShape;
  /** Path of the answer's list (a list tool), in the answer as an object (a bare list is `items`). */
  items?: readonly string[];
  paging?: AnswerPaging;
  /** The input parameter that chooses the provider's fields: given, the concise answer keeps all the provider sent. */
  selectedBy?: string;
}

export interface ToolDefinition<I = unknown> {
  name: string;
  connector: string;
  title: string;
  description: string;
  /**
   * For the agent: when to use the tool, what it changes, what it costs (generator/guidance.ts). Agents see it after
   * the description (`agentDescription()` in core/agent-description.ts); tool search leaves it out.
   */
  guidance?: string;
  readOnly: boolean;
  inputSchema: Record<string, unknown>;
  validate: StandaloneValidator;
  /** Friendlier messages for schema keywords, keyed by ajv schemaPath. */
  messages: Readonly<Record<string, string>>;
  checkRules(input: I): FieldError[];
  build(input: I, ctx: BuildContext): UpstreamRequest[];
  /** Input fields holding credentials: their values are redacted wherever a request is shown. */
  secretInputs?: readonly string[];
  /** Input fields that select the tool's version and are never sent upstream. */
  versionFields?: readonly string[];
  hook?: ToolHook<I>;
  notes?: string;
  /** Warnings given when an input parameter is present (declared in the YAML): `when` names the parameter. */
  inputWarnings?: ReadonlyArray<{ when: string; message: string }>;
  /** Words users say for what the tool does ("email" for mail, "deal" for an opportunity), for tool search. */
  keywords?: readonly string[];
  /** The provider scopes the tool needs (OAuth connectors, declared in the YAML): least privilege per tool. */
  scopes?: readonly string[];
  annotations?: ToolAnnotations;
  /** JSON Schema of the answer (an object): the concise answer's fields; a detailed answer has these and more. */
  outputSchema: Record<string, unknown>;
  output: ToolOutput;
  examples: readonly ToolExample[];
}

export interface ConnectorDefinition {
  name: string;
  title: string;
  description: string;
  provider: string;
  docsUrl?: string;
  auth: readonly AuthSpec[];
  api: ApiSpec;
  versions?: VersionsSpec;
  /** How people ask for the connector's tools (its YAML's `search`), for tool search. */
  search?: ConnectorSearchSpec;
  /** The connector's icon, an SVG document (`specs/icons/<connector>.svg`), served at `/icons/<connector>.svg`. */
  icon?: string;
  /** Account field values the tools' examples assume. */
  exampleFields: Readonly<Record<string, string>>;
  toolNames: readonly string[];
  /** The connector's triggers (docs/triggers.md). */
  triggerNames: readonly string[];
}

/** A hook turning a polling trigger's answer into its list of items (text a path cannot read). */
export type TriggerItemsHook = (answer: unknown) => unknown[];

/** A polling trigger's reading of the provider, as its YAML declares it (docs/triggers.md). */
export interface TriggerPoll {
  /** The list request; its input is the instance's config with `since` and `cursor`. */
  build(input: Record<string, unknown>, ctx: BuildContext): UpstreamRequest[];
  /** A cursor feed: the request giving the first cursor, and where its answer holds it. */
  start?: { build(input: Record<string, unknown>, ctx: BuildContext): UpstreamRequest[]; cursor: readonly string[] };
  items?: readonly string[];
  itemsHook?: TriggerItemsHook;
  id: ReadonlyArray<readonly string[]>;
  time?: readonly string[];
  /** `since` is the newest time seen less this many seconds (never before the instance). */
  lookbackSeconds?: number;
  nextPage?: readonly string[];
  nextCursor?: readonly string[];
  skipWhen?: ReadonlyArray<{ path: readonly string[]; value: unknown }>;
  intervalSeconds: number;
  maxPages: number;
}

/** A push trigger: how its notifications are verified, matched, routed and identified (docs/triggers.md). */
export interface TriggerPush {
  verify: {
    scheme: 'hmac_sha256' | 'shared_secret_header' | 'client_state';
    header?: string;
    timestampHeader?: string;
    signed?: 'body' | 'timestamp_body' | 'method_url_body_timestamp';
    encoding: 'base64' | 'hex';
    prefix?: string;
    maxAgeSeconds: number;
    clientStatePath?: readonly string[];
    secret: 'instance' | 'connection_client_secret';
  };
  events?: readonly string[];
  match?: ReadonlyArray<{ path: readonly string[]; value: unknown }>;
  route?: { path: readonly string[]; accountField: string };
  instancePath?: readonly string[];
  id?: ReadonlyArray<readonly string[]>;
  item?: readonly string[];
  hook?: TriggerPushHook;
}

/** What a push trigger's hook may do with the provider, through the account's credentials. */
export interface TriggerPushContext {
  /** The trigger instance's id. */
  instanceId: string;
  config: Record<string, unknown>;
  /** The instance's ingress URL (the connection's, with the instance named). */
  ingressUrl: string;
  /** The per-instance secret to register with the provider (a clientState, a header value). */
  secret: string;
  /** What the hook stored at the last registration (subscription ids, expiry). */
  state: Record<string, unknown>;
  /** Now, epoch ms (the engine's clock). */
  now: number;
  base: (host?: string) => string;
  /** Sends a request with the account's credentials: the parsed 2xx answer, else a ProviderError. */
  call: (r: UpstreamRequest) => Promise<unknown>;
}

/** What a registration leaves: the state to keep, when to renew it, and what the provider itself decided. */
export interface TriggerPushRegistration {
  state: Record<string, unknown>;
  /** When to renew (epoch ms); absent or null: the registration does not expire. */
  renewAt?: number | null;
  /** A signing secret the provider made (Zendesk's), replacing the instance's own. */
  secret?: string;
  /** The value app webhooks name this account by (HubSpot's portalId), when the account's fields lack it. */
  route?: string;
}

/** One provider item of a notification: its key (same item, same key: the same webhook-id) and the event's item. */
export interface TriggerPushItem {
  key: string;
  item: Record<string, unknown>;
}

export interface TriggerPushHook {
  /** Registers the instance with the provider; returns the state to keep (and when to renew, epoch ms). */
  register(ctx: TriggerPushContext): Promise<TriggerPushRegistration>;
  /** Renews the registration before it expires. */
  renew?(ctx: TriggerPushContext): Promise<TriggerPushRegistration>;
  unregister(ctx: TriggerPushContext): Promise<void>;
  /**
   * A request the provider sends to check the URL before anything else (Graph's validation token): the answer to
   * give, or undefined when this is no such request.
   */
  handshake?(query: URLSearchParams): { status: number; contentType: string; body: string } | undefined;
  /** Lifecycle notifications (subscription removed, reauthorization required, missed): what the instance becomes. */
  lifecycle?(notification: Record<string, unknown>): 'renew' | 'reregister' | 'needs_reauth' | 'resync' | undefined;
  /**
   * A verified notification's item, read from the provider (a change notification names a resource rather than
   * carrying it); undefined: the notification is not one of this trigger's items.
   */
  item?(ctx: TriggerPushContext, notification: Record<string, unknown>): Promise<TriggerPushItem | undefined>;
  /** After a `resync` (notifications were missed): the items since `since` (epoch ms), read from the provider. */
  catchUp?(ctx: TriggerPushContext, since: number): Promise<TriggerPushItem[]>;
}

export interface TriggerDefinition {
  name: string;
  connector: string;
  title: string;
  description: string;
  kind: 'polling' | 'push';
  configSchema: Record<string, unknown>;
  eventSchema: Record<string, unknown>;
  validateConfig: StandaloneValidator;
  validateEvent: StandaloneValidator;
  poll?: TriggerPoll;
  push?: TriggerPush;
}
