/**
 * Hooks of the scraping-platform connector (Apify REST API v2, tool surface of apify-mcp-server v0.9.x): what
 * the templates of specs/scraper.yaml cannot say. Runs that are polled to a terminal status (bounded), Actors
 * that are MCP servers, local projection and cleaning of dataset items, the store's rental filter, the
 * docs-page host choice. Pure helpers are exported for the unit tests.
 */
import { FROM_PREVIOUS } from '../../core/tool-types.ts';
import type {
  HookContext,
  ToolHook,
  TriggerPushHook,
  UpstreamRequest,
  UpstreamResponse,
} from '../../core/tool-types.ts';
import type * as I from '../../generated/types.ts';
import { encodeQueryPart, seg, TemplateValueError, url as buildUrl } from '../../core/template-runtime.ts';
import { ProviderError, ServiceError, UpstreamFailure } from '../../core/errors.ts';
import type { ConnectorTransforms } from '../../core/transforms.ts';

/** The scraper connector's own transforms, used by specs/scraper.yaml's request templates as `{param|name}`. */
export const transforms = {
  /** "username/name" → "username~name" (only the first slash), as Actor paths require. */
  actor_path: (v: unknown): string => String(v).replace('/', '~'),
} satisfies ConnectorTransforms;

type Json = Record<string, unknown>;
type Base = (host?: string) => string;
type Ctx = Pick<HookContext<unknown>, 'send' | 'call' | 'base'>;

/** Statuses after which a run changes no more. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['SUCCEEDED', 'FAILED', 'TIMED-OUT', 'ABORTED']);
/** The platform holds a run read for at most 60 s. */
export const WAIT_FOR_FINISH_SECS = 60;
/** Polls of a synchronous run before the service gives up waiting: about 300 s in all. */
export const MAX_RUN_POLLS = 5;
/** Items read for a run's preview (the preview is then cut to OUTPUT_CHAR_LIMIT). */
export const PREVIEW_FETCH_LIMIT = 100;
/** The MCP server's cap on tool output text. */
export const OUTPUT_CHAR_LIMIT = 50_000;
/** Extra store results fetched so that dropping rental Actors still leaves `limit` of them. */
export const STORE_OVERFETCH = 50;
const RUN_PREVIEW_ITEMS = 5;
const RAG_ACTOR = 'apify/rag-web-browser';
const RAG_MAX_MEMORY_MB = 4096;

interface Run {
  id: string;
  actId?: string;
  status: string;
  statusMessage?: string | null;
  startedAt?: string;
  finishedAt?: string | null;
  stats?: Json;
  usageTotalUsd?: number;
  defaultDatasetId?: string;
  defaultKeyValueStoreId?: string;
  defaultRequestQueueId?: string;
}

interface Build {
  actId?: string;
  actorDefinition?: {
    input?: Json;
    readme?: string;
    webServerMcpPath?: string;
    storages?: {
      dataset?: Json & {
        views?: Record<string, { display?: { properties?: Json }; transformation?: { fields?: unknown[] } }>;
      };
    };
  } | null;
}

// ---------------------------------------------------------------------------------------------------------
// Small pieces shared by the hooks

/** The `data` of a `{"data": …}` envelope. */
function data<T>(body: unknown): T {
  if (body && typeof body === 'object' && 'data' in body) return (body as { data: T }).data;
  throw new UpstreamFailure('provider_malformed_response', 'The platform answered without its {"data": …} envelope');
}

function get(url: string): UpstreamRequest {
  return { method: 'GET', url, headers: {} };
}

/** `username/name` → `username~name` as a path segment (only the first slash, as the API client does). */
export function actorSegment(actor: string): string {
  return seg(actor.replace('/', '~'), 'actor');
}

/** `name:tool` → {name, tool}; the last colon splits, as upstream's `/^(.+):(.+)$/` does. */
export function splitActorTool(actor: string): { name: string; tool?: string } {
  const m = /^(.+):(.+)$/.exec(actor);
  return m ? { name: m[1]!, tool: m[2]! } : { name: actor };
}

/** Sets one query parameter of a URL the template built (in place, or appended), encoded as the templates encode. */
export function withQuery(url: string, key: string, value: string | number): string {
  const [path, query = ''] = url.split('?', 2) as [string, string?];
  const name = encodeQueryPart(key);
  const pair = `${name}=${encodeQueryPart(String(value))}`;
  const pairs = query ? query.split('&') : [];
  const at = pairs.findIndex((p) => p.startsWith(`${name}=`));
  if (at >= 0) pairs[at] = pair;
  else pairs.push(pair);
  return `${path}?${pairs.join('&')}`;
}

function header(res: UpstreamResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** `send`, but a non-2xx answer is the provider's error (for when the response headers are needed). */
async function sendOk(ctx: Ctx, req: UpstreamRequest): Promise<UpstreamResponse> {
  const res = await ctx.send(req);
  if (res.status < 200 || res.status >= 300) throw new ProviderError(res.status, res.body, res.headers);
  return res;
}

function totalOf(res: UpstreamResponse, fallback: number): number {
  const n = Number(header(res, 'x-apify-pagination-total'));
  return Number.isFinite(n) && header(res, 'x-apify-pagination-total') !== undefined ? n : fallback;
}

function itemsOf(body: unknown): Json[] {
  if (!Array.isArray(body))
    throw new UpstreamFailure(
      'provider_malformed_response',
      'The platform answered dataset items with something other than an array',
    );
  return body as Json[];
}

// ---------------------------------------------------------------------------------------------------------
// Dataset items: projection, cleaning, preview

/** `{a: {b: 1}}` with `["a.b", "c"]` → `{"a.b": 1, "c": undefined}` (keys as written). */
export function valuesByDotKeys(item: unknown, keys: readonly string[]): Json {
  const out: Json = {};
  for (const key of keys) {
    let current: unknown = item;
    for (const segment of key.split('.')) {
      current =
        current !== null && typeof current === 'object' && Object.prototype.hasOwnProperty.call(current, segment)
          ? (current as Json)[segment]
          : undefined;
      if (current === undefined) break;
    }
    out[key] = current;
  }
  return out;
}

/** Drops null, undefined, "", [] and {} recursively; undefined when nothing is left. */
export function cleanEmpty(value: unknown): unknown {
  if (value === null || value === undefined || value === '') return undefined;
  if (Array.isArray(value)) {
    const list = value.map(cleanEmpty).filter((v) => v !== undefined);
    return list.length ? list : undefined;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Json)
      .map(([k, v]) => [k, cleanEmpty(v)] as const)
      .filter(([, v]) => v !== undefined);
    return entries.length ? Object.fromEntries(entries) : undefined;
  }
  return value;
}

/** Comma-separated fields, trimmed, empties dropped. */
export function parseFields(fields: string | undefined): string[] {
  return (fields ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
}

/** The fields the dataset views of a build show: what a trimmed preview keeps. */
export function viewFields(build: Build): string[] {
  const views = build.actorDefinition?.storages?.dataset?.views ?? {};
  const fields = new Set<string>();
  for (const view of Object.values(views)) {
    for (const f of Object.keys(view.display?.properties ?? {})) fields.add(f);
    for (const f of view.transformation?.fields ?? []) if (typeof f === 'string') fields.add(f);
  }
  return [...fields];
}

/** Items within `limit` characters of JSON: all of them, else only the important fields, else fewer items. */
export function previewWithinLimit(
  items: Json[],
  importantFields: readonly string[],
  limit = OUTPUT_CHAR_LIMIT,
): Json[] {
  if (JSON.stringify(items).length <= limit) return items;
  let source = items;
  if (importantFields.length) {
    source = items.map((item) => valuesByDotKeys(item, importantFields));
    if (JSON.stringify(source).length <= limit) return source;
  }
  const out: Json[] = [];
  let size = 2;
  for (const item of source) {
    size += JSON.stringify(item).length + (out.length ? 1 : 0);
    if (size > limit) break;
    out.push(item);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Runs

function startRunRequest(
  base: Base,
  actor: string,
  body: unknown,
  options?: { memory?: number; timeout?: number },
): UpstreamRequest {
  return {
    method: 'POST',
    url: buildUrl(base(), `/v2/acts/${actorSegment(actor)}/runs`, [
      ['memory', options?.memory],
      ['timeout', options?.timeout],
    ]),
    headers: {},
    body,
  };
}

/**
 * Polls `GET /v2/actor-runs/{id}?waitForFinish=60` until the run is terminal, at most MAX_RUN_POLLS times:
 * a run still going after that is a 504 that carries what the caller needs to go on asynchronously.
 */
export async function waitForRun(ctx: Ctx, started: Run, actor: string): Promise<Run> {
  let run = started;
  for (let polls = 0; !TERMINAL_STATUSES.has(run.status); polls++) {
    if (polls === MAX_RUN_POLLS) {
      throw new ServiceError(
        504,
        'actor_run_not_finished',
        `Run ${run.id} of ${actor} is still ${run.status} after waiting ${MAX_RUN_POLLS * WAIT_FOR_FINISH_SECS} s; it goes on: ` +
          `poll scraper_get_actor_run with runId "${run.id}", then read its output with scraper_get_actor_output (datasetId "${run.defaultDatasetId}")`,
        { runId: run.id, datasetId: run.defaultDatasetId, status: run.status },
      );
    }
    run = data<Run>(
      await ctx.call(
        get(
          buildUrl(ctx.base(), `/v2/actor-runs/${encodeURIComponent(run.id)}`, [
            ['waitForFinish', WAIT_FOR_FINISH_SECS],
          ]),
        ),
      ),
    );
  }
  return run;
}

/** A finished run with its dataset preview (or only the dataset's item count). */
async function finishedRun(
  ctx: Ctx,
  run: Run,
  actorName: string,
  preview: boolean,
  importantFields: readonly string[],
) {
  const datasetId = run.defaultDatasetId!;
  let items: Json[] = [];
  let total: number;
  if (preview) {
    const res = await sendOk(
      ctx,
      get(
        buildUrl(ctx.base(), `/v2/datasets/${encodeURIComponent(datasetId)}/items`, [['limit', PREVIEW_FETCH_LIMIT]]),
      ),
    );
    const fetched = itemsOf(res.body);
    total = totalOf(res, fetched.length);
    items = previewWithinLimit(fetched, importantFields);
  } else {
    total = Number(
      data<{ itemCount?: number }>(await ctx.call(get(`${ctx.base()}/v2/datasets/${encodeURIComponent(datasetId)}`)))
        .itemCount ?? 0,
    );
  }
  return {
    runId: run.id,
    actorName,
    status: run.status,
    statusMessage: run.statusMessage ?? null,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt ?? null,
    stats: run.stats,
    usageTotalUsd: run.usageTotalUsd,
    datasetId,
    keyValueStoreId: run.defaultKeyValueStoreId,
    totalItemCount: total,
    previewItemCount: items.length,
    items,
    instructions:
      items.length < total
        ? `The preview holds ${items.length} of ${total} items: read them all with scraper_get_actor_output (datasetId "${datasetId}", fields, offset, limit).`
        : `All ${total} items are here; scraper_get_actor_output (datasetId "${datasetId}") reads them again with field selection and paging.`,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Actors that are MCP servers

/** The MCP endpoint path a build declares (comma-separated; `/mcp` preferred), or undefined. */
export function mcpServerPath(build: Build): string | undefined {
  const raw = build.actorDefinition?.webServerMcpPath;
  if (typeof raw !== 'string' || !raw.trim()) return undefined;
  const paths = raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const path = paths.includes('/mcp') ? '/mcp' : paths[0]!;
  // The path comes from the Actor's author: it must stay a path, so the token can never go to another host.
  if (!/^\/(?!\/)[\w\-./~]*$/.test(path)) {
    throw new UpstreamFailure(
      'provider_malformed_response',
      `The Actor declares an MCP path that is not a plain path: ${JSON.stringify(path)}`,
    );
  }
  return path;
}

/** `https://<actorId>.apify.actor<path>`: the Actor's Standby host under the connector's `standby` host. */
export function mcpServerUrl(base: Base, actorId: string | undefined, path: string): string {
  if (!actorId || !/^[A-Za-z0-9]+$/.test(actorId)) {
    throw new UpstreamFailure(
      'provider_malformed_response',
      `The Actor's build carries no usable Actor ID (${JSON.stringify(actorId)})`,
    );
  }
  const root = new URL(base('standby'));
  return `${root.protocol}//${actorId}.${root.host}${path}`;
}

// ---------------------------------------------------------------------------------------------------------
// Actor details

const PARTS = [
  'description',
  'stats',
  'pricing',
  'rating',
  'metadata',
  'inputSchema',
  'readme',
  'outputSchema',
  'mcpTools',
] as const;
type Part = (typeof PARTS)[number];

/** Omitted (or all flags unset): everything but mcpTools. Any flag given: only the flags set to true. */
export function detailParts(output: Partial<Record<Part, boolean>> | undefined): Record<Part, boolean> {
  const given = !!output && PARTS.some((p) => output[p] !== undefined);
  return Object.fromEntries(PARTS.map((p) => [p, given ? output[p] === true : p !== 'mcpTools'])) as Record<
    Part,
    boolean
  >;
}

function detailNeeds(parts: Record<Part, boolean>) {
  const build = parts.inputSchema || parts.outputSchema || parts.mcpTools || parts.readme;
  const actor =
    parts.description || parts.stats || parts.pricing || parts.rating || parts.metadata || parts.readme || !build;
  return { actor, build, store: parts.metadata };
}

const SCHEMA_KEYS = new Set([
  'title',
  'description',
  'enum',
  'type',
  'default',
  'prefill',
  'properties',
  'items',
  'required',
]);
const DESCRIPTION_MAX = 500;
const ENUM_MAX_CHARS = 2000;

/** The input schema as the MCP server shows it: only the keys an agent needs, long texts cut. */
export function compactInputSchema(schema: unknown): unknown {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema as Json)) {
    if (key === 'properties' && value && typeof value === 'object') {
      out.properties = Object.fromEntries(
        Object.entries(value as Json).map(([name, prop]) => [name, compactProperty(prop)]),
      );
    } else if (key !== 'properties') {
      out[key] = value;
    }
  }
  return out;
}

function compactProperty(prop: unknown): unknown {
  if (!prop || typeof prop !== 'object' || Array.isArray(prop)) return prop;
  const out: Json = {};
  for (const [key, value] of Object.entries(prop as Json)) {
    if (!SCHEMA_KEYS.has(key)) continue;
    if (key === 'description' && typeof value === 'string' && value.length > DESCRIPTION_MAX)
      out[key] = `${value.slice(0, DESCRIPTION_MAX)}…`;
    else if (key === 'enum' && Array.isArray(value)) out[key] = shortenEnum(value);
    else if (key === 'properties' && value && typeof value === 'object') {
      out[key] = Object.fromEntries(Object.entries(value as Json).map(([name, p]) => [name, compactProperty(p)]));
    } else if (key === 'items') out[key] = compactProperty(value);
    else out[key] = value;
  }
  return out;
}

function shortenEnum(values: unknown[]): unknown[] {
  const out: unknown[] = [];
  let size = 0;
  for (const v of values) {
    size += JSON.stringify(v).length + 1;
    if (size > ENUM_MAX_CHARS) break;
    out.push(v);
  }
  return out;
}

/** The pricing in force now: the latest entry that has started. */
export function currentPricing(infos: unknown, now = Date.now()): Json | null {
  if (!Array.isArray(infos)) return null;
  const started = (infos as Json[])
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a date is a string or a number; anything else parses to NaN, which counts as not started
    .filter((p) => !p.startedAt || Date.parse(String(p.startedAt)) <= now)
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- as above
    .sort((a, b) => Date.parse(String(a.startedAt ?? 0)) - Date.parse(String(b.startedAt ?? 0)));
  return started.at(-1) ?? null;
}

function actorStats(actor: Json): Json {
  const stats = (actor.stats ?? {}) as Json;
  const runs = stats.publicActorRunStats30Days as { SUCCEEDED?: number; TOTAL?: number } | undefined;
  return {
    totalUsers: stats.totalUsers ?? 0,
    monthlyUsers: stats.totalUsers30Days ?? 0,
    ...(runs?.TOTAL ? { successRate: Number((((runs.SUCCEEDED ?? 0) / runs.TOTAL) * 100).toFixed(1)) } : {}),
    ...(stats.bookmarkCount ? { bookmarks: stats.bookmarkCount } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The hooks

function callActorPlan(input: I.ScraperCallActorInput, planned: UpstreamRequest[], base: Base): UpstreamRequest[] {
  const { name, tool } = splitActorTool(input.actor);
  return tool ? planned : [...planned, startRunRequest(base, name, input.input, input.callOptions)];
}

/**
 * Everything a call may send, for a dry run: the build lookup, then either the MCP tool call on the Actor's
 * Standby host (its id and path come from the build) or the run's start, and for a synchronous run the poll and
 * the dataset read.
 */
function callActorDryRun(input: I.ScraperCallActorInput, planned: UpstreamRequest[], base: Base): UpstreamRequest[] {
  const { tool } = splitActorTool(input.actor);
  if (tool) {
    const root = new URL(base('standby'));
    const mcpCall: UpstreamRequest = {
      method: 'POST',
      url: `${root.protocol}//${FROM_PREVIOUS}.${root.host}${FROM_PREVIOUS}`,
      headers: {},
      body: { jsonrpc: '2.0', method: 'tools/call', params: { name: tool, arguments: input.input ?? {} } },
    };
    return [...planned, mcpCall];
  }
  const started = callActorPlan(input, planned, base);
  return input.async ? started : [...started, ...runFollowUps(base, input.previewOutput !== false)];
}

export const callActor: ToolHook<I.ScraperCallActorInput> = {
  plan: callActorDryRun,
  async run(ctx) {
    const { input } = ctx;
    const { name, tool } = splitActorTool(input.actor);
    const build = data<Build>(await ctx.call(ctx.planned[0]!));
    const mcpPath = mcpServerPath(build);
    if (tool) {
      if (!mcpPath) {
        const message = `is "${name}:${tool}", but Actor "${name}" is not an MCP server: call it without ":${tool}"`;
        throw new ServiceError(400, 'invalid_input', `Invalid input for scraper_call_actor: actor ${message}`, [
          { field: 'actor', message },
        ]);
      }
      const result = await ctx.callMcpTool(mcpServerUrl(ctx.base, build.actId, mcpPath), tool, input.input);
      return { actor: name, tool, ...result };
    }
    if (mcpPath) {
      const message = `names Actor "${name}", which is an MCP server: give the tool to call as "${name}:toolName" (scraper_fetch_actor_details with output {mcpTools: true} lists them)`;
      throw new ServiceError(400, 'invalid_input', `Invalid input for scraper_call_actor: actor ${message}`, [
        { field: 'actor', message },
      ]);
    }
    const [, start] = callActorPlan(input, ctx.planned, ctx.base);
    const started = data<Run>(await ctx.call(start!));
    if (input.async) {
      return {
        runId: started.id,
        actorName: name,
        status: started.status,
        startedAt: started.startedAt,
        datasetId: started.defaultDatasetId,
        keyValueStoreId: started.defaultKeyValueStoreId,
        input: input.input,
      };
    }
    const run = await waitForRun(ctx, started, name);
    return finishedRun(ctx, run, name, input.previewOutput !== false, viewFields(build));
  },
};

/**
 * The requests that follow a run's start, for a dry run: the poll (repeated while the run is not finished) and
 * the dataset read, both on ids the start answers.
 */
function runFollowUps(base: Base, preview: boolean): UpstreamRequest[] {
  return [
    get(`${base()}/v2/actor-runs/${FROM_PREVIOUS}?waitForFinish=${WAIT_FOR_FINISH_SECS}`),
    get(
      preview
        ? `${base()}/v2/datasets/${FROM_PREVIOUS}/items?limit=${PREVIEW_FETCH_LIMIT}`
        : `${base()}/v2/datasets/${FROM_PREVIOUS}`,
    ),
  ];
}

export const ragWebBrowser: ToolHook<I.ScraperRagWebBrowserInput> = {
  plan: (input, planned, base) => {
    const { query, maxResults, outputFormats } = input;
    const start = startRunRequest(base, RAG_ACTOR, { query, maxResults, outputFormats });
    // The memory is the Actor's default (from the lookup), capped.
    return [...planned, { ...start, url: `${start.url}?memory=${FROM_PREVIOUS}` }, ...runFollowUps(base, true)];
  },
  async run(ctx) {
    const actor = data<{ defaultRunOptions?: { memoryMbytes?: number } }>(await ctx.call(ctx.planned[0]!));
    const memory = Math.min(actor.defaultRunOptions?.memoryMbytes || RAG_MAX_MEMORY_MB, RAG_MAX_MEMORY_MB);
    const { query, maxResults, outputFormats } = ctx.input;
    const started = data<Run>(
      await ctx.call(startRunRequest(ctx.base, RAG_ACTOR, { query, maxResults, outputFormats }, { memory })),
    );
    const run = await waitForRun(ctx, started, RAG_ACTOR);
    const out = await finishedRun(ctx, run, RAG_ACTOR, true, []);
    return {
      runId: out.runId,
      datasetId: out.datasetId,
      status: out.status,
      statusMessage: out.statusMessage,
      totalItemCount: out.totalItemCount,
      items: out.items,
    };
  },
};

export const getActorRun: ToolHook<I.ScraperGetActorRunInput> = {
  // The run, then its Actor's name and (for a run that succeeded) a preview of its dataset, by ids the run gives.
  plan: (_input, planned, base) => [
    ...planned,
    get(`${base()}/v2/acts/${FROM_PREVIOUS}`),
    get(`${base()}/v2/datasets/${FROM_PREVIOUS}/items?limit=${RUN_PREVIEW_ITEMS}`),
  ],
  async run(ctx) {
    const run = data<Run>(await ctx.call(ctx.planned[0]!));
    let actorName: string | null = null;
    if (run.actId) {
      // Best effort, as upstream: a run of an Actor the token cannot read still has its details.
      const res = await ctx.send(get(`${ctx.base()}/v2/acts/${encodeURIComponent(run.actId)}`)).catch(() => undefined);
      const actor =
        res?.status === 200 ? (res.body as { data?: { username?: string; name?: string } }).data : undefined;
      if (actor?.username && actor.name) actorName = `${actor.username}/${actor.name}`;
    }
    let dataset: Json | undefined;
    if (run.status === 'SUCCEEDED' && run.defaultDatasetId) {
      const res = await sendOk(
        ctx,
        get(
          buildUrl(ctx.base(), `/v2/datasets/${encodeURIComponent(run.defaultDatasetId)}/items`, [
            ['limit', RUN_PREVIEW_ITEMS],
          ]),
        ),
      );
      const items = itemsOf(res.body);
      dataset = {
        datasetId: run.defaultDatasetId,
        totalItemCount: totalOf(res, items.length),
        previewItemCount: items.length,
        previewItems: items,
      };
    }
    return {
      runId: run.id,
      actorId: run.actId ?? null,
      actorName,
      status: run.status,
      statusMessage: run.statusMessage ?? null,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt ?? null,
      stats: run.stats,
      usageTotalUsd: run.usageTotalUsd,
      datasetId: run.defaultDatasetId,
      keyValueStoreId: run.defaultKeyValueStoreId,
      requestQueueId: run.defaultRequestQueueId,
      ...(dataset ? { dataset } : {}),
    };
  },
};

function outputPlan(input: I.ScraperGetActorOutputInput, planned: UpstreamRequest[]): UpstreamRequest[] {
  const fields = parseFields(input.fields);
  if (!fields.length || fields.some((f) => f.includes('.'))) return planned;
  return [{ ...planned[0]!, url: withQuery(planned[0]!.url, 'fields', fields.join(',')) }];
}

export const getActorOutput: ToolHook<I.ScraperGetActorOutputInput> = {
  plan: (input, planned) => outputPlan(input, planned),
  async run(ctx) {
    const { input } = ctx;
    const fields = parseFields(input.fields);
    const res = await sendOk(ctx, outputPlan(input, ctx.planned)[0]!);
    let items: unknown[] = itemsOf(res.body);
    const total = totalOf(res, items.length);
    if (fields.some((f) => f.includes('.'))) items = items.map((item) => valuesByDotKeys(item, fields));
    items = items.map(cleanEmpty).filter((item) => item !== undefined);
    return {
      datasetId: input.datasetId,
      items,
      itemCount: items.length,
      totalItemCount: total,
      offset: input.offset,
      limit: input.limit,
    };
  },
};

function storePlan(input: I.ScraperSearchActorsInput, planned: UpstreamRequest[]): UpstreamRequest[] {
  return [{ ...planned[0]!, url: withQuery(planned[0]!.url, 'limit', (input.limit ?? 5) + STORE_OVERFETCH) }];
}

export const searchActors: ToolHook<I.ScraperSearchActorsInput> = {
  plan: (input, planned) => storePlan(input, planned),
  async run(ctx) {
    const { input } = ctx;
    const limit = input.limit ?? 5;
    const page = data<{ items?: Json[]; total?: number }>(await ctx.call(storePlan(input, ctx.planned)[0]!));
    const actors = (page.items ?? [])
      .filter(
        (a) => (a.currentPricingInfo as { pricingModel?: string } | undefined)?.pricingModel !== 'FLAT_PRICE_PER_MONTH',
      )
      .slice(0, limit);
    return { actors, query: input.keywords ?? '', count: actors.length, offset: input.offset ?? 0, limit };
  },
};

function docsPlan(input: I.ScraperFetchPlatformDocsInput, planned: UpstreamRequest[], base: Base): UpstreamRequest[] {
  // The input pattern admits only https://docs.apify.com/… and https://crawlee.dev/…; the fragment goes.
  const page = new URL(input.url);
  const host = page.hostname === 'crawlee.dev' ? 'crawler_docs' : 'platform_docs';
  const path = page.pathname.replace(/\/+$/, '');
  // A path of a backslash or ".." passes the pattern but parses to the site's root: with no path, "<base>.md" would
  // name another host (crawlee.dev.md).
  if (!path) throw new TemplateValueError('url', 'must name a page of the docs site, not the site itself');
  return [{ ...planned[0]!, host, url: `${base(host)}${path.endsWith('.md') ? path : `${path}.md`}` }];
}

export const fetchPlatformDocs: ToolHook<I.ScraperFetchPlatformDocsInput> = {
  plan: docsPlan,
  async run(ctx) {
    const body = await ctx.call(docsPlan(ctx.input, ctx.planned, ctx.base)[0]!);
    const url = ctx.input.url.split('#')[0]!;
    return { url, content: typeof body === 'string' ? body : JSON.stringify(body) };
  },
};

function detailsPlan(
  input: I.ScraperFetchActorDetailsInput,
  planned: UpstreamRequest[],
  base: Base,
): UpstreamRequest[] {
  const needs = detailNeeds(detailParts(input.output));
  const out: UpstreamRequest[] = [];
  if (needs.actor) out.push(planned[0]!);
  if (needs.build) out.push(get(`${planned[0]!.url}/builds/default`));
  if (needs.store) {
    // Only to pick up the Actor's picture: the store search by its name finds it.
    const slug = input.actor.split('/').pop()!;
    out.push(
      get(
        buildUrl(base(), '/v2/store', [
          ['search', slug],
          ['limit', 5],
        ]),
      ),
    );
  }
  return out;
}

export const fetchActorDetails: ToolHook<I.ScraperFetchActorDetailsInput> = {
  plan: detailsPlan,
  async run(ctx) {
    const { input } = ctx;
    const parts = detailParts(input.output);
    const needs = detailNeeds(parts);
    const requests = detailsPlan(input, ctx.planned, ctx.base);
    let i = 0;
    const actorReq = needs.actor ? requests[i++] : undefined;
    const buildReq = needs.build ? requests[i++] : undefined;
    const storeReq = needs.store ? requests[i] : undefined;
    const [actor, build, store] = await Promise.all([
      actorReq ? ctx.call(actorReq).then((b) => data<Json>(b)) : undefined,
      buildReq ? ctx.call(buildReq).then((b) => data<Build>(b)) : undefined,
      storeReq
        ? ctx.send(storeReq).then(
            (r) => (r.status === 200 ? ((r.body as { data?: { items?: Json[] } }).data?.items ?? []) : []),
            () => [] as Json[],
          )
        : undefined,
    ]);

    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the provider's Actor and build ids are strings
    const id = String(actor?.id ?? build?.actId ?? '');
    // eslint-disable-next-line @typescript-eslint/no-base-to-string, @typescript-eslint/restrict-template-expressions -- the provider's Actor username and name are strings
    const fullName = actor?.username && actor.name ? `${actor.username}/${actor.name}` : input.actor;
    const out: Json = {
      actor: { id, fullName, title: actor?.title ?? null, url: `https://apify.com/${fullName}` },
    };
    if (parts.description) out.description = actor?.description ?? null;
    if (parts.stats) out.stats = actorStats(actor!);
    if (parts.pricing) out.pricing = currentPricing(actor!.pricingInfos);
    if (parts.rating) {
      const stats = (actor!.stats ?? {}) as Json;
      out.rating = stats.actorReviewRating
        ? { average: Number(Number(stats.actorReviewRating).toFixed(2)), count: Number(stats.actorReviewCount ?? 0) }
        : null;
    }
    if (parts.metadata) {
      const picture = store?.find((s) => s.id === actor!.id)?.pictureUrl;
      out.metadata = {
        developer: actor!.username,
        isOfficial: actor!.username === 'apify',
        categories: actor!.categories ?? [],
        modifiedAt: actor!.modifiedAt ?? null,
        isDeprecated: actor!.isDeprecated === true,
        pictureUrl: picture ?? actor!.pictureUrl ?? null,
      };
    }
    const definition = build?.actorDefinition ?? undefined;
    if (parts.inputSchema)
      out.inputSchema = compactInputSchema(definition?.input ?? { type: 'object', properties: {} });
    if (parts.readme) {
      const summary = typeof actor!.readmeSummary === 'string' ? actor!.readmeSummary.trim() : '';
      out.readme = summary || definition?.readme || 'No README provided.';
    }
    if (parts.outputSchema) out.outputSchema = definition?.storages?.dataset ?? null;
    if (parts.mcpTools) {
      const path = mcpServerPath(build!);
      if (!path)
        out.mcpTools = { isMcpServer: false, note: 'This Actor is not an MCP server and exposes no MCP tools.' };
      else {
        const url = mcpServerUrl(ctx.base, build!.actId, path);
        try {
          const tools = await ctx.listMcpTools(url);
          out.mcpTools = {
            isMcpServer: true,
            callAs: `${fullName}:{toolName}`,
            tools: tools.map((t) => ({
              name: t.name,
              description: t.description ?? null,
              inputSchema: t.inputSchema ?? null,
            })),
          };
        } catch (e) {
          // Upstream reports this part's failure and still returns the others.
          const reason = e instanceof ProviderError ? `HTTP ${e.status}` : (e as Error).message;
          out.mcpTools = {
            isMcpServer: true,
            callAs: `${fullName}:{toolName}`,
            error: `Could not list the MCP tools (${reason})`,
          };
        }
      }
    }
    return out;
  },
};

/** The push trigger's webhook: the four terminal run events of one Actor. */
export const RUN_EVENT_TYPES = ['ACTOR.RUN.SUCCEEDED', 'ACTOR.RUN.FAILED', 'ACTOR.RUN.ABORTED', 'ACTOR.RUN.TIMED_OUT'];
/** The header the platform sends with each notification (headersTemplate), holding the instance's secret. */
export const SECRET_HEADER = 'X-Agent-Connector-Secret';

/**
 * `scraper_run_finished` (docs/triggers.md, "Push triggers"): a platform webhook (POST /v2/webhooks) for the
 * Actor's terminal run events, posting the default payload to the instance's ingress URL with the instance's
 * secret in a header; deleted (DELETE /v2/webhooks/{id}) with the instance.
 */
export const scraperRunPush: TriggerPushHook = {
  async register(ctx) {
    const made = (await ctx.call({
      method: 'POST',
      url: `${ctx.base()}/v2/webhooks`,
      headers: { 'content-type': 'application/json' },
      body: {
        eventTypes: RUN_EVENT_TYPES,
        condition: { actorId: String(ctx.config.actor_id) },
        requestUrl: ctx.ingressUrl,
        headersTemplate: JSON.stringify({ [SECRET_HEADER]: ctx.secret }),
        description: `Agent connector trigger ${ctx.instanceId}`,
        isAdHoc: false,
        shouldInterpolateStrings: false,
      },
    })) as { data?: { id?: unknown } };
    const id = made.data?.id;
    if (typeof id !== 'string' || !id) throw new Error('the platform answered the webhook without an id');
    return { state: { webhookId: id }, renewAt: null };
  },
  async unregister(ctx) {
    const id = ctx.state.webhookId;
    if (typeof id !== 'string') return;
    try {
      await ctx.call({ method: 'DELETE', url: `${ctx.base()}/v2/webhooks/${encodeURIComponent(id)}`, headers: {} });
    } catch (e) {
      if (!(e instanceof ProviderError && e.status === 404)) throw e;
    }
  },
};
