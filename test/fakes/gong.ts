/**
 * A fake Gong (API v2 with Engage) speaking the real wire format: `/v2/...` paths (case-sensitive, parameter
 * names too), Basic auth with the access key and secret or a Bearer token whose scopes are checked per
 * endpoint, `records: {totalRecords, currentPageSize, currentPageNumber, cursor?}` paging with the cursor in
 * the query on GET and in the body on POST, `{"requestId","errors":[...]}` error bodies, 404 "No calls found"
 * instead of an empty list, 429 with Retry-After on demand, and ids as strings of digits.
 *
 * It checks what it receives the way Gong does (required fields and parameters, unknown body fields, enums,
 * id types, date formats, limits), so a wrong mapping fails a test instead of passing silently.
 */
import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';
import { asText } from '../helpers/text.ts';

export interface GongUser {
  id: string;
  emailAddress: string;
  emailAliases: string[];
  firstName: string;
  lastName: string;
  title: string;
  managerId: string | null;
  active: boolean;
  created: string;
  isAvatar?: boolean;
}

export interface GongParty {
  id: string;
  emailAddress?: string;
  name?: string;
  userId?: string;
  speakerId: string;
  affiliation: 'Internal' | 'External' | 'Unknown';
}

export interface GongCall {
  id: string;
  workspaceId: string;
  title: string;
  started: string;
  duration: number;
  direction: string;
  primaryUserId: string;
  clientUniqueId?: string;
  purpose?: string | null;
  scheduled?: string | null;
  disposition?: string | null;
  languageCode?: string | null;
  callProviderCode?: string | null;
  parties: GongParty[];
  topics: Array<{ name: string; duration: number }>;
  trackers: Array<{ id: string; name: string; count: number }>;
  transcript: Array<{
    speakerId: string;
    topic: string | null;
    sentences: Array<{ start: number; end: number; text: string }>;
  }>;
  crmAccountId?: string;
  media?: { contentType: string; bytes: number };
}

export interface FlowInstance {
  flowInstanceId: string;
  flowId: string;
  crmProspectId: string;
  flowInstanceOwnerEmail: string;
  flowInstanceStatus: 'Running' | 'Unassigned';
}

export interface GongTask {
  id: string;
  userId: string;
  workspaceId: string;
  type: 'FLOW' | 'MANUAL';
  taskAction: 'CALL';
  status: 'OPEN' | 'DONE' | 'DISMISSED';
  dueDate: string | null;
  title: string;
  crmProspectId: string;
}

export interface BulkAssignment {
  id: string;
  flowId: string;
  flowInstanceOwnerEmail: string;
  crmIds: string[];
  status: 'PENDING' | 'IN_PROGRESS' | 'COMPLETED' | 'FAILED';
  results: Array<{ crmId: string; flowInstanceId?: string; errorCode?: string }>;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  query: Record<string, unknown>;
  body: unknown;
  authorization?: string;
  contentType?: string;
}

export interface FakeGongOptions {
  accessKey: string;
  accessKeySecret: string;
  /** Page size of every paged list (small, so paging is exercised). */
  pageSize?: number;
}

export const WS_SALES = '623457276584334';
export const WS_SUPPORT = '623457276584335';
export const U_MANAGER = '234599484848400';
export const U_SDR = '234599484848424';
export const U_REP = '234599484848423';
export const U_FORMER = '234599484848425';
export const U_AVATAR = '234599484848499';
export const CALL_1 = '7782342274025937895';
export const CALL_2 = '7782342274025937896';
export const CALL_3 = '7782342274025937897';
export const FLOW_REP_1 = '1695493301223590792';
export const FLOW_REP_2 = '1695493301223590793';
export const FLOW_REP_3 = '1695493301223590794';
export const FLOW_SDR = '1695493301223590795';
export const FOLDER_REP = '1695493301223573465';
export const LIBRARY_ROOT = '3843152912968920037';
export const LIBRARY_CHILD = '3843152912968920038';
export const TASK_OPEN_FLOW = '1234361284629351';
export const TASK_OPEN_MANUAL = '1234361284629352';
export const TASK_DONE = '1234361284629353';
export const TASK_UNDATED = '1234361284629354';
export const TASK_SDR = '1234361284629355';
/** A prospect that was in a flow recently: plain assignment refuses it, the cool-off override does not. */
export const PROSPECT_IN_COOL_OFF = '00Q1Q00001CoOlOf';

/** The OAuth scope each endpoint needs, as Gong's API description lists them. */
const SCOPES: Array<[string, RegExp, string]> = [
  ['GET', /^\/v2\/call-outcomes$/, 'api:call-outcomes:read'],
  ['POST', /^\/v2\/calls$/, 'api:calls:create'],
  ['PUT', /^\/v2\/calls\/[^/]+\/media$/, 'api:calls:create'],
  ['GET', /^\/v2\/calls$/, 'api:calls:read:basic'],
  ['POST', /^\/v2\/calls\/extensive$/, 'api:calls:read:extensive'],
  ['POST', /^\/v2\/calls\/transcript$/, 'api:calls:read:transcript'],
  ['GET', /^\/v2\/coaching$/, 'api:coaching:read'],
  ['POST', /^\/v2\/digital-interaction$/, 'api:digital-interactions:write'],
  ['GET', /^\/v2\/flows(\/.*)?$/, 'api:flows:read'],
  ['POST', /^\/v2\/flows\/prospects$/, 'api:flows:read'],
  ['POST', /^\/v2\/flows\/prospects\/.+$/, 'api:flows:write'],
  ['GET', /^\/v2\/library\/.+$/, 'api:library:read'],
  ['GET', /^\/v2\/settings\/scorecards$/, 'api:settings:scorecards:read'],
  ['GET', /^\/v2\/settings\/trackers$/, 'api:settings:trackers:read'],
  ['POST', /^\/v2\/stats\/interaction$/, 'api:stats:interaction'],
  ['POST', /^\/v2\/stats\/activity\/.+$/, 'api:stats:user-actions'],
  ['POST', /^\/v2\/tasks$/, 'api:tasks:read'],
  ['PATCH', /^\/v2\/tasks\/[^/]+$/, 'api:tasks:write'],
  ['GET', /^\/v2\/users$/, 'api:users:read'],
  ['POST', /^\/v2\/users\/extensive$/, 'api:users:read'],
  ['GET', /^\/v2\/workspaces$/, 'api:workspaces:read'],
];

const ID = /^[0-9]{1,20}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DIRECTIONS = ['Inbound', 'Outbound', 'Conference', 'Unknown'];
const TASK_STATUSES = ['OPEN', 'DONE', 'DISMISSED'];

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);
const isId = (v: unknown): v is string => typeof v === 'string' && ID.test(v);
const isIdList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isId);

/** Thrown inside a handler: answered as Gong's error body. */
class GongError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
  ) {
    super(errors.join('; '));
  }
}
const bad = (...errors: string[]) => new GongError(400, errors);

/** Refuses fields Gong does not know (a misspelt mapping such as crmProspectIds). */
function onlyKnown(obj: Json, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) throw bad(`Unrecognized field "${k}" in ${where}; known fields: ${allowed.join(', ')}`);
  }
}

function requireFields(obj: Json, fields: readonly string[], where: string): void {
  const missing = fields.filter((f) => obj[f] === undefined || obj[f] === null);
  if (missing.length) throw bad(...missing.map((f) => `${where}${f} is required`));
}

function optionalDateTime(obj: Json, field: string, where: string): number | undefined {
  const v = obj[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !DATE_TIME.test(v))
    throw bad(`${where}${field} must be an ISO-8601 date-time, got ${JSON.stringify(v)}`);
  return Date.parse(v);
}

function body(req: Request): Json {
  if (!isObject(req.body)) throw bad('The request body must be a JSON object');
  return req.body;
}

function queryString(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(`Query parameter ${name} may be given once`);
  return v;
}

export class FakeGong {
  readonly requests: ReceivedRequest[] = [];
  /** Answer the next N API requests with 429 and this Retry-After (seconds). */
  rateLimit: { count: number; retryAfter?: number } = { count: 0 };
  /** Answer the next N API requests with 500 (an outage). */
  outage = 0;
  /** Runs before each API request is answered (a test holds a request here, e.g. to kill the caller mid-poll). */
  beforeAnswer: ((entry: ReceivedRequest) => Promise<void>) | undefined;
  /** Validates a bearer token and returns its scopes, or undefined when it is not valid (set by the test). */
  bearerScopes: (token: string) => string[] | undefined = () => undefined;

  readonly workspaces = [
    { id: WS_SALES, name: 'Sales', description: 'Field and inside sales' },
    { id: WS_SUPPORT, name: 'Support', description: 'Customer support' },
  ];
  readonly users: GongUser[];
  readonly calls = new Map<string, GongCall>();
  readonly flows: Array<{
    id: string;
    name: string;
    folderId: string;
    ownerEmail: string;
    workspaceId: string;
    visibility: string;
  }>;
  readonly folders: Array<{ id: string; name: string; ownerEmail: string; workspaceId: string }>;
  readonly instances = new Map<string, FlowInstance>();
  readonly coolOff = new Set<string>([PROSPECT_IN_COOL_OFF]);
  readonly bulkAssignments = new Map<string, BulkAssignment>();
  readonly tasks = new Map<string, GongTask>();
  readonly digitalInteractions: Json[] = [];
  readonly uploads = new Map<string, { contentType: string; bytes: number; fileName: string }>();
  private nextId = 8_100_000_000_000_000_000n;
  private listening!: Listening;
  private readonly pageSize: number;

  constructor(readonly opts: FakeGongOptions) {
    this.pageSize = opts.pageSize ?? 2;
    const created = '2025-03-01T09:00:00Z';
    this.users = [
      {
        id: U_MANAGER,
        emailAddress: 'manager@acme.com',
        emailAliases: [],
        firstName: 'Mia',
        lastName: 'Manager',
        title: 'Sales Manager',
        managerId: null,
        active: true,
        created,
      },
      {
        id: U_SDR,
        emailAddress: 'sdr@acme.com',
        emailAliases: [],
        firstName: 'Sam',
        lastName: 'Dev',
        title: 'SDR',
        managerId: U_MANAGER,
        active: true,
        created: '2025-06-01T09:00:00Z',
      },
      {
        id: U_REP,
        emailAddress: 'rep@acme.com',
        emailAliases: ['r.ep@acme.com'],
        firstName: 'Rae',
        lastName: 'Rep',
        title: 'Account Executive',
        managerId: U_MANAGER,
        active: true,
        created,
      },
      {
        id: U_FORMER,
        emailAddress: 'former@acme.com',
        emailAliases: [],
        firstName: 'Fay',
        lastName: 'Former',
        title: 'AE',
        managerId: U_MANAGER,
        active: false,
        created: '2024-01-01T09:00:00Z',
      },
      {
        id: U_AVATAR,
        emailAddress: 'csm@gong.io',
        emailAliases: [],
        firstName: 'Gong',
        lastName: 'CSM',
        title: 'Customer Success',
        managerId: null,
        active: true,
        created,
        isAvatar: true,
      },
    ];
    const call = (id: string, workspaceId: string, started: string, primary: string, title: string): GongCall => ({
      id,
      workspaceId,
      title,
      started,
      duration: 1800,
      direction: 'Outbound',
      primaryUserId: primary,
      parties: [
        {
          id: `${id.slice(0, 15)}01`,
          userId: primary,
          emailAddress: this.user(primary)!.emailAddress,
          name: this.user(primary)!.firstName,
          speakerId: `${id.slice(0, 15)}11`,
          affiliation: 'Internal',
        },
        {
          id: `${id.slice(0, 15)}02`,
          emailAddress: 'buyer@customer.com',
          name: 'Bea Buyer',
          speakerId: `${id.slice(0, 15)}12`,
          affiliation: 'External',
        },
      ],
      topics: [{ name: 'Pricing', duration: 420 }],
      trackers: [{ id: '5001', name: 'Competitors', count: 2 }],
      transcript: [
        {
          speakerId: `${id.slice(0, 15)}11`,
          topic: 'Pricing',
          sentences: [{ start: 1000, end: 4200, text: `Thanks for joining ${title}.` }],
        },
        {
          speakerId: `${id.slice(0, 15)}12`,
          topic: 'Pricing',
          sentences: [{ start: 4300, end: 7000, text: 'What does it cost?' }],
        },
      ],
      crmAccountId: '001A000001',
    });
    for (const c of [
      call(CALL_1, WS_SALES, '2026-01-10T10:00:00Z', U_REP, 'Discovery with Customer'),
      call(CALL_2, WS_SALES, '2026-01-20T15:00:00Z', U_SDR, 'Qualification'),
      call(CALL_3, WS_SUPPORT, '2026-03-05T09:00:00Z', U_REP, 'Renewal'),
    ]) {
      this.calls.set(c.id, c);
    }
    this.folders = [
      { id: FOLDER_REP, name: 'Outbound', ownerEmail: 'rep@acme.com', workspaceId: WS_SALES },
      { id: '1695493301223573466', name: 'Inbound', ownerEmail: 'sdr@acme.com', workspaceId: WS_SALES },
    ];
    this.flows = [
      {
        id: FLOW_REP_1,
        name: 'Outbound Q3',
        folderId: FOLDER_REP,
        ownerEmail: 'rep@acme.com',
        workspaceId: WS_SALES,
        visibility: 'Company',
      },
      {
        id: FLOW_REP_2,
        name: 'Re-engage',
        folderId: FOLDER_REP,
        ownerEmail: 'rep@acme.com',
        workspaceId: WS_SALES,
        visibility: 'Personal',
      },
      {
        id: FLOW_REP_3,
        name: 'Renewals',
        folderId: FOLDER_REP,
        ownerEmail: 'rep@acme.com',
        workspaceId: WS_SUPPORT,
        visibility: 'Shared',
      },
      {
        id: FLOW_SDR,
        name: 'Inbound follow-up',
        folderId: '1695493301223573466',
        ownerEmail: 'sdr@acme.com',
        workspaceId: WS_SALES,
        visibility: 'Company',
      },
    ];
    const task = (
      id: string,
      userId: string,
      type: GongTask['type'],
      status: GongTask['status'],
      dueDate: string | null,
      title: string,
      workspaceId = WS_SALES,
    ): GongTask => ({
      id,
      userId,
      workspaceId,
      type,
      taskAction: 'CALL',
      status,
      dueDate,
      title,
      crmProspectId: '003A000001',
    });
    for (const t of [
      task(TASK_OPEN_FLOW, U_REP, 'FLOW', 'OPEN', '2026-07-06T10:00:00Z', 'Call Bea (flow step 2)'),
      task(TASK_OPEN_MANUAL, U_REP, 'MANUAL', 'OPEN', '2026-07-20T09:00:00Z', 'Call back about pricing'),
      task(TASK_DONE, U_REP, 'FLOW', 'DONE', '2026-06-01T09:00:00Z', 'Intro call'),
      task(TASK_UNDATED, U_REP, 'MANUAL', 'OPEN', null, 'Call whenever', WS_SUPPORT),
      task(TASK_SDR, U_SDR, 'FLOW', 'OPEN', '2026-07-07T09:00:00Z', 'Qualify lead'),
    ]) {
      this.tasks.set(t.id, t);
    }
  }

  get url(): string {
    return this.listening.url;
  }

  user(id: string): GongUser | undefined {
    return this.users.find((u) => u.id === id);
  }

  instancesOf(crmProspectId: string): FlowInstance[] {
    return [...this.instances.values()].filter((i) => i.crmProspectId === crmProspectId);
  }

  /** Runs the pending bulk assignments, as Gong does in the background. */
  processBulkAssignments(): void {
    for (const b of this.bulkAssignments.values()) {
      if (b.status !== 'PENDING' && b.status !== 'IN_PROGRESS') continue;
      b.results = b.crmIds.map((crmId) => {
        const r = this.assignOne(b.flowId, crmId, b.flowInstanceOwnerEmail, false);
        return 'flowInstanceId' in r ? { crmId, flowInstanceId: r.flowInstanceId } : { crmId, errorCode: r.errorCode };
      });
      b.status = 'COMPLETED';
    }
  }

  private newId(): string {
    this.nextId += 1n;
    return this.nextId.toString();
  }

  private requestId(): string {
    return randomBytes(10).toString('base64url').toLowerCase();
  }

  private cursorFor(route: string, offset: number): string {
    return Buffer.from(JSON.stringify({ r: route, o: offset })).toString('base64url');
  }

  /** One page of a list, with Gong's `records`; the cursor must be one this route issued. */
  private page<T>(route: string, items: T[], cursor: unknown): { records: Json; items: T[] } {
    let offset = 0;
    if (cursor !== undefined) {
      try {
        const c = JSON.parse(Buffer.from(asText(cursor), 'base64url').toString()) as { r?: unknown; o?: unknown };
        if (c.r !== route || typeof c.o !== 'number' || c.o < 0) throw new Error('foreign cursor');
        offset = c.o;
      } catch {
        throw bad('cursor is invalid or belongs to another request');
      }
    }
    const slice = items.slice(offset, offset + this.pageSize);
    const next = offset + this.pageSize < items.length ? this.cursorFor(route, offset + this.pageSize) : undefined;
    return {
      records: {
        totalRecords: items.length,
        currentPageSize: slice.length,
        currentPageNumber: Math.floor(offset / this.pageSize),
        ...(next ? { cursor: next } : {}),
      },
      items: slice,
    };
  }

  private authorize(req: Request, path: string): void {
    const header = req.headers.authorization ?? '';
    const basic = /^Basic (.+)$/.exec(header);
    if (basic) {
      const [key, secret] = Buffer.from(basic[1]!, 'base64').toString().split(/:(.*)/s);
      if (key === this.opts.accessKey && secret === this.opts.accessKeySecret) return;
      throw new GongError(401, ['Invalid access key or secret']);
    }
    const bearer = /^Bearer (.+)$/.exec(header);
    if (bearer) {
      const scopes = this.bearerScopes(bearer[1]!);
      if (!scopes) throw new GongError(401, ['The access token is invalid or has expired']);
      const needed = SCOPES.find(([m, re]) => m === req.method && re.test(path))?.[2];
      if (needed && !scopes.includes(needed)) throw new GongError(403, [`This endpoint requires the scope ${needed}`]);
      return;
    }
    throw new GongError(401, ['Missing or malformed Authorization header']);
  }

  /** Rate limit, outage and authorization, in that order, before a request reaches its route. */
  private gate(req: Request, res: Response, next: NextFunction, entry: ReceivedRequest): void {
    if (this.rateLimit.count > 0) {
      this.rateLimit.count--;
      if (this.rateLimit.retryAfter !== undefined) res.setHeader('retry-after', String(this.rateLimit.retryAfter));
      res.status(429).json({ requestId: this.requestId(), errors: ['API rate limit exceeded (3 calls per second)'] });
      return;
    }
    if (this.outage > 0) {
      this.outage--;
      res.status(500).json({ requestId: this.requestId(), errors: ['Internal server error'] });
      return;
    }
    try {
      this.authorize(req, entry.path);
    } catch (e) {
      return this.fail(res, e);
    }
    next();
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.set('case sensitive routing', true);
    app.set('strict routing', true);
    app.use('/v2', (req, res, next) => {
      const contentType = req.headers['content-type'];
      const entry: ReceivedRequest = {
        method: req.method,
        path: `/v2${req.path}`,
        query: { ...req.query },
        body: undefined,
        authorization: req.headers.authorization,
        contentType,
      };
      this.requests.push(entry);
      res.locals.entry = entry;
      const hold = this.beforeAnswer?.(entry) ?? Promise.resolve();
      hold.then(
        () => this.gate(req, res, next, entry),
        () => res.destroy(),
      );
    });
    app.use(express.json({ limit: '2mb' }));
    app.use(express.raw({ type: 'multipart/form-data', limit: '20mb' }));
    app.use('/v2', (req, res, next) => {
      (res.locals.entry as ReceivedRequest).body = Buffer.isBuffer(req.body) ? `<${req.body.length} bytes>` : req.body;
      next();
    });
    const r = express.Router({ caseSensitive: true, strict: true });
    this.routes(r);
    app.use('/v2', r);
    app.use((_req: Request, res: Response) =>
      res.status(404).json({ requestId: this.requestId(), errors: ['No such endpoint'] }),
    );
    app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
      if (err instanceof GongError) return this.fail(res, err);
      const status = (err as { status?: number }).status ?? 500;
      res.status(status).json({
        requestId: this.requestId(),
        errors: [status === 400 ? 'Malformed JSON in the request body' : String(err)],
      });
    });
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  private fail(res: Response, e: unknown): void {
    if (e instanceof GongError) {
      res.status(e.status).json({ requestId: this.requestId(), errors: e.errors });
      return;
    }
    res.status(500).json({ requestId: this.requestId(), errors: [String(e)] });
  }

  /** Wraps a handler so a thrown GongError becomes Gong's error body. */
  private h(fn: (req: Request, res: Response) => void) {
    return (req: Request, res: Response) => {
      try {
        fn(req, res);
      } catch (e) {
        this.fail(res, e);
      }
    };
  }

  private ok(res: Response, payload: Json, status = 200): void {
    res.status(status).json({ requestId: this.requestId(), ...payload });
  }

  private callMetaData(c: GongCall): Json {
    return {
      id: c.id,
      url: `https://app.gong.io/call?id=${c.id}`,
      title: c.title,
      scheduled: c.scheduled ?? null,
      started: c.started,
      duration: c.duration,
      primaryUserId: c.primaryUserId,
      direction: c.direction,
      system: c.callProviderCode ?? 'Zoom',
      scope: 'External',
      media: c.media ? 'Audio' : 'Video',
      language: c.languageCode ?? 'eng',
      workspaceId: c.workspaceId,
      purpose: c.purpose ?? null,
      clientUniqueId: c.clientUniqueId ?? null,
      customData: null,
    };
  }

  private personStats(c: GongCall) {
    return c.parties
      .filter((p) => p.userId)
      .map((p) => ({
        userId: p.userId,
        speakerId: p.speakerId,
        personInteractionStats: [
          { name: 'Talk Ratio', value: 0.46 },
          { name: 'Longest Monologue', value: 95 },
          { name: 'Patience', value: 0.8 },
          { name: 'Question Rate', value: 4.2 },
          { name: 'Interactivity', value: 6.1 },
        ],
      }));
  }

  /** The calls a `filter` of calls/extensive or calls/transcript selects. */
  private filteredCalls(f: unknown, where: string, extra: readonly string[] = []): GongCall[] {
    if (!isObject(f)) throw bad(`${where}filter is required`);
    onlyKnown(f, ['callIds', 'fromDateTime', 'toDateTime', 'workspaceId', 'primaryUserIds', ...extra], 'filter');
    if (f.callIds !== undefined && !isIdList(f.callIds))
      throw bad('filter.callIds must be a list of call ids as strings');
    if (f.workspaceId !== undefined && !isId(f.workspaceId))
      throw bad('filter.workspaceId must be a workspace id as a string');
    const from = optionalDateTime(f, 'fromDateTime', 'filter.');
    const to = optionalDateTime(f, 'toDateTime', 'filter.');
    return [...this.calls.values()].filter(
      (c) =>
        (!f.callIds || (f.callIds as string[]).includes(c.id)) &&
        (!f.workspaceId || c.workspaceId === f.workspaceId) &&
        (from === undefined || Date.parse(c.started) >= from) &&
        (to === undefined || Date.parse(c.started) < to),
    );
  }

  private assignOne(
    flowId: string,
    crmId: string,
    ownerEmail: string,
    overrideCoolOff: boolean,
  ): { flowInstanceId: string } | { errorCode: string; errorMessage: string } {
    if (this.instancesOf(crmId).some((i) => i.flowId === flowId && i.flowInstanceStatus === 'Running')) {
      return { errorCode: 'AlreadyAssigned', errorMessage: `Prospect ${crmId} is already in flow ${flowId}` };
    }
    if (!overrideCoolOff && this.coolOff.has(crmId)) {
      return { errorCode: 'CoolOffPeriod', errorMessage: `Prospect ${crmId} is in its cool-off period` };
    }
    const flowInstanceId = this.newId();
    this.instances.set(flowInstanceId, {
      flowInstanceId,
      flowId,
      crmProspectId: crmId,
      flowInstanceOwnerEmail: ownerEmail,
      flowInstanceStatus: 'Running',
    });
    return { flowInstanceId };
  }

  private checkAssignBody(b: Json, max: number): { flowId: string; ids: string[]; owner: string } {
    onlyKnown(
      b,
      ['flowId', 'crmProspectsIds', 'flowInstanceOwnerEmail', 'overrides', 'flowInstanceDescription'],
      'the request body',
    );
    requireFields(b, ['flowId', 'crmProspectsIds', 'flowInstanceOwnerEmail'], '');
    if (!isId(b.flowId)) throw bad('flowId must be a flow id as a string');
    const ids = b.crmProspectsIds;
    if (!Array.isArray(ids) || !ids.length || !ids.every((x) => typeof x === 'string' && x))
      throw bad('crmProspectsIds must be a non-empty list of CRM ids');
    if (ids.length > max) throw bad(`crmProspectsIds may hold at most ${max} prospects`);
    if (
      typeof b.flowInstanceOwnerEmail !== 'string' ||
      !this.users.some((u) => u.emailAddress === b.flowInstanceOwnerEmail)
    ) {
      throw bad(`flowInstanceOwnerEmail ${JSON.stringify(b.flowInstanceOwnerEmail)} is not a Gong user`);
    }
    if (!this.flows.some((f) => f.id === b.flowId)) throw new GongError(404, [`Flow ${b.flowId} not found`]);
    return { flowId: b.flowId, ids: ids as string[], owner: b.flowInstanceOwnerEmail };
  }

  private assignAnswer(res: Response, b: Json, overrideCoolOff: boolean): void {
    const { flowId, ids, owner } = this.checkAssignBody(b, 200);
    const prospectsAssigned: Json[] = [];
    const prospectsNotAssigned: Json[] = [];
    for (const crmId of ids) {
      const r = this.assignOne(flowId, crmId, owner, overrideCoolOff);
      if ('flowInstanceId' in r)
        prospectsAssigned.push({
          flowId,
          crmProspectId: crmId,
          flowInstanceId: r.flowInstanceId,
          flowInstanceStatus: 'Pending',
        });
      else prospectsNotAssigned.push({ flowId, crmProspectId: crmId, ...r });
    }
    this.ok(res, { prospectsAssigned, prospectsNotAssigned });
  }

  private statsPeriod(b: Json): { fromDate: string; toDate: string; userIds?: string[] } {
    onlyKnown(b, ['filter', 'cursor'], 'the request body');
    const f = b.filter;
    if (!isObject(f)) throw bad('filter is required');
    onlyKnown(f, ['fromDate', 'toDate', 'userIds'], 'filter');
    requireFields(f, ['fromDate', 'toDate'], 'filter.');
    for (const k of ['fromDate', 'toDate'] as const) {
      if (typeof f[k] !== 'string' || !DATE.test(f[k]))
        throw bad(`filter.${k} must be a date in the form YYYY-MM-DD, got ${JSON.stringify(f[k])}`);
    }
    const today = new Date().toISOString().slice(0, 10);
    if ((f.toDate as string) > today) throw bad('filter.toDate must not be after today');
    if ((f.fromDate as string) >= (f.toDate as string))
      throw bad('filter.fromDate must be before filter.toDate (toDate is exclusive)');
    if (f.userIds !== undefined && !isIdList(f.userIds))
      throw bad('filter.userIds must be a list of user ids as strings');
    return { fromDate: f.fromDate as string, toDate: f.toDate as string, userIds: f.userIds };
  }

  private routes(r: express.Router) {
    // Users and workspaces
    r.get(
      '/users',
      this.h((req, res) => {
        const avatars = queryString(req, 'includeAvatars');
        if (avatars !== undefined && avatars !== 'true' && avatars !== 'false')
          throw bad('includeAvatars must be true or false');
        const list = this.users.filter((u) => avatars === 'true' || !u.isAvatar);
        const { records, items } = this.page('users', list, queryString(req, 'cursor'));
        this.ok(res, { records, users: items });
      }),
    );
    r.post(
      '/users/extensive',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['filter', 'cursor'], 'the request body');
        // Gong's UsersRequest requires `filter` (an empty one asks for every user).
        if (b.filter === undefined) throw bad('filter is required');
        const f = b.filter as Json;
        if (!isObject(f)) throw bad('filter must be an object');
        onlyKnown(f, ['userIds', 'createdFromDateTime', 'createdToDateTime', 'includeAvatars'], 'filter');
        if (f.userIds !== undefined && !isIdList(f.userIds))
          throw bad('filter.userIds must be a list of user ids as strings');
        const from = optionalDateTime(f, 'createdFromDateTime', 'filter.');
        const to = optionalDateTime(f, 'createdToDateTime', 'filter.');
        const list = this.users.filter(
          (u) =>
            (f.includeAvatars === true || !u.isAvatar) &&
            (!f.userIds || (f.userIds as string[]).includes(u.id)) &&
            (from === undefined || Date.parse(u.created) >= from) &&
            (to === undefined || Date.parse(u.created) < to),
        );
        const { records, items } = this.page('users/extensive', list, b.cursor);
        this.ok(res, {
          records,
          users: items.map((u) => ({
            ...u,
            settings: { webConferencesRecorded: true, telephonyCallsImported: u.active, emailsImported: true },
            spokenLanguages: [{ language: 'en-US', primary: true }],
          })),
        });
      }),
    );
    r.get(
      '/workspaces',
      this.h((_req, res) => this.ok(res, { workspaces: this.workspaces })),
    );

    // Settings, outcomes, library
    r.get(
      '/call-outcomes',
      this.h((_req, res) =>
        this.ok(res, {
          callOutcomes: [
            { id: '9001', name: 'Meeting booked', category: 'Positive' },
            { id: '9002', name: 'Not interested', category: 'Negative' },
          ],
        }),
      ),
    );
    r.get(
      '/settings/scorecards',
      this.h((_req, res) =>
        this.ok(res, {
          scorecards: [
            {
              scorecardId: '4001',
              scorecardName: 'Discovery call',
              workspaceId: WS_SALES,
              enabled: true,
              questions: [
                {
                  questionId: '4101',
                  questionText: 'Did the rep confirm budget?',
                  isOverall: false,
                  answerGuide: 'Budget named in numbers',
                },
              ],
            },
          ],
        }),
      ),
    );
    r.get(
      '/settings/trackers',
      this.h((req, res) => {
        const ws = queryString(req, 'workspaceId');
        const trackers = [
          {
            trackerId: '5001',
            trackerName: 'Competitors',
            workspaceId: WS_SALES,
            languageKeywords: [{ language: 'eng', keywords: ['Chorus', 'Clari'] }],
            affiliation: 'Any',
          },
          {
            trackerId: '5002',
            trackerName: 'Churn risk',
            workspaceId: WS_SUPPORT,
            languageKeywords: [{ language: 'eng', keywords: ['cancel'] }],
            affiliation: 'External',
          },
        ];
        this.ok(res, { keywordTrackers: trackers.filter((t) => !ws || t.workspaceId === ws) });
      }),
    );
    r.get(
      '/library/folders',
      this.h((req, res) => {
        const ws = queryString(req, 'workspaceId');
        if (ws !== undefined && !this.workspaces.some((w) => w.id === ws))
          throw new GongError(404, [`Workspace ${ws} not found`]);
        const folders = [
          {
            id: LIBRARY_ROOT,
            name: 'Best calls',
            parentFolderId: null,
            createdBy: U_MANAGER,
            updated: '2026-01-05T10:00:00Z',
            workspaceId: WS_SALES,
          },
          {
            id: LIBRARY_CHILD,
            name: 'Objection handling',
            parentFolderId: LIBRARY_ROOT,
            createdBy: U_MANAGER,
            updated: '2026-01-06T10:00:00Z',
            workspaceId: WS_SALES,
          },
          {
            id: '3843152912968920039',
            name: 'Escalations',
            parentFolderId: null,
            createdBy: U_MANAGER,
            updated: '2026-02-01T10:00:00Z',
            workspaceId: WS_SUPPORT,
          },
        ];
        this.ok(res, { folders: folders.filter((f) => !ws || f.workspaceId === ws) });
      }),
    );
    r.get(
      '/library/folder-content',
      this.h((req, res) => {
        const id = queryString(req, 'folderId');
        if (id === undefined) throw bad('folderId is required');
        if (id !== LIBRARY_ROOT && id !== LIBRARY_CHILD) throw new GongError(404, [`Folder ${id} not found`]);
        this.ok(res, {
          id,
          name: id === LIBRARY_ROOT ? 'Best calls' : 'Objection handling',
          createdBy: U_MANAGER,
          updated: '2026-01-05T10:00:00Z',
          calls: [
            {
              id: CALL_1,
              title: 'Discovery with Customer',
              note: 'Great opener',
              addedBy: U_MANAGER,
              created: '2026-01-11T08:00:00Z',
              url: `https://app.gong.io/call?id=${CALL_1}`,
            },
            {
              id: CALL_2,
              title: 'Qualification',
              note: 'Clip: pricing objection',
              addedBy: U_MANAGER,
              created: '2026-01-21T08:00:00Z',
              snippet: { fromSec: 120, toSec: 185 },
            },
          ],
        });
      }),
    );

    // Calls
    r.get(
      '/calls',
      this.h((req, res) => {
        const q: Json = {};
        for (const k of ['fromDateTime', 'toDateTime', 'workspaceId'])
          if (queryString(req, k) !== undefined) q[k] = queryString(req, k);
        const list = this.filteredCalls({ ...q }, '', []).sort((a, b) => a.started.localeCompare(b.started));
        const { records, items } = this.page('calls', list, queryString(req, 'cursor'));
        this.ok(res, { records, calls: items.map((c) => this.callMetaData(c)) });
      }),
    );
    r.post(
      '/calls/extensive',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['filter', 'contentSelector', 'cursor'], 'the request body');
        const list = this.filteredCalls(b.filter, '');
        const sel = b.contentSelector === undefined ? {} : b.contentSelector;
        if (!isObject(sel)) throw bad('contentSelector must be an object');
        onlyKnown(sel, ['context', 'contextTiming', 'exposedFields'], 'contentSelector');
        if (sel.context !== undefined && sel.context !== 'None' && sel.context !== 'Extended')
          throw bad('contentSelector.context must be None or Extended');
        const exposed = (sel.exposedFields ?? {}) as Json;
        if (!isObject(exposed)) throw bad('contentSelector.exposedFields must be an object');
        onlyKnown(
          exposed,
          ['parties', 'content', 'interaction', 'collaboration', 'media'],
          'contentSelector.exposedFields',
        );
        const content = (exposed.content ?? {}) as Json;
        const interaction = (exposed.interaction ?? {}) as Json;
        onlyKnown(
          content,
          [
            'structure',
            'topics',
            'trackers',
            'trackerOccurrences',
            'pointsOfInterest',
            'brief',
            'outline',
            'highlights',
            'callOutcome',
            'keyPoints',
          ],
          'contentSelector.exposedFields.content',
        );
        onlyKnown(
          interaction,
          ['speakers', 'video', 'personInteractionStats', 'questions'],
          'contentSelector.exposedFields.interaction',
        );
        if (!list.length) throw new GongError(404, ['No calls found corresponding to the provided filters']);
        const { records, items } = this.page('calls/extensive', list, b.cursor);
        const calls = items.map((c) => {
          const out: Json = { metaData: this.callMetaData(c) };
          if (exposed.parties === true) out.parties = c.parties;
          if (content.topics === true || content.trackers === true) {
            out.content = {
              ...(content.topics === true ? { topics: c.topics } : {}),
              ...(content.trackers === true ? { trackers: c.trackers } : {}),
            };
          }
          const inter: Json = {};
          if (interaction.speakers === true)
            inter.speakers = c.parties.map((p) => ({ id: p.speakerId, userId: p.userId ?? null, talkTime: 600 }));
          if (interaction.personInteractionStats === true) inter.personInteractionStats = this.personStats(c);
          if (interaction.questions === true) inter.questions = { companyCount: 7, nonCompanyCount: 3 };
          if (Object.keys(inter).length) out.interaction = inter;
          if (sel.context === 'Extended' && c.crmAccountId) {
            out.context = [
              {
                system: 'Salesforce',
                objects: [
                  {
                    objectType: 'Account',
                    objectId: c.crmAccountId,
                    fields: [{ name: 'Name', value: 'Customer Inc' }],
                  },
                ],
              },
            ];
          }
          return out;
        });
        this.ok(res, { records, calls });
      }),
    );
    r.post(
      '/calls/transcript',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['filter', 'cursor'], 'the request body');
        const list = this.filteredCalls(b.filter, '');
        if (!list.length) throw new GongError(404, ['No calls found for the specified period']);
        const { records, items } = this.page('calls/transcript', list, b.cursor);
        this.ok(res, { records, callTranscripts: items.map((c) => ({ callId: c.id, transcript: c.transcript })) });
      }),
    );
    r.post(
      '/calls',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(
          b,
          [
            'clientUniqueId',
            'actualStart',
            'title',
            'purpose',
            'scheduledStart',
            'scheduledEnd',
            'duration',
            'direction',
            'disposition',
            'context',
            'customData',
            'speakersTimeline',
            'meetingUrl',
            'callProviderCode',
            'downloadMediaUrl',
            'workspaceId',
            'languageCode',
            'parties',
            'primaryUser',
          ],
          'the request body',
        );
        requireFields(b, ['clientUniqueId', 'actualStart', 'direction', 'parties', 'primaryUser'], '');
        if (typeof b.clientUniqueId !== 'string' || !b.clientUniqueId)
          throw bad('clientUniqueId must be a non-empty string');
        optionalDateTime(b, 'actualStart', '');
        optionalDateTime(b, 'scheduledStart', '');
        optionalDateTime(b, 'scheduledEnd', '');
        if (!DIRECTIONS.includes(String(b.direction))) throw bad(`direction must be one of ${DIRECTIONS.join(', ')}`);
        if (b.duration !== undefined && (typeof b.duration !== 'number' || b.duration < 0))
          throw bad('duration must be a number of seconds');
        if (b.workspaceId !== undefined && !this.workspaces.some((w) => w.id === b.workspaceId))
          throw bad(`workspaceId ${JSON.stringify(b.workspaceId)} is not a workspace`);
        if (!isId(b.primaryUser) || !this.user(b.primaryUser))
          throw bad(`primaryUser ${JSON.stringify(b.primaryUser)} is not a Gong user id`);
        if (!Array.isArray(b.parties) || !b.parties.length) throw bad('parties must list at least one participant');
        b.parties.forEach((p, i) => {
          if (!isObject(p)) throw bad(`parties[${i}] must be an object`);
          onlyKnown(
            p,
            ['phoneNumber', 'emailAddress', 'name', 'partyId', 'mediaChannelId', 'context', 'userId'],
            `parties[${i}]`,
          );
          if (p.userId !== undefined && (!isId(p.userId) || !this.user(p.userId)))
            throw bad(`parties[${i}].userId is not a Gong user id`);
          if (p.emailAddress !== undefined && (typeof p.emailAddress !== 'string' || !EMAIL.test(p.emailAddress)))
            throw bad(`parties[${i}].emailAddress is not an email address`);
        });
        if ([...this.calls.values()].some((c) => c.clientUniqueId === b.clientUniqueId)) {
          throw new GongError(409, [`A call with clientUniqueId ${b.clientUniqueId} already exists`]);
        }
        const id = this.newId();
        this.calls.set(id, {
          id,
          workspaceId: (b.workspaceId as string) ?? WS_SALES,
          title: (b.title as string) ?? '',
          started: b.actualStart as string,
          duration: (b.duration as number) ?? 0,
          direction: b.direction as string,
          primaryUserId: b.primaryUser,
          clientUniqueId: b.clientUniqueId,
          purpose: (b.purpose as string) ?? null,
          scheduled: (b.scheduledStart as string) ?? null,
          disposition: (b.disposition as string) ?? null,
          languageCode: (b.languageCode as string) ?? null,
          callProviderCode: (b.callProviderCode as string) ?? null,
          parties: (b.parties as Json[]).map((p, i) => ({
            id: `${id.slice(0, 15)}0${i}`,
            emailAddress: p.emailAddress as string | undefined,
            name: p.name as string | undefined,
            userId: p.userId as string | undefined,
            speakerId: `${id.slice(0, 15)}1${i}`,
            affiliation: p.userId ? 'Internal' : 'External',
          })),
          topics: [],
          trackers: [],
          transcript: [],
        });
        this.ok(res, { callId: id }, 201);
      }),
    );
    r.put(
      '/calls/:id/media',
      this.h((req, res) => {
        const call = this.calls.get(String(req.params.id));
        if (!call) throw new GongError(404, [`Call ${asText(req.params.id)} not found`]);
        const type = String(req.headers['content-type'] ?? '');
        const boundary = /boundary=([^;]+)/.exec(type)?.[1];
        if (!type.startsWith('multipart/form-data') || !boundary || !Buffer.isBuffer(req.body))
          throw bad('The recording must be sent as multipart/form-data');
        const text = req.body.toString('latin1');
        const part =
          /Content-Disposition: form-data; name="mediaFile"; filename="([^"]+)"\r\nContent-Type: ([^\r]+)\r\n\r\n/i.exec(
            text,
          );
        if (!part) throw bad('The multipart body must carry the recording in the part "mediaFile"');
        const start = part.index + part[0].length;
        const end = text.indexOf(`\r\n--${boundary}`, start);
        const bytes = (end < 0 ? text.length : end) - start;
        this.uploads.set(call.id, { contentType: part[2]!, bytes, fileName: part[1]! });
        call.media = { contentType: part[2]!, bytes };
        this.ok(res, { callId: call.id, url: `https://app.gong.io/call?id=${call.id}` });
      }),
    );
    r.get(
      '/coaching',
      this.h((req, res) => {
        const missing = ['workspace-id', 'manager-id', 'from', 'to'].filter((k) => queryString(req, k) === undefined);
        if (missing.length) throw bad(...missing.map((k) => `Required request parameter '${k}' is not present`));
        const ws = queryString(req, 'workspace-id')!;
        const manager = this.user(queryString(req, 'manager-id')!);
        for (const k of ['from', 'to'])
          if (!DATE_TIME.test(queryString(req, k)!)) throw bad(`${k} must be an ISO-8601 date-time`);
        if (!this.workspaces.some((w) => w.id === ws)) throw new GongError(404, [`Workspace ${ws} not found`]);
        if (!manager || !this.users.some((u) => u.managerId === manager.id))
          throw bad(`manager-id ${queryString(req, 'manager-id')} is not a manager`);
        const reports = this.users.filter((u) => u.managerId === manager.id && u.active);
        this.ok(res, {
          coachingData: [
            {
              manager: {
                id: manager.id,
                emailAddress: manager.emailAddress,
                firstName: manager.firstName,
                lastName: manager.lastName,
                title: manager.title,
              },
              directReportsMetrics: reports.map((u) => ({
                report: {
                  id: u.id,
                  emailAddress: u.emailAddress,
                  firstName: u.firstName,
                  lastName: u.lastName,
                  title: u.title,
                },
                metrics: {
                  callsListened: ['2'],
                  callsAttended: ['1'],
                  callsWithFeedback: ['1'],
                  callsWithComments: ['3'],
                  scorecards: ['1'],
                },
              })),
            },
          ],
        });
      }),
    );

    // Digital interactions
    r.post(
      '/digital-interaction',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(
          b,
          ['eventId', 'timestamp', 'eventType', 'content', 'person', 'trackingId', 'device'],
          'the request body',
        );
        requireFields(b, ['eventId', 'timestamp', 'eventType', 'content'], '');
        if (typeof b.eventId !== 'string' || !b.eventId) throw bad('eventId must be a non-empty string');
        optionalDateTime(b, 'timestamp', '');
        if (typeof b.eventType !== 'string' || !b.eventType) throw bad('eventType must be a non-empty string');
        if (!isObject(b.content)) throw bad('content must be an object');
        onlyKnown(b.content, ['contentTitle', 'contentUrl', 'contentId', 'shortDescription'], 'content');
        if (typeof b.content.contentTitle !== 'string' || !b.content.contentTitle)
          throw bad('content.contentTitle is required');
        if (b.person !== undefined) {
          if (!isObject(b.person)) throw bad('person must be an object');
          onlyKnown(b.person, ['email', 'personBusinessContext', 'company'], 'person');
          const ctx = b.person.personBusinessContext;
          if (ctx !== undefined) {
            if (!isObject(ctx)) throw bad('person.personBusinessContext must be an object');
            onlyKnown(ctx, ['objectType', 'objectId'], 'person.personBusinessContext');
            if (ctx.objectType !== 'CONTACT' && ctx.objectType !== 'LEAD')
              throw bad('person.personBusinessContext.objectType must be CONTACT or LEAD');
            if (typeof ctx.objectId !== 'string' || !ctx.objectId)
              throw bad('person.personBusinessContext.objectId is required');
          }
          const company = b.person.company;
          if (company !== undefined) {
            if (!isObject(company)) throw bad('person.company must be an object');
            onlyKnown(company, ['companyBusinessContexts', 'domain'], 'person.company');
            const list = company.companyBusinessContexts;
            if (
              !Array.isArray(list) ||
              !list.every(
                (c) => isObject(c) && c.objectType === 'ACCOUNT' && typeof c.objectId === 'string' && c.objectId,
              )
            ) {
              throw bad('person.company.companyBusinessContexts must list {objectType: ACCOUNT, objectId}');
            }
          }
        }
        if (!this.digitalInteractions.some((d) => d.eventId === b.eventId)) this.digitalInteractions.push(b);
        this.ok(res, {});
      }),
    );

    // Engage flows
    r.get(
      '/flows',
      this.h((req, res) => {
        const owner = queryString(req, 'flowOwnerEmail');
        if (owner === undefined) throw bad("Required request parameter 'flowOwnerEmail' is not present");
        const ws = queryString(req, 'workspaceId');
        const list = this.flows.filter((f) => f.ownerEmail === owner && (!ws || f.workspaceId === ws));
        const { records, items } = this.page('flows', list, queryString(req, 'cursor'));
        this.ok(res, {
          records,
          flows: items.map((f) => ({
            id: f.id,
            name: f.name,
            folderId: f.folderId,
            folderName: this.folders.find((x) => x.id === f.folderId)?.name,
            visibility: f.visibility,
            creationDate: '2026-01-01T00:00:00Z',
            exclusive: false,
          })),
        });
      }),
    );
    r.get(
      '/flows/folders',
      this.h((req, res) => {
        const owner = queryString(req, 'flowFolderOwnerEmail');
        if (owner === undefined) throw bad("Required request parameter 'flowFolderOwnerEmail' is not present");
        const ws = queryString(req, 'workspaceId');
        const list = this.folders.filter((f) => f.ownerEmail === owner && (!ws || f.workspaceId === ws));
        const { records, items } = this.page('flows/folders', list, queryString(req, 'cursor'));
        // Gong returns the folders under "flows".
        this.ok(res, {
          records,
          flows: items.map((f) => ({
            id: f.id,
            name: f.name,
            visibility: 'Company',
            creationDate: '2026-01-01T00:00:00Z',
          })),
        });
      }),
    );
    r.post(
      '/flows/prospects',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['crmProspectsIds', 'flowInstanceIds'], 'the request body');
        const ids = b.crmProspectsIds;
        if (!Array.isArray(ids) || !ids.length || !ids.every((x) => typeof x === 'string' && x))
          throw bad('crmProspectsIds must be a non-empty list of CRM ids');
        if (ids.length > 200) throw bad('crmProspectsIds may hold at most 200 prospects');
        const list = (ids as string[]).flatMap((id) => this.instancesOf(id));
        this.ok(res, {
          prospectsAssigned: list.map((i) => ({ ...i, flowName: this.flows.find((f) => f.id === i.flowId)?.name })),
        });
      }),
    );
    r.post(
      '/flows/prospects/assign',
      this.h((req, res) => this.assignAnswer(res, body(req), false)),
    );
    r.post(
      '/flows/prospects/assign/cool-off-override',
      this.h((req, res) => this.assignAnswer(res, body(req), true)),
    );
    r.post(
      '/flows/prospects/bulk-assignments',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['flowId', 'flowInstanceOwnerEmail', 'prospects', 'overrides'], 'the request body');
        requireFields(b, ['flowId', 'flowInstanceOwnerEmail', 'prospects'], '');
        if (!isId(b.flowId)) throw bad('flowId must be a flow id as a string');
        if (!this.flows.some((f) => f.id === b.flowId)) throw new GongError(404, [`Flow ${b.flowId} not found`]);
        if (
          typeof b.flowInstanceOwnerEmail !== 'string' ||
          !this.users.some((u) => u.emailAddress === b.flowInstanceOwnerEmail)
        ) {
          throw bad('flowInstanceOwnerEmail is not a Gong user');
        }
        const prospects = b.prospects;
        if (!Array.isArray(prospects) || !prospects.length) throw bad('prospects must list at least one prospect');
        if (prospects.length > 50) throw bad('prospects may hold at most 50 prospects per bulk assignment');
        prospects.forEach((p, i) => {
          if (!isObject(p)) throw bad(`prospects[${i}] must be an object`);
          onlyKnown(p, ['crmId', 'flowInstanceVariables'], `prospects[${i}]`);
          if (typeof p.crmId !== 'string' || !p.crmId) throw bad(`prospects[${i}].crmId is required`);
        });
        const id = this.newId();
        this.bulkAssignments.set(id, {
          id,
          flowId: b.flowId,
          flowInstanceOwnerEmail: b.flowInstanceOwnerEmail,
          crmIds: prospects.map((p) => (p as Json).crmId as string),
          status: 'PENDING',
          results: [],
        });
        this.ok(res, { id, status: 'PENDING', totalCount: prospects.length }, 202);
      }),
    );
    r.get(
      '/flows/prospects/bulk-assignments/:id',
      this.h((req, res) => {
        const b = this.bulkAssignments.get(String(req.params.id));
        if (!b) throw new GongError(404, [`Bulk assignment ${asText(req.params.id)} not found`]);
        const failed = b.results.filter((x) => x.errorCode);
        this.ok(res, {
          id: b.id,
          flowId: b.flowId,
          status: b.status,
          totalCount: b.crmIds.length,
          successCount: b.results.length - failed.length,
          failureCount: failed.length,
          ...(b.status === 'COMPLETED' ? { results: b.results } : {}),
        });
      }),
    );
    r.post(
      '/flows/prospects/unassign-flows-by-crm-id',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['crmProspectId', 'flowId', 'unassignedByUserEmail'], 'the request body');
        requireFields(b, ['crmProspectId'], '');
        if (typeof b.crmProspectId !== 'string') throw bad('crmProspectId must be one CRM id (a string)');
        if (b.flowId !== undefined && !isId(b.flowId)) throw bad('flowId must be a flow id as a string');
        const hit = this.instancesOf(b.crmProspectId).filter(
          (i) => i.flowInstanceStatus === 'Running' && (!b.flowId || i.flowId === b.flowId),
        );
        for (const i of hit) i.flowInstanceStatus = 'Unassigned';
        this.ok(res, { unassignedFlowInstanceIds: hit.map((i) => i.flowInstanceId) });
      }),
    );
    r.post(
      '/flows/prospects/unassign-flows-by-instance-id',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['flowInstanceIds', 'unassignedByUserEmail'], 'the request body');
        if (!isIdList(b.flowInstanceIds) || !b.flowInstanceIds.length)
          throw bad('flowInstanceIds must be a non-empty list of flow instance ids as strings');
        if (b.flowInstanceIds.length > 200) throw bad('flowInstanceIds may hold at most 200 instances');
        const done: string[] = [];
        for (const id of b.flowInstanceIds) {
          const i = this.instances.get(id);
          if (i && i.flowInstanceStatus === 'Running') {
            i.flowInstanceStatus = 'Unassigned';
            done.push(id);
          }
        }
        this.ok(res, { unassignedFlowInstanceIds: done });
      }),
    );

    // Engage tasks
    r.post(
      '/tasks',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['filter'], 'the request body');
        const f = b.filter;
        if (!isObject(f)) throw bad('filter is required');
        onlyKnown(f, ['userId', 'workspaceId', 'types', 'taskAction', 'status'], 'filter');
        requireFields(f, ['userId', 'types', 'taskAction', 'status'], 'filter.');
        if (!isId(f.userId))
          throw bad(`filter.userId must be a Gong user id as a string, got ${JSON.stringify(f.userId)}`);
        const enumList = (v: unknown, allowed: string[], name: string) => {
          if (!Array.isArray(v) || !v.length || !v.every((x) => allowed.includes(x as string)))
            throw bad(`filter.${name} must list values of ${allowed.join(', ')}`);
          return v as string[];
        };
        const types = enumList(f.types, ['FLOW', 'MANUAL'], 'types');
        const actions = enumList(f.taskAction, ['CALL'], 'taskAction');
        const statuses = enumList(f.status, TASK_STATUSES, 'status');
        if (f.workspaceId !== undefined && !isId(f.workspaceId))
          throw bad('filter.workspaceId must be a workspace id as a string');
        const list = [...this.tasks.values()].filter(
          (t) =>
            t.userId === f.userId &&
            types.includes(t.type) &&
            actions.includes(t.taskAction) &&
            statuses.includes(t.status) &&
            (!f.workspaceId || t.workspaceId === f.workspaceId),
        );
        if (!list.length) throw new GongError(404, ['No tasks found']);
        this.ok(res, { crmType: 'SALESFORCE', tasks: list });
      }),
    );
    r.patch(
      '/tasks/:taskId',
      this.h((req, res) => {
        const b = body(req);
        onlyKnown(b, ['userId', 'status', 'dueDate', 'priority'], 'the request body');
        requireFields(b, ['userId'], '');
        if (!isId(b.userId)) throw bad('userId must be a Gong user id as a string');
        const task = this.tasks.get(String(req.params.taskId));
        if (!task) throw new GongError(404, [`Task ${asText(req.params.taskId)} not found`]);
        if (task.userId !== b.userId) throw new GongError(403, [`Task ${task.id} does not belong to user ${b.userId}`]);
        if (b.status !== undefined) {
          if (!TASK_STATUSES.includes(asText(b.status))) throw bad(`status must be one of ${TASK_STATUSES.join(', ')}`);
          if (task.status !== 'OPEN')
            throw bad(`Task ${task.id} is ${task.status}; only an OPEN task can change status`);
          task.status = b.status as GongTask['status'];
        }
        this.ok(res, { crmType: 'SALESFORCE', tasks: [task] });
      }),
    );

    // Stats
    r.post(
      '/stats/interaction',
      this.h((req, res) => {
        const b = body(req);
        const { userIds } = this.statsPeriod(b);
        const list = this.users.filter((u) => !u.isAvatar && u.active && (!userIds || userIds.includes(u.id)));
        const { records, items } = this.page('stats/interaction', list, b.cursor);
        this.ok(res, {
          records,
          peopleInteractionStats: items.map((u) => ({
            userId: u.id,
            userEmailAddress: u.emailAddress,
            personInteractionStats: [
              { name: 'Talk Ratio', value: 0.5 },
              { name: 'Longest Monologue', value: 120 },
              { name: 'Patience', value: 0.9 },
              { name: 'Question Rate', value: 5 },
              { name: 'Interactivity', value: 6 },
            ],
          })),
        });
      }),
    );
    r.post(
      '/stats/activity/aggregate',
      this.h((req, res) => {
        const b = body(req);
        const { fromDate, toDate, userIds } = this.statsPeriod(b);
        if (userIds) for (const id of userIds) if (!this.user(id)) throw new GongError(404, [`User ${id} not found`]);
        const list = this.users.filter((u) => !u.isAvatar && (!userIds || userIds.includes(u.id)));
        const { records, items } = this.page('stats/activity/aggregate', list, b.cursor);
        this.ok(res, {
          fromDateTime: `${fromDate}T00:00:00Z`,
          toDateTime: `${toDate}T00:00:00Z`,
          timeZone: 'UTC',
          records,
          usersAggregateActivityStats: items.map((u) => ({
            userId: u.id,
            userEmailAddress: u.emailAddress,
            userAggregateActivity: {
              callsAsHost: [...this.calls.values()].filter((c) => c.primaryUserId === u.id).length,
              callsAttended: 1,
              callsGaveFeedback: 0,
              callsReceivedFeedback: 1,
              callsScorecardsFilled: 1,
              callsScorecardsReceived: 2,
              ownCallsListenedTo: 3,
              othersCallsListenedTo: 4,
            },
          })),
        });
      }),
    );
  }
}
