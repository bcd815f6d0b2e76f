/**
 * A fake CRM portal speaking the HubSpot CRM API v3 wire format for contacts, companies and deals:
 * `Authorization: Bearer <token>` checked against a (fake) OAuth server, granular scopes per object and
 * access (`crm.objects.contacts.read`, ...), `{"properties":{...}}` write bodies whose property names and
 * values are checked against the portal's property definitions (unknown names are PROPERTY_DOESNT_EXIST,
 * enumeration options are case-sensitive, numbers and dates must parse), 409 on a duplicate contact email,
 * list paging with an opaque `paging.next.after` cursor, search with `filterGroups` (OR of ANDed filters)
 * and offset cursors in the body, HubSpot's error body (`status`, `message`, `correlationId`, `category`)
 * and 429 with `X-HubSpot-RateLimit-*` (and, when asked, `Retry-After`).
 * The object type ids `0-1`, `0-2`, `0-3` are accepted for contacts, companies and deals.
 */
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';
import { asText } from '../helpers/text.ts';

export type ObjectType = 'contacts' | 'companies' | 'deals';

export interface CrmRecord {
  id: string;
  properties: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  archived: boolean;
  archivedAt?: string;
}

export interface PropertyDef {
  type: 'string' | 'number' | 'enumeration' | 'datetime' | 'bool';
  options?: string[];
  readOnly?: boolean;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  objectType?: ObjectType;
  query: Record<string, unknown>;
  body: unknown;
  authorization?: string;
  contentType?: string;
}

/** What the fake needs from the OAuth server that issued the tokens (FakeOAuthServer fits). */
export interface TokenAuthority {
  validate(token: string | undefined): { scope: string } | undefined;
  issuedAccessTokens(): string[];
}

const TYPE_IDS: Record<string, ObjectType> = {
  contacts: 'contacts',
  companies: 'companies',
  deals: 'deals',
  '0-1': 'contacts',
  '0-2': 'companies',
  '0-3': 'deals',
};

const str: PropertyDef = { type: 'string' };
const num: PropertyDef = { type: 'number' };
const when: PropertyDef = { type: 'datetime' };
const readOnlyNum: PropertyDef = { type: 'number', readOnly: true };
const readOnlyWhen: PropertyDef = { type: 'datetime', readOnly: true };

export function defaultProperties(): Record<ObjectType, Record<string, PropertyDef>> {
  return {
    contacts: {
      email: str,
      firstname: str,
      lastname: str,
      company: str,
      jobtitle: str,
      phone: str,
      website: str,
      lifecyclestage: {
        type: 'enumeration',
        options: [
          'subscriber',
          'lead',
          'marketingqualifiedlead',
          'salesqualifiedlead',
          'opportunity',
          'customer',
          'evangelist',
          'other',
        ],
      },
      hs_lead_status: {
        type: 'enumeration',
        options: [
          'NEW',
          'OPEN',
          'IN_PROGRESS',
          'OPEN_DEAL',
          'UNQUALIFIED',
          'ATTEMPTED_TO_CONTACT',
          'CONNECTED',
          'BAD_TIMING',
        ],
      },
      createdate: when,
      lastmodifieddate: readOnlyWhen,
      hs_object_id: readOnlyNum,
    },
    companies: {
      name: str,
      domain: str,
      city: str,
      state: str,
      country: str,
      phone: str,
      description: str,
      industry: {
        type: 'enumeration',
        options: [
          'COMPUTER_SOFTWARE',
          'INFORMATION_TECHNOLOGY_AND_SERVICES',
          'FINANCIAL_SERVICES',
          'RETAIL',
          'MACHINERY',
          'HOSPITAL_HEALTH_CARE',
        ],
      },
      numberofemployees: num,
      annualrevenue: num,
      createdate: when,
      hs_lastmodifieddate: readOnlyWhen,
      hs_object_id: readOnlyNum,
    },
    deals: {
      dealname: str,
      description: str,
      amount: num,
      dealstage: {
        type: 'enumeration',
        options: [
          'appointmentscheduled',
          'qualifiedtobuy',
          'presentationscheduled',
          'decisionmakerboughtin',
          'contractsent',
          'closedwon',
          'closedlost',
        ],
      },
      pipeline: { type: 'enumeration', options: ['default'] },
      closedate: when,
      dealtype: { type: 'enumeration', options: ['newbusiness', 'existingbusiness'] },
      hs_priority: { type: 'enumeration', options: ['low', 'medium', 'high'] },
      // A custom property of this portal (see the provider notes on `good_deal`); removable per test.
      good_deal: { type: 'bool' },
      createdate: when,
      hs_lastmodifieddate: readOnlyWhen,
      hs_object_id: readOnlyNum,
    },
  };
}

/** The properties HubSpot returns when a read names none. */
const DEFAULT_READ: Record<ObjectType, string[]> = {
  contacts: ['createdate', 'email', 'firstname', 'hs_object_id', 'lastmodifieddate', 'lastname'],
  companies: ['createdate', 'domain', 'hs_lastmodifieddate', 'hs_object_id', 'name'],
  deals: [
    'amount',
    'closedate',
    'createdate',
    'dealname',
    'dealstage',
    'hs_lastmodifieddate',
    'hs_object_id',
    'pipeline',
  ],
};
/** Always in search results besides the requested properties. */
const SEARCH_ALWAYS: Record<ObjectType, string[]> = {
  contacts: ['createdate', 'hs_object_id', 'lastmodifieddate'],
  companies: ['createdate', 'hs_lastmodifieddate', 'hs_object_id'],
  deals: ['createdate', 'hs_lastmodifieddate', 'hs_object_id'],
};
/** Properties the free-text `query` of a search looks in. */
const SEARCHABLE: Record<ObjectType, string[]> = {
  contacts: ['firstname', 'lastname', 'email', 'phone', 'company'],
  companies: ['name', 'domain', 'phone'],
  deals: ['dealname', 'description'],
};
const MODIFIED: Record<ObjectType, string> = {
  contacts: 'lastmodifieddate',
  companies: 'hs_lastmodifieddate',
  deals: 'hs_lastmodifieddate',
};
const FIRST_ID: Record<ObjectType, number> = { contacts: 101, companies: 9001, deals: 5001 };

export const OPERATORS = [
  'EQ',
  'NEQ',
  'LT',
  'LTE',
  'GT',
  'GTE',
  'BETWEEN',
  'IN',
  'NOT_IN',
  'HAS_PROPERTY',
  'NOT_HAS_PROPERTY',
  'CONTAINS_TOKEN',
  'NOT_CONTAINS_TOKEN',
] as const;

const SEARCH_FIELDS = new Set(['query', 'filterGroups', 'properties', 'limit', 'after', 'sorts']);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

interface PropertyProblem {
  name: string;
  error: string;
  message: string;
}

export interface FakeCrmOptions {
  /** Seed a few contacts (one archived), companies and deals (default true). */
  seed?: boolean;
}

export class FakeCrm {
  readonly records: Record<ObjectType, Map<string, CrmRecord>> = {
    contacts: new Map(),
    companies: new Map(),
    deals: new Map(),
  };
  readonly properties = defaultProperties();
  readonly requests: ReceivedRequest[] = [];
  /** Answer the next N requests with 429; with `retryAfter` (seconds) a Retry-After header is sent too. */
  rateLimit: { count: number; retryAfter?: number } = { count: 0 };
  readonly portalId = 4242001;
  private nextId: Record<ObjectType, number> = { ...FIRST_ID };
  private listening!: Listening;

  constructor(
    private readonly tokens: TokenAuthority,
    opts: FakeCrmOptions = {},
  ) {
    if (opts.seed ?? true) this.seed();
  }

  get url(): string {
    return this.listening.url;
  }

  /** Adds a record directly (test setup); values are stored as given. */
  add(type: ObjectType, properties: Record<string, string>, opts: { archived?: boolean } = {}): CrmRecord {
    const id = String(this.nextId[type]++);
    const now = new Date().toISOString();
    const record: CrmRecord = {
      id,
      properties: { ...properties, hs_object_id: id, createdate: properties.createdate ?? now, [MODIFIED[type]]: now },
      createdAt: now,
      updatedAt: now,
      archived: !!opts.archived,
      ...(opts.archived ? { archivedAt: now } : {}),
    };
    this.records[type].set(id, record);
    return record;
  }

  find(type: ObjectType, property: string, value: string): CrmRecord | undefined {
    return [...this.records[type].values()].find((r) => r.properties[property] === value);
  }

  private seed() {
    this.add('contacts', {
      email: 'alice@acme.com',
      firstname: 'Alice',
      lastname: 'Archer',
      company: 'Acme',
      hs_lead_status: 'NEW',
      lifecyclestage: 'lead',
    });
    this.add('contacts', {
      email: 'bob@globex.com',
      firstname: 'Bob',
      lastname: 'Baker',
      company: 'Globex',
      hs_lead_status: 'OPEN',
      lifecyclestage: 'customer',
    });
    this.add('contacts', {
      email: 'carol@acme.com',
      firstname: 'Carol',
      lastname: 'Cook',
      company: 'Acme',
      hs_lead_status: 'CONNECTED',
      lifecyclestage: 'opportunity',
    });
    this.add(
      'contacts',
      { email: 'old@initech.com', firstname: 'Olivia', lastname: 'Old', company: 'Initech' },
      { archived: true },
    );
    this.add('companies', {
      name: 'Acme',
      domain: 'acme.com',
      numberofemployees: '250',
      annualrevenue: '10000000',
      industry: 'COMPUTER_SOFTWARE',
    });
    this.add('companies', {
      name: 'Globex',
      domain: 'globex.com',
      numberofemployees: '40',
      annualrevenue: '2000000',
      industry: 'RETAIL',
    });
    this.add('companies', {
      name: 'Initech',
      domain: 'initech.com',
      numberofemployees: '1200',
      annualrevenue: '90000000',
      industry: 'FINANCIAL_SERVICES',
    });
    this.add('deals', {
      dealname: 'Acme expansion',
      amount: '12000',
      dealstage: 'qualifiedtobuy',
      pipeline: 'default',
      hs_priority: 'medium',
    });
    this.add('deals', {
      dealname: 'Globex pilot',
      amount: '3000',
      dealstage: 'appointmentscheduled',
      pipeline: 'default',
    });
    this.add('deals', {
      dealname: 'Initech enterprise',
      amount: '250000',
      dealstage: 'qualifiedtobuy',
      pipeline: 'default',
      hs_priority: 'high',
    });
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use(express.json({ limit: '1mb' }));
    app.use((err: Error, _req: Request, res: Response, next: NextFunction) => {
      if (!err) return next();
      this.send(res, this.error(400, 'VALIDATION_ERROR', `Invalid input JSON: ${err.message}`));
    });
    app.use('/crm/v3/objects/:type', (req, res, next) => this.gate(req, res, next));
    const r = express.Router({ mergeParams: true });
    r.get('/', (req, res) => this.handle(res, () => this.list(req)));
    r.post('/', (req, res) => this.handle(res, () => this.create(req), 201));
    r.post('/search', (req, res) => this.handle(res, () => this.search(req)));
    r.get('/:id', (req, res) => this.handle(res, () => this.get(req)));
    r.patch('/:id', (req, res) => this.handle(res, () => this.update(req)));
    app.use('/crm/v3/objects/:type', r);
    app.use((req, res) => {
      this.requests.push({
        method: req.method,
        path: req.path,
        query: req.query,
        body: req.body,
        authorization: req.headers.authorization,
      });
      res.status(404).type('text').send('');
    });
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  // Plumbing

  private error(status: number, category: string, message: string, extra: Record<string, unknown> = {}): HttpError {
    return new HttpError(status, { status: 'error', message, correlationId: randomUUID(), category, ...extra });
  }

  private send(res: Response, e: HttpError) {
    res.status(e.status).json(e.body);
  }

  private handle(res: Response, fn: () => unknown, status = 200) {
    try {
      res.status(status).json(fn());
    } catch (e) {
      if (e instanceof HttpError) this.send(res, e);
      else throw e;
    }
  }

  private type(req: Request): ObjectType {
    return TYPE_IDS[String(req.params.type)]!;
  }

  private gate(req: Request, res: Response, next: NextFunction) {
    const type = TYPE_IDS[String(req.params.type)];
    this.requests.push({
      method: req.method,
      path: req.originalUrl.split('?')[0]!,
      objectType: type,
      query: req.query,
      body: req.body,
      authorization: req.headers.authorization,
      contentType: req.headers['content-type'],
    });
    if (this.rateLimit.count > 0) {
      this.rateLimit.count--;
      res.setHeader('x-hubspot-ratelimit-interval-milliseconds', '10000');
      res.setHeader('x-hubspot-ratelimit-max', '110');
      res.setHeader('x-hubspot-ratelimit-remaining', '0');
      if (this.rateLimit.retryAfter !== undefined) res.setHeader('retry-after', String(this.rateLimit.retryAfter));
      return this.send(
        res,
        this.error(429, 'RATE_LIMITS', 'You have reached your ten_secondly_rolling limit.', {
          errorType: 'RATE_LIMIT',
          policyName: 'TEN_SECONDLY_ROLLING',
        }),
      );
    }
    const header = req.headers.authorization ?? '';
    const bearer = /^Bearer (\S+)$/.exec(header)?.[1];
    const grant = this.tokens.validate(bearer);
    if (!grant) {
      const expired = bearer !== undefined && this.tokens.issuedAccessTokens().includes(bearer);
      return this.send(
        res,
        expired
          ? this.error(401, 'EXPIRED_AUTHENTICATION', 'The OAuth token used to make this call expired 1 minute(s) ago.')
          : this.error(
              401,
              'INVALID_AUTHENTICATION',
              'Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview',
            ),
      );
    }
    if (!type) return void res.status(404).type('text').send('');
    const write = req.method === 'PATCH' || (req.method === 'POST' && !req.path.endsWith('/search'));
    const needed = `crm.objects.${type}.${write ? 'write' : 'read'}`;
    if (!grant.scope.split(' ').includes(needed)) {
      return this.send(
        res,
        this.error(
          403,
          'MISSING_SCOPES',
          "This app hasn't been granted all required scopes to make this call. Read more about required scopes here: https://developers.hubspot.com/scopes.",
          {
            errors: [
              {
                message: 'One or more of the following scopes are required.',
                context: { requiredGranularScopes: [needed] },
              },
            ],
            links: { scopes: 'https://developers.hubspot.com/scopes' },
          },
        ),
      );
    }
    if (
      (req.method === 'POST' || req.method === 'PATCH') &&
      !String(req.headers['content-type'] ?? '').startsWith('application/json')
    ) {
      return void res.status(415).json({
        status: 'error',
        message: 'Unsupported Media Type',
        correlationId: randomUUID(),
        category: 'UNSUPPORTED_MEDIA_TYPE',
      });
    }
    next();
  }

  // Properties

  private requested(req: Request): string[] | undefined {
    const raw = req.query.properties;
    if (raw === undefined) return undefined;
    const list = (Array.isArray(raw) ? raw : [raw]).flatMap((v) => asText(v).split(','));
    return list.filter((p) => p.length > 0);
  }

  private view(type: ObjectType, r: CrmRecord, names: string[] | undefined, always: string[] = []) {
    const wanted = [...new Set([...(names ?? DEFAULT_READ[type]), ...always])];
    const properties: Record<string, string | null> = {};
    for (const n of wanted) if (this.properties[type][n]) properties[n] = r.properties[n] ?? null;
    return {
      id: r.id,
      properties,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
      archived: r.archived,
      ...(r.archivedAt ? { archivedAt: r.archivedAt } : {}),
    };
  }

  /** Checks and normalises a `properties` write object; throws HubSpot's VALIDATION_ERROR listing every problem. */
  private checkProperties(type: ObjectType, input: unknown, allowed: readonly string[]): Record<string, string> {
    if (!input || typeof input !== 'object' || Array.isArray(input)) {
      throw this.error(
        400,
        'VALIDATION_ERROR',
        'Invalid input JSON on line 1: "properties" must be an object of property name to value',
      );
    }
    const body = input as Record<string, unknown>;
    for (const k of Object.keys(body)) {
      if (!allowed.includes(k)) {
        throw this.error(400, 'VALIDATION_ERROR', `Invalid input JSON on line 1, column 2: Unrecognized field "${k}"`);
      }
    }
    const props = body.properties;
    if (!props || typeof props !== 'object' || Array.isArray(props)) {
      throw this.error(
        400,
        'VALIDATION_ERROR',
        'Invalid input JSON on line 1: "properties" must be an object of property name to value',
      );
    }
    const problems: PropertyProblem[] = [];
    const out: Record<string, string> = {};
    for (const [name, raw] of Object.entries(props as Record<string, unknown>)) {
      const def = this.properties[type][name];
      if (!def) {
        problems.push({ name, error: 'PROPERTY_DOESNT_EXIST', message: `Property "${name}" does not exist` });
        continue;
      }
      if (def.readOnly) {
        problems.push({
          name,
          error: 'READ_ONLY_VALUE',
          message: `${name} is a read only property; its value cannot be set.`,
        });
        continue;
      }
      // HubSpot's schema says strings; it also coerces JSON numbers. Nothing else is a property value.
      if (typeof raw !== 'string' && typeof raw !== 'number') {
        problems.push({
          name,
          error: 'INVALID_PROPERTY_VALUE',
          message: `${JSON.stringify(raw)} is not a valid value for ${name}; property values are strings`,
        });
        continue;
      }
      const value = String(raw);
      if (value === '') {
        out[name] = '';
        continue;
      }
      const problem = this.checkValue(name, def, value);
      if (problem) problems.push(problem);
      else out[name] = def.type === 'datetime' ? toDateTime(value)! : value;
    }
    if (type === 'contacts' && out.email !== undefined && out.email !== '' && !EMAIL.test(out.email)) {
      problems.push({ name: 'email', error: 'INVALID_EMAIL', message: `Email address ${out.email} is invalid` });
    }
    if (problems.length) {
      const list = problems.map((p) => ({
        isValid: false,
        message: p.message,
        error: p.error,
        name: p.name,
        localizedErrorMessage: p.message,
        portalId: this.portalId,
      }));
      throw this.error(400, 'VALIDATION_ERROR', `Property values were not valid: ${JSON.stringify(list)}`, {
        errors: problems.map((p) => ({ message: p.message, code: p.error, context: { propertyName: [p.name] } })),
      });
    }
    return out;
  }

  private checkValue(name: string, def: PropertyDef, value: string): PropertyProblem | undefined {
    switch (def.type) {
      case 'number':
        return Number.isFinite(Number(value)) && value.trim() !== ''
          ? undefined
          : { name, error: 'INVALID_FLOAT', message: `${value} was not a valid number.` };
      case 'enumeration':
        return def.options!.includes(value)
          ? undefined
          : {
              name,
              error: 'INVALID_OPTION',
              message: `${value} was not one of the allowed options: [${def.options!.join(', ')}]`,
            };
      case 'bool':
        return value === 'true' || value === 'false'
          ? undefined
          : { name, error: 'INVALID_OPTION', message: `${value} was not one of the allowed options: [true, false]` };
      case 'datetime':
        return toDateTime(value)
          ? undefined
          : { name, error: 'INVALID_DATE', message: `${value} was not a valid date or epoch milliseconds.` };
      default:
        return undefined;
    }
  }

  private duplicateEmail(email: string | undefined, except?: string): CrmRecord | undefined {
    if (!email) return undefined;
    const lower = email.toLowerCase();
    return [...this.records.contacts.values()].find(
      (r) => !r.archived && r.id !== except && r.properties.email?.toLowerCase() === lower,
    );
  }

  // Endpoints

  private create(req: Request) {
    const type = this.type(req);
    const props = this.checkProperties(type, req.body, ['properties', 'associations', 'objectWriteTraceId']);
    if (type === 'contacts') {
      const existing = this.duplicateEmail(props.email);
      if (existing) throw this.error(409, 'CONFLICT', `Contact already exists. Existing ID: ${existing.id}`);
    }
    if (type === 'deals') {
      if (!props.dealstage) {
        throw this.error(
          400,
          'VALIDATION_ERROR',
          'Property values were not valid: [{"isValid":false,"message":"dealstage is required","error":"REQUIRED_PROPERTY","name":"dealstage"}]',
        );
      }
      props.pipeline ||= 'default';
    }
    const record = this.add(type, props);
    return this.view(type, record, Object.keys(record.properties));
  }

  private record(req: Request, allowArchived = false): CrmRecord {
    const type = this.type(req);
    const id = String(req.params.id);
    const r = this.records[type].get(id);
    if (!r || (r.archived && !allowArchived)) {
      throw this.error(404, 'OBJECT_NOT_FOUND', 'Object not found.  objectId are usually numeric.', {
        context: { id: [id] },
      });
    }
    return r;
  }

  private get(req: Request) {
    const type = this.type(req);
    const r = this.record(req, req.query.archived === 'true');
    return this.view(type, r, this.requested(req));
  }

  private update(req: Request) {
    const type = this.type(req);
    const r = this.record(req);
    const props = this.checkProperties(type, req.body, ['properties', 'objectWriteTraceId']);
    if (type === 'contacts' && props.email) {
      const existing = this.duplicateEmail(props.email, r.id);
      if (existing) throw this.error(409, 'CONFLICT', `Contact already exists. Existing ID: ${existing.id}`);
    }
    const now = new Date().toISOString();
    Object.assign(r.properties, props, { [MODIFIED[type]]: now });
    r.updatedAt = now;
    return this.view(type, r, Object.keys(r.properties));
  }

  private limit(raw: unknown, max: number): number {
    if (raw === undefined) return 10;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw this.error(
        400,
        'VALIDATION_ERROR',
        `limit must be an integer between 1 and ${max}, got ${JSON.stringify(raw)}`,
      );
    }
    return n;
  }

  private list(req: Request) {
    const type = this.type(req);
    const limit = this.limit(req.query.limit, 100);
    const archivedParam = req.query.archived;
    if (archivedParam !== undefined && archivedParam !== 'true' && archivedParam !== 'false') {
      throw this.error(400, 'VALIDATION_ERROR', `archived must be true or false, got ${JSON.stringify(archivedParam)}`);
    }
    const archived = archivedParam === 'true';
    let startId = 0;
    if (req.query.after !== undefined) {
      const decoded = /^next:(\d+)$/.exec(Buffer.from(asText(req.query.after), 'base64').toString('utf8'));
      if (!decoded) throw this.error(400, 'VALIDATION_ERROR', `Invalid paging cursor: ${asText(req.query.after)}`);
      startId = Number(decoded[1]);
    }
    const all = [...this.records[type].values()]
      .filter((r) => r.archived === archived && Number(r.id) >= startId)
      .sort((a, b) => Number(a.id) - Number(b.id));
    const page = all.slice(0, limit);
    const names = this.requested(req);
    const out: Record<string, unknown> = { results: page.map((r) => this.view(type, r, names)) };
    const next = all[limit];
    if (next) {
      const after = Buffer.from(`next:${next.id}`).toString('base64');
      out.paging = {
        next: {
          after,
          link: `https://api.hubapi.com/crm/v3/objects/${type}?after=${encodeURIComponent(after)}&limit=${limit}`,
        },
      };
    }
    return out;
  }

  private search(req: Request) {
    const type = this.type(req);
    const body = req.body as Record<string, unknown>;
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw this.error(400, 'VALIDATION_ERROR', 'Invalid input JSON: the body must be an object');
    for (const k of Object.keys(body)) {
      if (!SEARCH_FIELDS.has(k))
        throw this.error(400, 'VALIDATION_ERROR', `Invalid input JSON on line 1, column 2: Unrecognized field "${k}"`);
    }
    if (body.query !== undefined && typeof body.query !== 'string')
      throw this.error(400, 'VALIDATION_ERROR', 'query must be a string');
    const limit = this.limit(body.limit, 200);
    if (body.limit !== undefined && typeof body.limit !== 'number')
      throw this.error(400, 'VALIDATION_ERROR', 'limit must be a number');
    let offset = 0;
    if (body.after !== undefined) {
      if (typeof body.after !== 'string' || !/^\d+$/.test(body.after))
        throw this.error(
          400,
          'VALIDATION_ERROR',
          `after must be a paging cursor string, got ${JSON.stringify(body.after)}`,
        );
      offset = Number(body.after);
    }
    let names: string[] | undefined;
    if (body.properties !== undefined) {
      if (!Array.isArray(body.properties) || !body.properties.every((p) => typeof p === 'string')) {
        throw this.error(400, 'VALIDATION_ERROR', 'Invalid input JSON: "properties" must be an array of strings');
      }
      names = body.properties;
    }
    const groups = this.checkFilterGroups(type, body.filterGroups);
    const query = typeof body.query === 'string' ? body.query.trim().toLowerCase() : '';
    const matching = [...this.records[type].values()]
      .filter((r) => !r.archived)
      .filter((r) => !query || SEARCHABLE[type].some((p) => (r.properties[p] ?? '').toLowerCase().includes(query)))
      .filter((r) => !groups.length || groups.some((g) => g.filters.every((f) => this.matches(type, r, f))))
      .sort((a, b) => Number(a.id) - Number(b.id));
    const page = matching.slice(offset, offset + limit);
    return {
      total: matching.length,
      results: page.map((r) => this.view(type, r, names ?? DEFAULT_READ[type], SEARCH_ALWAYS[type])),
      ...(offset + limit < matching.length ? { paging: { next: { after: String(offset + limit) } } } : {}),
    };
  }

  private checkFilterGroups(type: ObjectType, raw: unknown): Array<{ filters: Filter[] }> {
    if (raw === undefined) return [];
    if (!Array.isArray(raw))
      throw this.error(400, 'VALIDATION_ERROR', 'Invalid input JSON: "filterGroups" must be an array of filter groups');
    if (raw.length > 5)
      throw this.error(400, 'VALIDATION_ERROR', `Too many filter groups (${raw.length}); the limit is 5`);
    let total = 0;
    for (const g of raw) {
      const filters = (g as { filters?: unknown })?.filters;
      if (!g || typeof g !== 'object' || !Array.isArray(filters)) {
        throw this.error(
          400,
          'VALIDATION_ERROR',
          'Invalid input JSON: each filter group must be an object with a "filters" array',
        );
      }
      if (filters.length > 10)
        throw this.error(400, 'VALIDATION_ERROR', `Too many filters in a group (${filters.length}); the limit is 10`);
      total += filters.length;
      for (const f of filters as Filter[]) {
        if (!f || typeof f.propertyName !== 'string')
          throw this.error(400, 'VALIDATION_ERROR', 'Each filter needs a "propertyName"');
        if (!(OPERATORS as readonly string[]).includes(f.operator)) {
          throw this.error(
            400,
            'VALIDATION_ERROR',
            `Invalid input JSON: operator ${JSON.stringify(f.operator)} is not one of ${OPERATORS.join(', ')}`,
          );
        }
        if (!this.properties[type][f.propertyName]) {
          throw this.error(
            400,
            'VALIDATION_ERROR',
            `There was a problem with the request: property "${f.propertyName}" does not exist`,
          );
        }
        const needsValue = !['HAS_PROPERTY', 'NOT_HAS_PROPERTY', 'IN', 'NOT_IN'].includes(f.operator);
        if (needsValue && (f.value === undefined || f.value === null))
          throw this.error(400, 'VALIDATION_ERROR', `Filter on ${f.propertyName} with ${f.operator} needs a "value"`);
        if ((f.operator === 'IN' || f.operator === 'NOT_IN') && !Array.isArray(f.values)) {
          throw this.error(400, 'VALIDATION_ERROR', `Filter on ${f.propertyName} with ${f.operator} needs "values"`);
        }
        if (f.operator === 'BETWEEN' && (f.highValue === undefined || f.highValue === null)) {
          throw this.error(400, 'VALIDATION_ERROR', `Filter on ${f.propertyName} with BETWEEN needs a "highValue"`);
        }
      }
    }
    if (total > 25) throw this.error(400, 'VALIDATION_ERROR', `Too many filters (${total}); the limit is 25 in total`);
    return raw as Array<{ filters: Filter[] }>;
  }

  private matches(type: ObjectType, r: CrmRecord, f: Filter): boolean {
    const def = this.properties[type][f.propertyName]!;
    const actual = r.properties[f.propertyName];
    const has = actual !== undefined && actual !== '';
    const cmp = (a: string, b: unknown): number => {
      if (def.type === 'number') return Number(a) - Number(b);
      if (def.type === 'datetime') return Date.parse(a) - Date.parse(toDateTime(String(b)) ?? '');
      return a.toLowerCase().localeCompare(String(b).toLowerCase());
    };
    const eq = (a: string, b: unknown) => has && cmp(a, b) === 0;
    switch (f.operator) {
      case 'EQ':
        return eq(actual!, f.value);
      case 'NEQ':
        return !eq(actual ?? '', f.value);
      case 'LT':
        return has && cmp(actual, f.value) < 0;
      case 'LTE':
        return has && cmp(actual, f.value) <= 0;
      case 'GT':
        return has && cmp(actual, f.value) > 0;
      case 'GTE':
        return has && cmp(actual, f.value) >= 0;
      case 'BETWEEN':
        return has && cmp(actual, f.value) >= 0 && cmp(actual, f.highValue) <= 0;
      case 'IN':
        return (f.values ?? []).some((v) => eq(actual!, v));
      case 'NOT_IN':
        return !(f.values ?? []).some((v) => eq(actual ?? '', v));
      case 'HAS_PROPERTY':
        return has;
      case 'NOT_HAS_PROPERTY':
        return !has;
      case 'CONTAINS_TOKEN':
        return has && containsToken(actual, String(f.value));
      case 'NOT_CONTAINS_TOKEN':
        return !has || !containsToken(actual, String(f.value));
    }
  }
}

interface Filter {
  propertyName: string;
  operator: (typeof OPERATORS)[number];
  value?: unknown;
  highValue?: unknown;
  values?: unknown[];
}

/** A token of the value equals the given one (case-insensitive); `*` is a wildcard over the whole value or a token. */
export function containsToken(value: string, token: string): boolean {
  const v = value.toLowerCase();
  const t = token.toLowerCase();
  if (t.includes('*')) {
    const re = new RegExp(
      `^${t
        .split('*')
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    );
    return re.test(v) || v.split(/\s+/).some((x) => re.test(x));
  }
  return v === t || v.split(/[^a-z0-9]+/).includes(t);
}

/** `YYYY-MM-DD` (midnight UTC), an ISO date-time or epoch milliseconds → ISO date-time; undefined when none. */
export function toDateTime(value: string): string | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const t = Date.parse(`${value}T00:00:00Z`);
    return Number.isNaN(t) ? undefined : `${value}T00:00:00Z`;
  }
  if (/^\d{10,}$/.test(value)) return new Date(Number(value)).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T/.test(value) && !Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  return undefined;
}
