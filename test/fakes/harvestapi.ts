/**
 * A fake of the professional-network data REST API (HarvestAPI, `https://api.harvest-api.com`) speaking its
 * wire format: `X-API-Key` authentication, GET endpoints under `/linkedin/...` with camelCase query parameters,
 * item responses `{element, status, error, query, originalQuery, entityId, requestId, cost, payments}`, list
 * responses `{elements, pagination{totalPages,totalElements,pageNumber,previousElements,pageSize,paginationToken},
 * ...}` and errors as `{error}` with a 4xx status.
 *
 * It is stricter than the real API on purpose, so that a mapping mistake fails a test instead of passing
 * silently: every endpoint accepts only its own camelCase parameters (a snake_case or misspelt name is a 400),
 * enumerated values and booleans are checked, the one-of identity parameters are required, lead search refuses
 * page > 100 and too many comma-separated values, and the endpoints whose pages above 1 need a token
 * (profile comments, profile reactions) accept only a token this fake issued for that endpoint and page.
 */
import { randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';

type Query = Record<string, string>;

interface Endpoint {
  /** Every query parameter the endpoint accepts. */
  params: readonly string[];
  required?: readonly string[];
  /** At least one of these must be given. */
  oneOf?: readonly string[];
  booleans?: readonly string[];
  enums?: Record<string, readonly string[]>;
  /** Comma-separated parameters: allowed values, or the largest number of values. */
  csvEnums?: Record<string, readonly string[]>;
  csvMax?: Record<string, number>;
  /** An item endpoint: the element for a query (undefined means "not found"). */
  item?: (q: Query) => unknown;
  /** A list endpoint. */
  list?: {
    kind: string;
    pageSize: number;
    total: number;
    tokenForNextPages?: boolean;
    maxPage?: number;
    element?: (q: Query, n: number) => unknown;
  };
}

const POSTED_LIMITS = ['24h', 'week', 'month'];
const SORT = ['relevance', 'date'];
const SIZES = ['1-10', '11-50', '51-200', '201-500', '501-1000', '1001-5000', '5001-10000', '10001+'];

/** Values that the fake answers with 404 on item endpoints. */
const MISSING = /^missing|\/missing/;

export interface HarvestRequest {
  method: string;
  path: string;
  query: Query;
  apiKey?: string;
  authorization?: string;
}

export class FakeHarvestApi {
  readonly requests: HarvestRequest[] = [];
  /** paginationToken → the endpoint and page it was issued for. */
  readonly issuedTokens = new Map<string, { path: string; page: number }>();
  private listening!: Listening;

  constructor(readonly apiKey: string) {}

  get url(): string {
    return this.listening.url;
  }

  readonly endpoints: Record<string, Endpoint> = {
    '/linkedin/ad': {
      params: ['adId', 'url'],
      oneOf: ['adId', 'url'],
      item: (q) => ({
        id: q.adId ?? /(\d+)\/?$/.exec(q.url ?? '')?.[1] ?? 'ad',
        advertiser: { name: 'Microsoft' },
        format: 'SINGLE_IMAGE',
      }),
    },
    '/linkedin/comment-reactions': {
      params: ['url', 'page'],
      required: ['url'],
      list: {
        kind: 'comment-reaction',
        pageSize: 100,
        total: 120,
        element: (q, n) => ({ id: `reaction-${n}`, reactionType: 'LIKE', commentUrl: q.url }),
      },
    },
    '/linkedin/company-posts': {
      params: [
        'company',
        'companyId',
        'companyUniversalName',
        'page',
        'postedLimit',
        'scrapePostedLimit',
        'paginationToken',
      ],
      oneOf: ['company', 'companyId', 'companyUniversalName'],
      enums: { postedLimit: POSTED_LIMITS },
      list: { kind: 'company-post', pageSize: 50, total: 60 },
    },
    '/linkedin/group': {
      params: ['groupId', 'url'],
      oneOf: ['groupId', 'url'],
      item: (q) => ({
        id: q.groupId ?? '9806731',
        name: 'Machine Learning Community',
        memberCount: 120345,
        url: q.url ?? `https://www.linkedin.com/groups/${q.groupId}/`,
      }),
    },
    '/linkedin/post': {
      params: ['url'],
      required: ['url'],
      item: (q) => ({
        id: 'post-1',
        linkedinUrl: q.url,
        content: 'Hello',
        engagement: { likes: 10, comments: 2, shares: 1 },
      }),
    },
    '/linkedin/post-comments': {
      params: ['post', 'page', 'sortBy', 'paginationToken', 'postedLimit'],
      required: ['post'],
      enums: { sortBy: SORT, postedLimit: POSTED_LIMITS },
      list: {
        kind: 'post-comment',
        pageSize: 100,
        total: 130,
        element: (q, n) => ({ id: `comment-${n}`, commentary: `Comment ${n}`, postUrl: q.post }),
      },
    },
    '/linkedin/post-reactions': {
      params: ['post', 'page', 'sortBy'],
      required: ['post'],
      enums: { sortBy: SORT },
      list: {
        kind: 'post-reaction',
        pageSize: 100,
        total: 105,
        element: (q, n) => ({ id: `reaction-${n}`, reactionType: 'PRAISE', postUrl: q.post }),
      },
    },
    '/linkedin/profile-comments': {
      params: ['profile', 'profileId', 'profilePublicIdentifier', 'page', 'paginationToken', 'postedLimit'],
      oneOf: ['profile', 'profileId', 'profilePublicIdentifier'],
      enums: { postedLimit: POSTED_LIMITS },
      list: { kind: 'profile-comment', pageSize: 100, total: 250, tokenForNextPages: true },
    },
    '/linkedin/profile-posts': {
      params: [
        'profile',
        'profileId',
        'profilePublicIdentifier',
        'page',
        'paginationToken',
        'postedLimit',
        'scrapePostedLimit',
      ],
      oneOf: ['profile', 'profileId', 'profilePublicIdentifier'],
      enums: { postedLimit: POSTED_LIMITS },
      list: { kind: 'profile-post', pageSize: 50, total: 140 },
    },
    '/linkedin/profile-reactions': {
      params: ['profile', 'profileId', 'profilePublicIdentifier', 'page', 'paginationToken'],
      oneOf: ['profile', 'profileId', 'profilePublicIdentifier'],
      list: { kind: 'profile-reaction', pageSize: 100, total: 250, tokenForNextPages: true },
    },
    '/linkedin/company': {
      params: ['url', 'universalName', 'companyId', 'search', 'location'],
      oneOf: ['url', 'universalName', 'companyId', 'search'],
      item: (q) => {
        const universalName =
          q.universalName ?? /company\/([^/?]+)/.exec(q.url ?? '')?.[1] ?? (q.search ?? 'company').toLowerCase();
        return {
          id: '1035',
          universalName,
          name: 'Microsoft',
          employeeCount: 228000,
          followerCount: 25000000,
          specialities: ['Cloud'],
          industries: [{ id: '4', name: 'Software Development' }],
        };
      },
    },
    '/linkedin/job': {
      params: ['url', 'jobId'],
      oneOf: ['url', 'jobId'],
      item: (q) => ({
        id: q.jobId ?? /view\/(\d+)/.exec(q.url ?? '')?.[1],
        title: 'Software Engineer',
        company: { name: 'Microsoft' },
        workplaceType: 'hybrid',
      }),
    },
    '/linkedin/profile': {
      params: ['url', 'publicIdentifier', 'profileId', 'main', 'findEmail', 'includeAboutProfile', 'skipSmtp'],
      oneOf: ['url', 'publicIdentifier', 'profileId'],
      booleans: ['main', 'findEmail', 'includeAboutProfile', 'skipSmtp'],
      item: (q) => {
        const publicIdentifier = q.publicIdentifier ?? /\/in\/([^/?]+)/.exec(q.url ?? '')?.[1] ?? 'someone';
        return {
          id: q.profileId ?? 'ACoAAA8BYqEBCGLg',
          publicIdentifier,
          firstName: 'Bill',
          lastName: 'Gates',
          linkedinUrl: `https://www.linkedin.com/in/${publicIdentifier}`,
          ...(q.main === 'true'
            ? {}
            : {
                experience: [{ companyName: 'Gates Foundation', position: 'Co-chair' }],
                skills: [{ name: 'Philanthropy' }],
              }),
          ...(q.includeAboutProfile === 'true' ? { about: 'About text' } : {}),
          emails:
            q.findEmail === 'true'
              ? [{ email: `${publicIdentifier}@example.com`, verified: q.skipSmtp !== 'true' }]
              : [],
        };
      },
    },
    '/linkedin/ad-search': {
      params: [
        'keyword',
        'accountOwner',
        'countries',
        'dateOption',
        'startdate',
        'enddate',
        'searchUrl',
        'paginationToken',
      ],
      enums: { dateOption: ['last-30-days', 'current-month', 'current-year', 'last-year', 'custom-date-range'] },
      list: { kind: 'ad', pageSize: 25, total: 30 },
    },
    '/linkedin/company-search': {
      params: ['search', 'location', 'geoId', 'companySize', 'industryId', 'page'],
      csvEnums: { companySize: SIZES },
      list: { kind: 'company', pageSize: 10, total: 42 },
    },
    '/linkedin/geo-id-search': {
      params: ['search'],
      required: ['search'],
      list: {
        kind: 'geo',
        pageSize: 10,
        total: 2,
        element: (q, n) => ({ id: `10${n}`, title: `${q.search}, place ${n}` }),
      },
    },
    '/linkedin/group-search': {
      params: ['search', 'page'],
      required: ['search'],
      list: { kind: 'group', pageSize: 10, total: 25 },
    },
    '/linkedin/job-search': {
      params: [
        'search',
        'location',
        'geoId',
        'companyId',
        'company',
        'companyUniversalName',
        'industryId',
        'functionId',
        'easyApply',
        'under10Applicants',
        'employmentType',
        'experienceLevel',
        'workplaceType',
        'postedLimit',
        'salary',
        'sortBy',
        'page',
      ],
      booleans: ['easyApply', 'under10Applicants'],
      enums: {
        postedLimit: ['1h', ...POSTED_LIMITS],
        sortBy: SORT,
        salary: ['40k+', '60k+', '80k+', '100k+', '120k+', '140k+', '160k+', '180k+', '200k+'],
      },
      csvEnums: {
        employmentType: ['full-time', 'part-time', 'contract', 'temporary', 'internship'],
        experienceLevel: ['internship', 'entry', 'associate', 'mid-senior', 'director', 'executive'],
        workplaceType: ['office', 'hybrid', 'remote'],
      },
      list: { kind: 'job', pageSize: 25, total: 60 },
    },
    '/linkedin/lead-search': {
      params: [
        'search',
        'salesNavUrl',
        'companyHeadcount',
        'currentCompanies',
        'currentJobTitles',
        'firstNames',
        'lastNames',
        'geoIds',
        'industryIds',
        'locations',
        'pastCompanies',
        'pastJobTitles',
        'recentlyChangedJobs',
        'seniorityLevelIds',
        'yearsOfExperienceIds',
        'functionIds',
        'schools',
        'page',
      ],
      booleans: ['recentlyChangedJobs'],
      csvEnums: {
        companyHeadcount: ['self-employed', ...SIZES],
        seniorityLevelIds: ['100', '110', '120', '130', '200', '210', '220', '300', '310', '320'],
        yearsOfExperienceIds: ['1', '2', '3', '4', '5'],
      },
      csvMax: {
        currentCompanies: 50,
        pastCompanies: 50,
        currentJobTitles: 70,
        pastJobTitles: 70,
        firstNames: 70,
        lastNames: 70,
        industryIds: 70,
        locations: 70,
      },
      list: { kind: 'lead', pageSize: 25, total: 2600, maxPage: 100 },
    },
    '/linkedin/post-search': {
      params: [
        'search',
        'page',
        'sortBy',
        'postedLimit',
        'targetUrl',
        'profile',
        'profileId',
        'profilePublicIdentifier',
        'company',
        'companyId',
        'companyUniversalName',
        'authorsCompany',
        'authorsCompanyId',
        'authorsCompanyUniversalName',
        'group',
        'paginationToken',
      ],
      enums: { postedLimit: POSTED_LIMITS, sortBy: SORT },
      list: { kind: 'post', pageSize: 50, total: 75 },
    },
    '/linkedin/service-search': {
      params: ['search', 'location', 'geoId', 'page'],
      required: ['search'],
      list: { kind: 'service', pageSize: 10, total: 15 },
    },
  };

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use((req, res) => this.handle(req, res));
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  /** The requests received for one endpoint path. */
  received(path: string): HarvestRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  private fail(res: Response, status: number, error: string) {
    res.status(status).json({ error });
  }

  private handle(req: Request, res: Response) {
    const path = req.path;
    const rawQuery: Record<string, unknown> = { ...(req.query as Record<string, unknown>) };
    const apiKey = req.headers['x-api-key'] as string | undefined;
    this.requests.push({
      method: req.method,
      path,
      query: rawQuery as Query,
      apiKey,
      authorization: req.headers.authorization,
    });
    if (apiKey !== this.apiKey) return this.fail(res, 401, 'Invalid or missing API key');
    const endpoint = this.endpoints[path];
    if (!endpoint) return this.fail(res, 404, `Not found: ${path}`);
    if (req.method !== 'GET') return this.fail(res, 405, `Method ${req.method} not allowed`);

    const q: Query = {};
    for (const [name, value] of Object.entries(rawQuery)) {
      if (!endpoint.params.includes(name)) {
        return this.fail(res, 400, `Unknown query parameter "${name}". Allowed: ${endpoint.params.join(', ')}`);
      }
      if (typeof value !== 'string')
        return this.fail(res, 400, `Query parameter "${name}" must be given once, as a string`);
      if (value === '') return this.fail(res, 400, `Query parameter "${name}" is empty`);
      q[name] = value;
    }
    for (const name of endpoint.required ?? [])
      if (q[name] === undefined) return this.fail(res, 400, `"${name}" is required`);
    if (endpoint.oneOf && !endpoint.oneOf.some((n) => q[n] !== undefined)) {
      return this.fail(res, 400, `One of ${endpoint.oneOf.join(', ')} is required`);
    }
    for (const name of endpoint.booleans ?? []) {
      if (q[name] !== undefined && q[name] !== 'true' && q[name] !== 'false')
        return this.fail(res, 400, `"${name}" must be true or false`);
    }
    for (const [name, allowed] of Object.entries(endpoint.enums ?? {})) {
      if (q[name] !== undefined && !allowed.includes(q[name]))
        return this.fail(res, 400, `"${name}" must be one of ${allowed.join(', ')}`);
    }
    for (const [name, allowed] of Object.entries(endpoint.csvEnums ?? {})) {
      const bad = q[name]?.split(',').find((v) => !allowed.includes(v));
      if (bad !== undefined) return this.fail(res, 400, `"${name}" has an invalid value "${bad}"`);
    }
    for (const [name, max] of Object.entries(endpoint.csvMax ?? {})) {
      if (q[name] !== undefined && q[name].split(',').length > max)
        return this.fail(res, 400, `"${name}" accepts at most ${max} values`);
    }

    const base = {
      status: 200,
      error: null,
      query: q,
      originalQuery: rawQuery,
      requestId: randomUUID(),
      cost: 1,
      payments: ['credits'],
    };
    if (endpoint.item) {
      if (Object.values(q).some((v) => MISSING.test(v))) {
        res.status(404).json({ ...base, status: 404, error: 'Not found', element: null, entityId: null });
        return;
      }
      const element = endpoint.item(q) as { id?: string };
      res.json({ ...base, entityId: element.id ?? null, element });
      return;
    }

    const list = endpoint.list!;
    let page = 1;
    if (q.page !== undefined) {
      page = Number(q.page);
      if (!/^[1-9][0-9]*$/.test(q.page)) return this.fail(res, 400, '"page" must be a positive integer');
    }
    if (list.maxPage !== undefined && page > list.maxPage)
      return this.fail(res, 400, `"page" must be at most ${list.maxPage}`);
    if (list.tokenForNextPages && page > 1) {
      const issued = q.paginationToken === undefined ? undefined : this.issuedTokens.get(q.paginationToken);
      if (!issued)
        return this.fail(res, 400, 'paginationToken is required for page > 1 (use the one from the previous page)');
      if (issued.path !== path || issued.page !== page)
        return this.fail(res, 400, 'paginationToken does not belong to this page');
    }
    const totalPages = Math.ceil(list.total / list.pageSize);
    const start = (page - 1) * list.pageSize;
    const count = Math.max(0, Math.min(list.pageSize, list.total - start));
    const elements = Array.from({ length: count }, (_, i) => {
      const n = start + i + 1;
      return list.element ? list.element(q, n) : { id: `${list.kind}-${n}`, kind: list.kind };
    });
    let paginationToken: string | null = null;
    if (list.tokenForNextPages && page < totalPages) {
      paginationToken = `tok_${randomUUID()}`;
      this.issuedTokens.set(paginationToken, { path, page: page + 1 });
    }
    res.json({
      ...base,
      entityId: null,
      elements,
      pagination: {
        totalPages,
        totalElements: list.total,
        pageNumber: page,
        previousElements: start,
        pageSize: list.pageSize,
        paginationToken,
      },
    });
  }
}
