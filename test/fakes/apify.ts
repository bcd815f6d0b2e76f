/**
 * A fake scraping platform speaking the Apify REST API v2 wire format, plus the services its docs tools use:
 *
 * - API (`/v2/...`): Bearer tokens checked on every call; `{"data": …}` envelopes; errors as
 *   `{"error": {"type", "message"}}`; Actors addressed by ID or `username~name` under `/v2/acts` and
 *   `/v2/actors`; default builds with `actorDefinition`; runs that start READY and advance one state on each
 *   read (`GET /v2/actor-runs/{id}`, with `waitForFinish` recorded); input validated against the Actor's
 *   input schema when a run starts (400 `invalid-input`); datasets whose items come back as a raw array with
 *   the `X-Apify-Pagination-*` headers, `fields`, `offset`, `limit` and `clean`; the store with its pricing.
 * - Actors in Standby mode that are MCP servers: Streamable HTTP (initialize with a session id, tools/list,
 *   tools/call, answers as JSON or text/event-stream) on `<actorId>.localhost:<port>`; see
 *   `routeLocalhostSubdomains`, which makes those names reach this server as RFC 6761 says they should.
 * - Two Algolia DocSearch applications (`/algolia/<appId>/1/indexes/*\/queries`), checking the application id
 *   and search-only key headers, filters, facet filters, offset/length and attributesToRetrieve.
 * - The two docs sites, serving pages as Markdown at `<page>.md` (`/docs-site/...`, `/crawlee-site/...`).
 *
 * Every request is recorded with its credentials so tests can check what was sent where.
 */
import dns from 'node:dns';
import express, { type NextFunction, type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';
import { asText } from '../helpers/text.ts';

type Json = Record<string, unknown>;

export const PLATFORM_DOCS_APP = 'N8EOCSBQGH';
export const CRAWLER_DOCS_APP = '5JC94MPMLY';

export interface FakeMcpTool {
  name: string;
  description: string;
  inputSchema: Json;
  call(args: Json): string;
}

export interface FakeActor {
  id: string;
  username: string;
  name: string;
  title: string;
  description: string;
  categories: string[];
  readmeSummary?: string;
  readme: string;
  inputSchema?: Json;
  /** `actorDefinition.storages.dataset`: the dataset schema with its views. */
  datasetSchema?: Json;
  /** `actorDefinition.webServerMcpPath`: set for Actors that are MCP servers. */
  mcpPath?: string;
  mcpTools?: FakeMcpTool[];
  defaultMemoryMbytes: number;
  pricingModel: 'FREE' | 'PAY_PER_EVENT' | 'PRICE_PER_DATASET_ITEM' | 'FLAT_PRICE_PER_MONTH';
  totalUsers: number;
  rating?: number;
  /** The dataset items a run produces from its input. */
  produce(input: Json): Json[];
  /** Run reads until the run is terminal (default 2: READY → RUNNING → final). Infinity: never. */
  pollsToFinish?: number;
  finalStatus?: 'SUCCEEDED' | 'FAILED';
}

export interface FakeRun {
  id: string;
  actId: string;
  userId: string;
  status: string;
  statusMessage: string | null;
  startedAt: string;
  finishedAt: string | null;
  input: Json;
  options: { memoryMbytes: number; timeoutSecs: number; build: string };
  defaultDatasetId: string;
  defaultKeyValueStoreId: string;
  defaultRequestQueueId: string;
  reads: number;
}

export interface ReceivedRequest {
  method: string;
  host: string;
  path: string;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

export interface DocsRecord {
  objectID: string;
  url: string;
  url_without_anchor: string;
  anchor?: string;
  content: string;
  hierarchy: Record<string, string | null>;
  type: string;
  version?: string;
  language?: string;
  docusaurus_tag?: string;
}

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'TIMED-OUT', 'ABORTED']);
const MEMORY_VALUES = new Set([128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]);

function apiError(res: Response, status: number, type: string, message: string) {
  res.status(status).json({ error: { type, message } });
}

/** The subset of the input-schema rules the platform enforces on run start that the tests rely on. */
function inputProblem(schema: Json | undefined, input: unknown): string | undefined {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return 'Input must be a JSON object';
  if (!schema) return undefined;
  const given = input as Json;
  for (const field of (schema.required as string[] | undefined) ?? []) {
    if (given[field] === undefined) return `Field input.${field} is required`;
  }
  const props = (schema.properties ?? {}) as Record<string, Json>;
  for (const [field, value] of Object.entries(given)) {
    const p = props[field];
    if (!p) continue;
    const kind = Array.isArray(value)
      ? 'array'
      : value === null
        ? 'null'
        : Number.isInteger(value)
          ? 'integer'
          : typeof value;
    const want = String(p.type);
    if (!(kind === want || (want === 'number' && kind === 'integer'))) return `Field input.${field} must be ${want}`;
    if (typeof value === 'number' && typeof p.minimum === 'number' && value < p.minimum)
      return `Field input.${field} must be >= ${p.minimum}`;
    if (typeof value === 'number' && typeof p.maximum === 'number' && value > p.maximum)
      return `Field input.${field} must be <= ${p.maximum}`;
    const itemsEnum = (p.items as Json | undefined)?.enum as unknown[] | undefined;
    if (Array.isArray(value) && itemsEnum && value.some((v) => !itemsEnum.includes(v)))
      return `Field input.${field} contains a value that is not allowed`;
  }
  return undefined;
}

function words(s: string): string[] {
  return s.toLowerCase().split(/\s+/).filter(Boolean);
}

export class FakeApify {
  /** Token → user id. */
  readonly tokens = new Map<string, string>();
  readonly actors = new Map<string, FakeActor>();
  readonly runs = new Map<string, FakeRun>();
  readonly datasets = new Map<string, { id: string; userId: string; items: Json[] }>();
  readonly requests: ReceivedRequest[] = [];
  /** Search-only keys of the two docs search applications. */
  /** The public search-only keys the docs sites publish, per application (crawlee-js and crawlee-py share an application). */
  readonly searchKeys: Record<string, string[]> = {
    [PLATFORM_DOCS_APP]: ['e97714a64e2b4b8b8fe0b01cd8592870'],
    [CRAWLER_DOCS_APP]: ['267679200b833c2ca1255ab276731869', '878493fcd7001e3c179b6db6796a999b'],
  };
  readonly docsIndexes = new Map<string, DocsRecord[]>();
  readonly docsPages = new Map<string, string>();
  private mcpSessions = new Set<string>();
  private seq = 0;
  private listening!: Listening;

  get url(): string {
    return this.listening.url;
  }

  get port(): number {
    return Number(new URL(this.url).port);
  }

  /** The `api_hosts` a connection sets to reach this fake instead of the real hosts. */
  get hosts(): Record<string, string> {
    return {
      standby: `http://localhost:${this.port}`,
      platform_docs: `${this.url}/docs-site`,
      crawler_docs: `${this.url}/crawlee-site`,
      platform_docs_search: `${this.url}/algolia/${PLATFORM_DOCS_APP}`,
      crawler_docs_search: `${this.url}/algolia/${CRAWLER_DOCS_APP}`,
    };
  }

  private nextId(prefix: string): string {
    this.seq++;
    return `${prefix}${String(this.seq).padStart(17 - prefix.length, '0')}`;
  }

  addToken(token: string, userId = 'userA1b2c3d4e5f6g7'): void {
    this.tokens.set(token, userId);
  }

  addActor(actor: FakeActor): FakeActor {
    this.actors.set(actor.id, actor);
    return actor;
  }

  actorByRef(ref: string): FakeActor | undefined {
    if (this.actors.has(ref)) return this.actors.get(ref);
    const m = /^([^~/]+)~([^~/]+)$/.exec(ref);
    return m ? [...this.actors.values()].find((a) => a.username === m[1] && a.name === m[2]) : undefined;
  }

  /** Requests of one kind, for assertions. */
  sent(method: string, pathPattern: RegExp): ReceivedRequest[] {
    return this.requests.filter((r) => r.method === method && pathPattern.test(r.path));
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use(express.json({ limit: '2mb', type: ['application/json', 'application/*+json'] }));
    app.use((req, _res, next) => {
      this.requests.push({
        method: req.method,
        host: String(req.headers.host ?? ''),
        path: req.path,
        query: req.query,
        body: req.body,
        headers: { ...req.headers },
      });
      next();
    });
    app.use((req, res, next) => this.standby(req, res, next));
    app.use('/algolia/:app', (req, res, next) => this.algolia(req, res, next));
    app.get('/docs-site/*page', (req, res) =>
      this.docsPage(res, 'docs.apify.com', req.path.slice('/docs-site'.length)),
    );
    app.get('/crawlee-site/*page', (req, res) =>
      this.docsPage(res, 'crawlee.dev', req.path.slice('/crawlee-site'.length)),
    );
    const api = express.Router();
    api.use((req, res, next) => this.authenticate(req, res, next));
    this.routes(api);
    app.use('/v2', api);
    app.use((_req, res) =>
      apiError(res, 404, 'page-not-found', 'We have bad news: there is no API endpoint at this URL.'),
    );
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  private userOf(req: Request): string {
    return (req as Request & { userId: string }).userId;
  }

  private authenticate(req: Request, res: Response, next: NextFunction) {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    const userId = m ? this.tokens.get(m[1]!) : undefined;
    if (!m) return apiError(res, 401, 'token-not-provided', 'Authentication token was not provided');
    if (!userId) return apiError(res, 401, 'token-not-valid', 'Authentication token is not valid.');
    (req as Request & { userId: string }).userId = userId;
    next();
  }

  private actorObject(a: FakeActor): Json {
    return {
      id: a.id,
      userId: `owner${a.username}`,
      name: a.name,
      username: a.username,
      title: a.title,
      description: a.description,
      categories: a.categories,
      isPublic: true,
      isDeprecated: false,
      createdAt: '2024-01-10T08:00:00.000Z',
      modifiedAt: '2026-03-01T12:00:00.000Z',
      readmeSummary: a.readmeSummary,
      pictureUrl: null,
      stats: {
        totalBuilds: 12,
        totalRuns: a.totalUsers * 40,
        totalUsers: a.totalUsers,
        totalUsers7Days: Math.round(a.totalUsers / 20),
        totalUsers30Days: Math.round(a.totalUsers / 5),
        totalUsers90Days: Math.round(a.totalUsers / 2),
        totalMetamorphs: 0,
        lastRunStartedAt: '2026-04-01T10:00:00.000Z',
        publicActorRunStats30Days: { ABORTED: 1, FAILED: 3, SUCCEEDED: 96, TIMED_OUT: 0, TOTAL: 100 },
        bookmarkCount: 42,
        ...(a.rating ? { actorReviewRating: a.rating, actorReviewCount: 17 } : {}),
      },
      pricingInfos: [
        {
          pricingModel: 'FREE',
          startedAt: '2023-01-01T00:00:00.000Z',
          createdAt: '2023-01-01T00:00:00.000Z',
          apifyMarginPercentage: 0,
        },
        {
          pricingModel: a.pricingModel,
          startedAt: '2025-01-01T00:00:00.000Z',
          createdAt: '2024-12-01T00:00:00.000Z',
          apifyMarginPercentage: 0.2,
          ...(a.pricingModel === 'FLAT_PRICE_PER_MONTH' ? { pricePerUnitUsd: 30, trialMinutes: 1440 } : {}),
        },
        {
          pricingModel: 'PAY_PER_EVENT',
          startedAt: '2099-01-01T00:00:00.000Z',
          createdAt: '2026-01-01T00:00:00.000Z',
          apifyMarginPercentage: 0.2,
        },
      ],
      defaultRunOptions: { build: 'latest', memoryMbytes: a.defaultMemoryMbytes, timeoutSecs: 3600 },
      versions: [{ versionNumber: '1.0', sourceType: 'GIT_REPO', buildTag: 'latest' }],
    };
  }

  private buildObject(a: FakeActor): Json {
    return {
      id: `build${a.id.slice(5)}`,
      actId: a.id,
      userId: `owner${a.username}`,
      startedAt: '2026-03-01T11:00:00.000Z',
      finishedAt: '2026-03-01T11:02:00.000Z',
      status: 'SUCCEEDED',
      buildNumber: '1.0.7',
      meta: { origin: 'WEB' },
      actorDefinition: {
        actorSpecification: 1,
        name: a.name,
        version: '1.0',
        buildTag: 'latest',
        readme: a.readme,
        ...(a.inputSchema ? { input: a.inputSchema } : {}),
        ...(a.datasetSchema ? { storages: { dataset: a.datasetSchema } } : {}),
        ...(a.mcpPath ? { webServerMcpPath: a.mcpPath, usesStandbyMode: true } : {}),
      },
    };
  }

  private runObject(r: FakeRun): Json {
    const { reads: _reads, input: _input, ...run } = r;
    const finished = TERMINAL.has(r.status);
    return {
      ...run,
      buildId: `build${r.actId.slice(5)}`,
      buildNumber: '1.0.7',
      exitCode: finished ? (r.status === 'SUCCEEDED' ? 0 : 1) : null,
      meta: { origin: 'API' },
      stats: {
        computeUnits: finished ? 0.0125 : 0,
        durationMillis: finished ? 45000 : 0,
        runTimeSecs: finished ? 45 : 0,
        memAvgBytes: 1.5e8,
      },
      usageTotalUsd: finished ? 0.005 : 0,
    };
  }

  private routes(r: express.Router) {
    r.get('/users/me', (req, res) => void res.json({ data: { id: this.userOf(req), username: 'jane-doe' } }));

    for (const prefix of ['/acts', '/actors']) {
      r.get(`${prefix}/:actorId`, (req, res) => {
        const actor = this.actorByRef(String(req.params.actorId));
        if (!actor) return apiError(res, 404, 'record-not-found', 'Actor was not found');
        res.json({ data: this.actorObject(actor) });
      });
      r.get(`${prefix}/:actorId/builds/default`, (req, res) => {
        const actor = this.actorByRef(String(req.params.actorId));
        if (!actor) return apiError(res, 404, 'record-not-found', 'Actor was not found');
        res.json({ data: this.buildObject(actor) });
      });
      r.post(`${prefix}/:actorId/runs`, (req, res) => this.startRun(req, res));
    }

    r.get('/actor-runs/:runId', (req, res) => {
      const run = this.runs.get(String(req.params.runId));
      if (!run) return apiError(res, 404, 'record-not-found', 'Actor run was not found');
      const wait = req.query.waitForFinish;
      if (wait !== undefined && !/^\d+$/.test(asText(wait)))
        return apiError(res, 400, 'invalid-parameter', 'Parameter waitForFinish must be a non-negative integer');
      this.advance(run);
      res.json({ data: this.runObject(run) });
    });

    r.get('/datasets/:datasetId', (req, res) => {
      const ds = this.datasets.get(String(req.params.datasetId));
      if (!ds) return apiError(res, 404, 'record-not-found', 'Dataset was not found');
      res.json({
        data: {
          id: ds.id,
          userId: ds.userId,
          itemCount: ds.items.length,
          cleanItemCount: ds.items.length,
          createdAt: '2026-04-01T10:00:00.000Z',
        },
      });
    });

    r.get('/datasets/:datasetId/items', (req, res) => {
      const ds = this.datasets.get(String(req.params.datasetId));
      if (!ds) return apiError(res, 404, 'record-not-found', 'Dataset was not found');
      const offset = req.query.offset === undefined ? 0 : Number(req.query.offset);
      const limit = req.query.limit === undefined ? Infinity : Number(req.query.limit);
      if (!Number.isInteger(offset) || offset < 0 || (limit !== Infinity && (!Number.isInteger(limit) || limit < 0))) {
        return apiError(res, 400, 'invalid-parameter', 'Parameters offset and limit must be non-negative integers');
      }
      const fields = req.query.fields === undefined ? undefined : asText(req.query.fields).split(',');
      // The API projects top-level fields only; a dotted name here means the caller mapped fields wrongly.
      if (fields?.some((f) => f.includes('.')))
        return apiError(res, 400, 'invalid-parameter', 'Parameter fields supports top-level fields only');
      const clean = req.query.clean === 'true' || req.query.clean === '1';
      let items = ds.items;
      if (clean) {
        items = items
          .map((i) => Object.fromEntries(Object.entries(i).filter(([k]) => !k.startsWith('#'))))
          .filter((i) => Object.keys(i).length > 0);
      }
      const page = items.slice(offset, offset + limit);
      const projected = fields
        ? page.map((i) => Object.fromEntries(fields.filter((f) => f in i).map((f) => [f, i[f]])))
        : page;
      res.setHeader('X-Apify-Pagination-Offset', String(offset));
      res.setHeader('X-Apify-Pagination-Limit', String(limit === Infinity ? 250000 : limit));
      res.setHeader('X-Apify-Pagination-Count', String(projected.length));
      res.setHeader('X-Apify-Pagination-Total', String(items.length));
      res.json(projected);
    });

    r.get('/store', (req, res) => {
      const limit = req.query.limit === undefined ? 1000 : Number(req.query.limit);
      const offset = req.query.offset === undefined ? 0 : Number(req.query.offset);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000 || !Number.isInteger(offset) || offset < 0) {
        return apiError(res, 400, 'invalid-parameter', 'limit must be 1-1000 and offset non-negative');
      }
      const terms = words(asText(req.query.search ?? ''));
      const found = [...this.actors.values()]
        .filter((a) =>
          terms.every((t) => `${a.username} ${a.name} ${a.title} ${a.description}`.toLowerCase().includes(t)),
        )
        .sort((a, b) => b.totalUsers - a.totalUsers);
      const items = found.slice(offset, offset + limit).map((a) => ({
        id: a.id,
        title: a.title,
        name: a.name,
        username: a.username,
        userFullName: a.username,
        description: a.description,
        categories: a.categories,
        notice: null,
        pictureUrl: `https://images.apifyusercontent.com/${a.id}.png`,
        url: `https://apify.com/${a.username}/${a.name}`,
        stats: {
          totalUsers: a.totalUsers,
          totalUsers30Days: Math.round(a.totalUsers / 5),
          totalBuilds: 12,
          totalRuns: a.totalUsers * 40,
        },
        currentPricingInfo: {
          pricingModel: a.pricingModel,
          ...(a.pricingModel === 'FLAT_PRICE_PER_MONTH' ? { pricePerUnitUsd: 30, trialMinutes: 1440 } : {}),
        },
        ...(a.rating ? { actorReviewRating: a.rating, actorReviewCount: 17 } : {}),
        bookmarkCount: 42,
        readmeSummary: a.readmeSummary,
      }));
      res.json({ data: { total: found.length, count: items.length, offset, limit, desc: false, items } });
    });
  }

  private startRun(req: Request, res: Response) {
    const actor = this.actorByRef(String(req.params.actorId));
    if (!actor) return apiError(res, 404, 'record-not-found', 'Actor was not found');
    if (!String(req.headers['content-type'] ?? '').includes('application/json')) {
      return apiError(res, 415, 'unsupported-content-type', 'The input must be sent as application/json');
    }
    const memory = req.query.memory === undefined ? actor.defaultMemoryMbytes : Number(req.query.memory);
    if (!MEMORY_VALUES.has(memory))
      return apiError(res, 400, 'invalid-parameter', 'Memory must be a power of 2 between 128 and 32768 MB');
    const timeout = req.query.timeout === undefined ? 3600 : Number(req.query.timeout);
    if (!Number.isInteger(timeout) || timeout < 0)
      return apiError(res, 400, 'invalid-parameter', 'Timeout must be a non-negative integer');
    const problem = inputProblem(actor.inputSchema, req.body);
    if (problem) return apiError(res, 400, 'invalid-input', `Input is not valid: ${problem}`);
    const userId = this.userOf(req);
    const run: FakeRun = {
      id: this.nextId('run'),
      actId: actor.id,
      userId,
      status: 'READY',
      statusMessage: null,
      startedAt: new Date().toISOString(),
      finishedAt: null,
      input: req.body as Json,
      options: { memoryMbytes: memory, timeoutSecs: timeout, build: 'latest' },
      defaultDatasetId: this.nextId('ds'),
      defaultKeyValueStoreId: this.nextId('kvs'),
      defaultRequestQueueId: this.nextId('rq'),
      reads: 0,
    };
    this.runs.set(run.id, run);
    this.datasets.set(run.defaultDatasetId, { id: run.defaultDatasetId, userId, items: [] });
    res.status(201).setHeader('Location', `https://api.apify.com/v2/actor-runs/${run.id}`);
    res.json({ data: this.runObject(run) });
  }

  /** One read moves a run one step: READY → RUNNING → … → its final status (items written then). */
  private advance(run: FakeRun) {
    if (TERMINAL.has(run.status)) return;
    const actor = this.actors.get(run.actId)!;
    run.reads++;
    if (run.reads < (actor.pollsToFinish ?? 2)) {
      run.status = 'RUNNING';
      run.statusMessage = `Crawled ${run.reads} pages`;
      return;
    }
    run.status = actor.finalStatus ?? 'SUCCEEDED';
    run.finishedAt = new Date().toISOString();
    run.statusMessage = run.status === 'SUCCEEDED' ? 'Finished' : 'The Actor process exited with code 1';
    this.datasets.get(run.defaultDatasetId)!.items.push(...actor.produce(run.input));
  }

  // ---- MCP servers of Standby Actors ---------------------------------------------------------------------

  private standby(req: Request, res: Response, next: NextFunction) {
    const host = /^([a-z0-9]+)\.localhost(:\d+)?$/i.exec(String(req.headers.host ?? ''));
    if (!host) return next();
    const actor = [...this.actors.values()].find((a) => a.id.toLowerCase() === host[1]!.toLowerCase());
    const paths = (actor?.mcpPath ?? '').split(',').map((p) => p.trim());
    if (!actor || !paths.includes(req.path)) return void res.status(404).type('text').send('Not found');
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!m || !this.tokens.has(m[1]!))
      return void res
        .status(401)
        .json({ error: { type: 'token-not-valid', message: 'Authentication token is not valid.' } });
    if (req.method === 'DELETE') {
      this.mcpSessions.delete(String(req.headers['mcp-session-id']));
      return void res.status(200).end();
    }
    if (req.method !== 'POST') return void res.status(405).end();
    const msg = req.body as { jsonrpc?: string; id?: number | string; method?: string; params?: Json };
    if (msg?.jsonrpc !== '2.0' || typeof msg.method !== 'string')
      return void res
        .status(400)
        .json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } });
    if (msg.method === 'initialize') {
      const session = `sess-${this.nextId('')}`;
      this.mcpSessions.add(session);
      res.setHeader('mcp-session-id', session);
      return void res.json({
        jsonrpc: '2.0',
        id: msg.id,
        result: {
          protocolVersion: '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: actor.name, version: '1.0.0' },
        },
      });
    }
    if (!this.mcpSessions.has(String(req.headers['mcp-session-id'])))
      return void res
        .status(404)
        .json({ jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32001, message: 'Session not found' } });
    if (msg.id === undefined) return void res.status(202).end();
    const tools = actor.mcpTools ?? [];
    let reply: Json;
    if (msg.method === 'tools/list') {
      reply = {
        jsonrpc: '2.0',
        id: msg.id,
        result: { tools: tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })) },
      };
    } else if (msg.method === 'tools/call') {
      const tool = tools.find((t) => t.name === msg.params?.name);
      reply = tool
        ? {
            jsonrpc: '2.0',
            id: msg.id,
            result: { content: [{ type: 'text', text: tool.call((msg.params?.arguments ?? {}) as Json) }] },
          }
        : { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: `Unknown tool: ${String(msg.params?.name)}` } };
    } else {
      reply = { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } };
    }
    res.setHeader('content-type', 'text/event-stream');
    res.send(`event: message\ndata: ${JSON.stringify(reply)}\n\n`);
  }

  // ---- Algolia DocSearch ----------------------------------------------------------------------------------

  addDocsRecords(index: string, records: DocsRecord[]): void {
    this.docsIndexes.set(index, records);
  }

  private algolia(req: Request, res: Response, next: NextFunction) {
    if (req.method !== 'POST' || req.path !== '/1/indexes/*/queries') return next();
    const app = String(req.params.app);
    if (
      req.headers['x-algolia-application-id'] !== app ||
      !this.searchKeys[app]?.includes(String(req.headers['x-algolia-api-key']))
    ) {
      return void res.status(403).json({ message: 'Invalid Application-ID or API key', status: 403 });
    }
    const body = req.body as { requests?: Json[] };
    if (!Array.isArray(body?.requests)) return void res.status(400).json({ message: 'Missing requests', status: 400 });
    const results: Json[] = [];
    for (const q of body.requests) {
      const index = this.docsIndexes.get(String(q.indexName));
      if (!index) return void res.status(404).json({ message: 'Index does not exist', status: 404 });
      const terms = words(asText(q.query ?? ''));
      const filters = asText(q.filters ?? '')
        .split(' AND ')
        .filter(Boolean)
        .map((f) => f.split(':') as [string, string]);
      const facets = (q.facetFilters as Array<string | string[]> | undefined) ?? [];
      const facetMatch = (r: DocsRecord, f: string) => {
        const [k, v] = f.split(':') as [keyof DocsRecord, string];
        return asText(r[k]) === v;
      };
      const hits = index.filter(
        (r) =>
          terms.every((t) => `${r.content} ${Object.values(r.hierarchy).join(' ')}`.toLowerCase().includes(t)) &&
          filters.every(([k, v]) => String((r as unknown as Json)[k]) === v) &&
          facets.every((f) => (Array.isArray(f) ? f.some((x) => facetMatch(r, x)) : facetMatch(r, f))),
      );
      const offset = Number(q.offset ?? 0);
      const length = Number(q.length ?? 20);
      if (q.length !== undefined && (!Number.isInteger(length) || length < 0 || length > 1000))
        return void res.status(400).json({ message: 'length must be 0-1000', status: 400 });
      const retrieve = q.attributesToRetrieve as string[] | undefined;
      const page = hits
        .slice(offset, offset + length)
        .map((r) =>
          retrieve
            ? Object.fromEntries(
                [...retrieve, 'objectID'].filter((k) => k in r).map((k) => [k, (r as unknown as Json)[k]]),
              )
            : r,
        );
      results.push({
        hits: page,
        nbHits: hits.length,
        offset,
        length,
        query: q.query,
        index: q.indexName,
        processingTimeMS: 1,
        exhaustiveNbHits: true,
      });
    }
    res.json({ results });
  }

  // ---- Docs sites -----------------------------------------------------------------------------------------

  addDocsPage(site: 'docs.apify.com' | 'crawlee.dev', path: string, markdown: string): void {
    this.docsPages.set(`${site}${path}`, markdown);
  }

  private docsPage(res: Response, site: string, path: string) {
    const page = path.endsWith('.md') ? this.docsPages.get(`${site}${path.slice(0, -3)}`) : undefined;
    if (page === undefined)
      return void res.status(404).type('html').send('<!doctype html><title>Page Not Found</title>');
    res.type('text/markdown; charset=utf-8').send(page);
  }
}

/**
 * Makes every `<name>.localhost` resolve to 127.0.0.1 in this process (RFC 6761 reserves the name for
 * loopback), so a request to an Actor's Standby host `<actorId>.localhost:<port>` reaches the fake. Returns
 * the function that restores the resolver.
 */
export function routeLocalhostSubdomains(): () => void {
  const original = dns.lookup;
  const patched = (hostname: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    const opts = (
      typeof options === 'function' ? {} : typeof options === 'number' ? { family: options } : (options ?? {})
    ) as { all?: boolean };
    if (/\.localhost$/i.test(hostname)) {
      process.nextTick(() => (opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)));
      return;
    }
    return (original as (...args: unknown[]) => void)(hostname, options, callback);
  };
  (dns as { lookup: unknown }).lookup = patched;
  return () => {
    (dns as { lookup: unknown }).lookup = original;
  };
}

/** Fixture IDs of the seeded catalogue. */
export const ACTORS = {
  crawler: 'aYG0l9s7dbB7j3gbS',
  rag: '3ox4R101TgZz67sLr',
  weatherMcp: 'mcpW3ath3rS3rv3r1',
  slow: 'sLowCrawl3rXyZ123',
  flaky: 'fLakyScrap3rAbC12',
} as const;

const LONG_DESCRIPTION = `URLs to start with. ${'The crawler follows links from these pages that stay under the same path. '.repeat(10)}`;

/**
 * A small realistic catalogue: a website crawler (input schema, dataset views), the RAG web browser, an MCP
 * server Actor, an Actor that never finishes, one that fails, store neighbours including rentals, both docs
 * search indexes and a few docs pages.
 */
export function seedCatalogue(fake: FakeApify): void {
  fake.addActor({
    id: ACTORS.crawler,
    username: 'apify',
    name: 'website-content-crawler',
    title: 'Website Content Crawler',
    description: 'Crawl websites and extract text content to feed AI models.',
    categories: ['AI', 'DEVELOPER_TOOLS'],
    readmeSummary: 'Crawls a website and returns the text of every page.',
    readme: '# Website Content Crawler\n\nThe full README.',
    inputSchema: {
      title: 'Input',
      type: 'object',
      schemaVersion: 1,
      properties: {
        startUrls: {
          title: 'Start URLs',
          type: 'array',
          description: LONG_DESCRIPTION,
          editor: 'requestListSources',
          prefill: [{ url: 'https://docs.apify.com' }],
        },
        maxCrawlPages: {
          title: 'Max pages',
          type: 'integer',
          minimum: 1,
          default: 9999999,
          description: 'Pages to crawl per start URL.',
          editor: 'number',
        },
        bigPages: {
          title: 'Big pages',
          type: 'boolean',
          default: false,
          description: 'Make each page large (for previews).',
        },
      },
      required: ['startUrls'],
    },
    datasetSchema: {
      actorSpecification: 1,
      fields: { type: 'object', properties: { url: { type: 'string' }, text: { type: 'string' } } },
      views: {
        overview: {
          title: 'Overview',
          transformation: { fields: ['url', 'text'] },
          display: { component: 'table', properties: { url: { label: 'URL' }, text: { label: 'Text' } } },
        },
      },
    },
    defaultMemoryMbytes: 4096,
    pricingModel: 'PAY_PER_EVENT',
    totalUsers: 50000,
    rating: 4.567,
    produce(input) {
      const starts = (input.startUrls as Array<{ url: string }>) ?? [];
      const perUrl = Number(input.maxCrawlPages ?? 1);
      return starts.flatMap(({ url }) =>
        Array.from({ length: perUrl }, (_, i) => ({
          url: i ? `${url}/page-${i}` : url,
          crawl: { loadedUrl: url, httpStatusCode: i === 2 ? 404 : 200, depth: i ? 1 : 0 },
          metadata: { title: `Page ${i}`, description: '', languageCode: null, tags: [] },
          text: `Text of page ${i}`,
          markdown: input.bigPages ? `# Page ${i}\n\n${'lorem ipsum '.repeat(250)}` : `# Page ${i}`,
          '#debug': { requestId: `req-${i}` },
        })),
      );
    },
  });
  fake.addActor({
    id: ACTORS.rag,
    username: 'apify',
    name: 'rag-web-browser',
    title: 'RAG Web Browser',
    description: 'Web browser for AI agents: search the web and return page content as Markdown.',
    categories: ['AI'],
    readme: '# RAG Web Browser',
    inputSchema: {
      title: 'RAG Web Browser',
      type: 'object',
      schemaVersion: 1,
      properties: {
        query: { title: 'Search term or URL', type: 'string', description: 'Keywords or a URL.' },
        maxResults: { title: 'Maximum results', type: 'integer', minimum: 1, maximum: 100, default: 3 },
        outputFormats: {
          title: 'Output formats',
          type: 'array',
          items: { type: 'string', enum: ['text', 'markdown', 'html'] },
          default: ['markdown'],
        },
      },
      required: ['query'],
    },
    defaultMemoryMbytes: 8192,
    pricingModel: 'PAY_PER_EVENT',
    totalUsers: 30000,
    produce(input) {
      const query = String(input.query);
      const isUrl = /^https?:\/\//.test(query);
      const n = isUrl ? 1 : Number(input.maxResults ?? 3);
      const formats = (input.outputFormats as string[] | undefined) ?? ['markdown'];
      return Array.from({ length: n }, (_, i) => {
        const url = isUrl ? query : `https://example.com/result-${i}`;
        return {
          crawl: { httpStatusCode: 200, requestStatus: 'handled' },
          searchResult: isUrl ? null : { title: `Result ${i} for ${query}`, url, description: 'A result' },
          metadata: { url, title: `Result ${i}` },
          ...(formats.includes('markdown') ? { markdown: `# Result ${i}` } : {}),
          ...(formats.includes('text') ? { text: `Result ${i}` } : {}),
          ...(formats.includes('html') ? { html: `<h1>Result ${i}</h1>` } : {}),
        };
      });
    },
  });
  fake.addActor({
    id: ACTORS.weatherMcp,
    username: 'acme',
    name: 'weather-mcp-server',
    title: 'Weather MCP Server',
    description: 'Current weather as an MCP server.',
    categories: ['MCP_SERVERS'],
    readme: '# Weather MCP server',
    mcpPath: '/sse, /mcp',
    mcpTools: [
      {
        name: 'get_current_weather',
        description: 'Current weather of a city.',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        call: (args) => `Weather in ${String(args.city)}: 21 °C, clear`,
      },
    ],
    defaultMemoryMbytes: 512,
    pricingModel: 'FREE',
    totalUsers: 900,
    produce: () => [],
  });
  fake.addActor({
    id: ACTORS.slow,
    username: 'acme',
    name: 'slow-crawler',
    title: 'Slow crawler',
    description: 'Runs for a very long time.',
    categories: [],
    readme: '# Slow',
    defaultMemoryMbytes: 1024,
    pricingModel: 'FREE',
    totalUsers: 10,
    pollsToFinish: Infinity,
    produce: () => [],
  });
  fake.addActor({
    id: ACTORS.flaky,
    username: 'acme',
    name: 'flaky-scraper',
    title: 'Flaky scraper',
    description: 'Fails after a partial result.',
    categories: [],
    readme: '# Flaky',
    defaultMemoryMbytes: 1024,
    pricingModel: 'FREE',
    totalUsers: 10,
    pollsToFinish: 1,
    finalStatus: 'FAILED',
    produce: () => [{ url: 'https://example.com', partial: true }],
  });
  const instagram: Array<[string, string, FakeActor['pricingModel'], number]> = [
    ['rentco', 'instagram-rental-scraper', 'FLAT_PRICE_PER_MONTH', 9000],
    ['rentco', 'instagram-rental-pro', 'FLAT_PRICE_PER_MONTH', 8000],
    ['apify', 'instagram-scraper', 'PAY_PER_EVENT', 7000],
    ['apify', 'instagram-post-scraper', 'PRICE_PER_DATASET_ITEM', 6000],
    ['acme', 'instagram-free', 'FREE', 100],
  ];
  instagram.forEach(([username, name, pricingModel, totalUsers], i) =>
    fake.addActor({
      id: `iNstagram00000000${i}`.slice(-17),
      username,
      name,
      title: name.replace(/-/g, ' '),
      description: `Scrape Instagram posts and profiles (${name}).`,
      categories: ['SOCIAL_MEDIA'],
      readme: `# ${name}`,
      defaultMemoryMbytes: 1024,
      pricingModel,
      totalUsers,
      produce: () => [],
    }),
  );

  const apifyDocs = (
    objectID: string,
    path: string,
    anchor: string | undefined,
    lvl1: string,
    content: string,
    version = 'latest',
  ): DocsRecord => ({
    objectID,
    url: `https://docs.apify.com${path}${anchor ? `#${anchor}` : ''}`,
    url_without_anchor: `https://docs.apify.com${path}`,
    ...(anchor ? { anchor } : {}),
    content,
    hierarchy: { lvl0: 'Platform', lvl1, lvl2: null },
    type: 'content',
    version,
  });
  fake.addDocsRecords('test_test_apify_sdk', [
    apifyDocs(
      'a1',
      '/platform/actors/development/actor-definition/input-schema',
      undefined,
      'Input schema',
      'The input schema defines the input of an Actor.',
    ),
    apifyDocs(
      'a2',
      '/platform/actors/running/input-and-output',
      'input',
      'Input and output',
      'Each Actor accepts an input object that its input schema describes.',
    ),
    apifyDocs(
      'a3',
      '/platform/actors/development/actor-definition/input-schema/specification',
      undefined,
      'Input schema specification',
      'Input schema fields: title, type, editor.',
    ),
    apifyDocs('a4', '/legacy/input-schema', undefined, 'Old input schema', 'An input schema of an old version.', '2.0'),
    apifyDocs('a5', '/platform/storage/dataset', undefined, 'Dataset', 'Datasets store the results of an Actor run.'),
  ]);
  const crawleeDocs = (
    index: string,
    objectID: string,
    url: string,
    tag: string,
    content: string,
    type = 'lvl1',
    language = 'en',
  ): [string, DocsRecord] => [
    index,
    {
      objectID,
      url,
      url_without_anchor: url,
      content,
      hierarchy: { lvl0: 'Docs', lvl1: content.split('.')[0]!, lvl2: null },
      type,
      language,
      docusaurus_tag: tag,
    },
  ];
  const crawlee = [
    crawleeDocs(
      'crawlee',
      'c1',
      'https://crawlee.dev/js/docs/guides/request-queue',
      'docs-default-3.15',
      'Request queue stores the URLs to crawl.',
    ),
    crawleeDocs(
      'crawlee',
      'c2',
      'https://crawlee.dev/js/api/playwright-crawler',
      'default',
      'PlaywrightCrawler crawls with a headless browser.',
    ),
    crawleeDocs(
      'crawlee',
      'c3',
      'https://crawlee.dev/js/docs/3.10/guides/request-queue',
      'docs-default-3.10',
      'Request queue of an old version.',
    ),
    crawleeDocs(
      'crawlee',
      'c4',
      'https://crawlee.dev/de/js/docs/guides/request-queue',
      'docs-default-3.15',
      'Request queue in German.',
      'lvl1',
      'de',
    ),
    crawleeDocs(
      'crawlee_python',
      'p1',
      'https://crawlee.dev/python/docs/guides/request-queue',
      'docs-default-current',
      'Request queue in Python stores requests.',
    ),
    crawleeDocs(
      'crawlee_python',
      'p2',
      'https://crawlee.dev/python/docs/guides/request-loaders',
      'docs-default-current',
      'Request loaders feed a request queue.',
    ),
    crawleeDocs(
      'crawlee_python',
      'p3',
      'https://crawlee.dev/python/docs/guides/storages',
      'docs-default-current',
      'Storages: dataset, key-value store, request queue.',
    ),
    crawleeDocs(
      'crawlee_python',
      'p4',
      'https://crawlee.dev/python/docs/guides/request-queue#usage',
      'docs-default-current',
      'Request queue usage.',
      'lvl2',
    ),
  ];
  for (const index of ['crawlee', 'crawlee_python'])
    fake.addDocsRecords(
      index,
      crawlee.filter(([i]) => i === index).map(([, r]) => r),
    );

  fake.addDocsPage(
    'docs.apify.com',
    '/platform/actors/running',
    '# Running Actors\n\nStart an Actor from Console or the API.',
  );
  fake.addDocsPage(
    'crawlee.dev',
    '/js/docs/quick-start',
    '# Quick start\n\n```js\nimport { PlaywrightCrawler } from "crawlee";\n```',
  );
}
