/**
 * A fake support desk speaking the Zendesk Support API v2 wire format: Basic auth with
 * `{email}/token:{api_token}`, singular-resource envelopes (`{"ticket":{...}}`), offset paging with
 * `next_page` / `previous_page` / `count`, the 1000-result search cap answered with 422, and Zendesk's
 * error bodies. Several desks (tenants) live side by side, addressed by domain:
 * `<url>/desks/<domain>/api/v2/...` stands for `https://<domain>/api/v2/...`.
 */
import { randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';
import { asText } from '../helpers/text.ts';

export interface Ticket {
  id: number;
  subject: string | null;
  description: string;
  status: string;
  priority: string | null;
  type: string | null;
  tags: string[];
  assignee_id: number | null;
  group_id: number | null;
  requester_id: number;
  created_at: string;
  updated_at: string;
}
export interface DeskUser {
  id: number;
  name: string;
  email: string | null;
  role: string;
  organization_id: number | null;
  phone: string | null;
  verified: boolean;
  created_at: string;
}
export interface Comment {
  id: number;
  body: string;
  public: boolean;
  author_id: number;
  created_at: string;
}

export interface Tenant {
  domain: string;
  email: string;
  apiToken: string;
  tickets: Map<number, Ticket>;
  comments: Map<number, Comment[]>;
  users: Map<number, DeskUser>;
  organizations: Array<{ id: number; name: string; domain_names: string[]; tags: string[]; notes: string }>;
  groups: Array<{ id: number; name: string }>;
  views: Array<{ id: number; title: string; access: string; position: number; created_at: string; updated_at: string }>;
  sideConversations: Map<number, Array<{ id: string; subject: string; state: string; events: unknown[] }>>;
  nextId: number;
}

const STATUSES = ['new', 'open', 'pending', 'hold', 'solved', 'closed'];
const PRIORITIES = ['urgent', 'high', 'normal', 'low'];
const TYPES = ['problem', 'incident', 'question', 'task'];
const ROLES = ['end-user', 'agent', 'admin'];

export interface ReceivedRequest {
  method: string;
  domain: string;
  path: string;
  query: Record<string, unknown>;
  body: unknown;
  authorization?: string;
}

export class FakeDesk {
  readonly tenants = new Map<string, Tenant>();
  readonly requests: ReceivedRequest[] = [];
  /** Answer the next N requests with 429 and this Retry-After (seconds; undefined for none). */
  rateLimit: { count: number; retryAfter?: number } = { count: 0 };
  private listening!: Listening;

  get url(): string {
    return this.listening.url;
  }

  /** The base URL template a connection overrides with: the account's domain picks the tenant. */
  get baseUrlTemplate(): string {
    return `${this.url}/desks/{domain}/api`;
  }

  addTenant(domain: string, email: string, apiToken: string): Tenant {
    const now = '2026-01-01T00:00:00Z';
    const t: Tenant = {
      domain,
      email,
      apiToken,
      tickets: new Map(),
      comments: new Map(),
      users: new Map(),
      organizations: [{ id: 42, name: 'Acme', domain_names: ['acme.com'], tags: ['vip'], notes: '' }],
      groups: [
        { id: 7001, name: 'Support' },
        { id: 7002, name: 'Billing' },
      ],
      views: [
        { id: 1, title: 'Unassigned', access: 'shared', position: 2, created_at: now, updated_at: now },
        { id: 2, title: 'My tickets', access: 'personal', position: 1, created_at: now, updated_at: now },
      ],
      sideConversations: new Map(),
      nextId: 1000,
    };
    t.users.set(1, {
      id: 1,
      name: 'Agent Smith',
      email,
      role: 'admin',
      organization_id: 42,
      phone: null,
      verified: true,
      created_at: now,
    });
    t.users.set(2, {
      id: 2,
      name: 'Jane Customer',
      email: 'jane@customer.com',
      role: 'end-user',
      organization_id: null,
      phone: null,
      verified: true,
      created_at: now,
    });
    for (let i = 1; i <= 3; i++) {
      const id = t.nextId++;
      t.tickets.set(id, {
        id,
        subject: `Seed ticket ${i}`,
        description: `Seed description ${i}`,
        status: i === 3 ? 'solved' : 'open',
        priority: 'normal',
        type: 'question',
        tags: ['seed'],
        assignee_id: 1,
        group_id: 7001,
        requester_id: 2,
        created_at: now,
        updated_at: now,
      });
      t.comments.set(id, [
        { id: t.nextId++, body: `Seed description ${i}`, public: true, author_id: 2, created_at: now },
      ]);
      t.sideConversations.set(id, [
        { id: randomUUID(), subject: 'Asked billing', state: 'open', events: [{ type: 'create' }] },
      ]);
    }
    this.tenants.set(domain, t);
    return t;
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use(express.json({ limit: '1mb' }));
    app.use('/desks/:domain/api/v2', (req, res, next) => this.gate(req, res, next));
    const r = express.Router({ mergeParams: true });
    this.routes(r);
    app.use('/desks/:domain/api/v2', r);
    app.use((_req, res) => res.status(404).json({ error: 'InvalidEndpoint', description: 'Not found' }));
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  private tenant(req: Request): Tenant {
    return (req as Request & { tenant: Tenant }).tenant;
  }

  private gate(req: Request, res: Response, next: () => void) {
    const domain = String(req.params.domain);
    this.requests.push({
      method: req.method,
      domain,
      path: req.path,
      query: req.query,
      body: req.body,
      authorization: req.headers.authorization,
    });
    if (this.rateLimit.count > 0) {
      this.rateLimit.count--;
      if (this.rateLimit.retryAfter !== undefined) res.setHeader('retry-after', String(this.rateLimit.retryAfter));
      res.status(429).type('text').send('Rate limit exceeded');
      return;
    }
    const tenant = this.tenants.get(domain);
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    const [user, pass] = basic ? Buffer.from(basic[1]!, 'base64').toString().split(/:(.*)/s) : [];
    if (!tenant || user !== `${tenant.email}/token` || pass !== tenant.apiToken) {
      res.status(401).json({ error: "Couldn't authenticate you" });
      return;
    }
    (req as Request & { tenant: Tenant }).tenant = tenant;
    next();
  }

  private page<T>(req: Request, res: Response, key: string, items: T[]) {
    const page = req.query.page === undefined ? 1 : Number(req.query.page);
    const perPage = req.query.per_page === undefined ? 100 : Number(req.query.per_page);
    if (!Number.isInteger(page) || page < 1 || !Number.isInteger(perPage) || perPage < 1 || perPage > 100) {
      res.status(400).json({
        error: {
          title: 'Invalid attribute',
          message: 'page and per_page must be positive integers, per_page at most 100',
        },
      });
      return;
    }
    const start = (page - 1) * perPage;
    const base = `https://${this.tenant(req).domain}/api/v2${req.path}`;
    res.json({
      [key]: items.slice(start, start + perPage),
      next_page: start + perPage < items.length ? `${base}?page=${page + 1}&per_page=${perPage}` : null,
      previous_page: page > 1 ? `${base}?page=${page - 1}&per_page=${perPage}` : null,
      count: items.length,
    });
  }

  private invalid(res: Response, field: string, description: string) {
    res.status(422).json({
      error: 'RecordInvalid',
      description: 'Record validation errors',
      details: { [field]: [{ description, error: 'InvalidValue' }] },
    });
  }

  private sortOrder(req: Request, res: Response): boolean {
    const o = req.query.sort_order;
    if (o !== undefined && o !== 'asc' && o !== 'desc') {
      res.status(400).json({ error: { title: 'Invalid attribute', message: 'sort_order must be asc or desc' } });
      return false;
    }
    return true;
  }

  private routes(r: express.Router) {
    r.get('/users/me', (req, res) => {
      const t = this.tenant(req);
      res.json({ user: [...t.users.values()].find((u) => u.email === t.email) });
    });
    r.get('/groups', (req, res) => this.page(req, res, 'groups', this.tenant(req).groups));
    r.get('/organizations', (req, res) => this.page(req, res, 'organizations', this.tenant(req).organizations));
    r.get('/organizations/:id', (req, res) => {
      const org = this.tenant(req).organizations.find((o) => o.id === Number(req.params.id));
      if (!org) return void res.status(404).json({ error: 'RecordNotFound', description: 'Not found' });
      res.json({ organization: org });
    });
    r.get('/views', (req, res) => {
      const sortBy = req.query.sort_by;
      if (sortBy !== undefined && !['alphabetical', 'created_at', 'updated_at', 'position'].includes(asText(sortBy))) {
        return void res
          .status(400)
          .json({ error: { title: 'Invalid attribute', message: `sort_by ${asText(sortBy)} is not supported` } });
      }
      if (!this.sortOrder(req, res)) return;
      let views = [...this.tenant(req).views];
      if (req.query.access) views = views.filter((v) => v.access === req.query.access);
      if (sortBy === 'alphabetical') views.sort((a, b) => a.title.localeCompare(b.title));
      if (req.query.sort_order === 'desc') views.reverse();
      this.page(req, res, 'views', views);
    });
    r.get('/tickets', (req, res) => {
      if (!this.sortOrder(req, res)) return;
      const list = [...this.tenant(req).tickets.values()].sort((a, b) => a.id - b.id);
      if (req.query.sort_order === 'desc') list.reverse();
      this.page(req, res, 'tickets', list);
    });
    r.get('/tickets/:id', (req, res) => {
      const t = this.tenant(req);
      const ticket = t.tickets.get(Number(req.params.id));
      if (!ticket) return void res.status(404).json({ error: 'RecordNotFound', description: 'Not found' });
      const include = asText(req.query.include ?? '');
      res.json({
        ticket,
        ...(include.includes('users') ? { users: [...t.users.values()] } : {}),
        ...(include.includes('groups') ? { groups: t.groups } : {}),
      });
    });
    r.post('/tickets', (req, res) => {
      const t = this.tenant(req);
      const body = (req.body as { ticket?: Record<string, unknown> }).ticket;
      const comment = body?.comment as { body?: unknown } | undefined;
      if (!body || typeof comment?.body !== 'string' || !comment.body)
        return this.invalid(res, 'description', 'Description: cannot be blank');
      const problem = this.ticketProblems(t, body);
      if (problem) return this.invalid(res, problem[0], problem[1]);
      const now = new Date().toISOString();
      const id = t.nextId++;
      const ticket: Ticket = {
        id,
        subject: (body.subject as string) ?? null,
        description: comment.body,
        status: (body.status as string) ?? 'new',
        priority: (body.priority as string) ?? null,
        type: (body.type as string) ?? null,
        tags: (body.tags as string[]) ?? [],
        assignee_id: this.assignee(t, body) ?? null,
        group_id: null,
        requester_id: 1,
        created_at: now,
        updated_at: now,
      };
      t.tickets.set(id, ticket);
      t.comments.set(id, [{ id: t.nextId++, body: comment.body, public: true, author_id: 1, created_at: now }]);
      res.status(201).json({ ticket });
    });
    r.put('/tickets/:id', (req, res) => {
      const t = this.tenant(req);
      const ticket = t.tickets.get(Number(req.params.id));
      if (!ticket) return void res.status(404).json({ error: 'RecordNotFound', description: 'Not found' });
      const body = (req.body as { ticket?: Record<string, unknown> }).ticket;
      if (!body || typeof body !== 'object') return this.invalid(res, 'ticket', 'ticket: is required');
      const problem = this.ticketProblems(t, body);
      if (problem) return this.invalid(res, problem[0], problem[1]);
      const comment = body.comment as { body?: unknown; public?: unknown } | undefined;
      if (comment !== undefined) {
        if (typeof comment.body !== 'string' || !comment.body)
          return this.invalid(res, 'comment', 'Comment: body cannot be blank');
        if (comment.public !== undefined && typeof comment.public !== 'boolean')
          return this.invalid(res, 'comment', 'public must be a boolean');
        t.comments.get(ticket.id)!.push({
          id: t.nextId++,
          body: comment.body,
          public: comment.public !== false,
          author_id: 1,
          created_at: new Date().toISOString(),
        });
      }
      for (const k of ['subject', 'status', 'priority', 'type', 'tags', 'group_id', 'assignee_id'] as const) {
        if (body[k] !== undefined) (ticket as unknown as Record<string, unknown>)[k] = body[k];
      }
      const viaEmail = this.assignee(t, body);
      if (viaEmail !== undefined) ticket.assignee_id = viaEmail;
      ticket.updated_at = new Date().toISOString();
      res.json({ ticket, audit: { events: [] } });
    });
    r.get('/tickets/:id/comments', (req, res) => {
      if (!this.sortOrder(req, res)) return;
      if (req.query.include !== undefined && req.query.include !== 'users') {
        return void res
          .status(400)
          .json({ error: { title: 'Invalid attribute', message: 'include only supports users' } });
      }
      const list = this.tenant(req).comments.get(Number(req.params.id));
      if (!list) return void res.status(404).json({ error: 'RecordNotFound', description: 'Not found' });
      const sorted = req.query.sort_order === 'desc' ? [...list].reverse() : list;
      this.page(req, res, 'comments', sorted);
    });
    r.get('/tickets/:id/side_conversations', (req, res) => {
      const list = this.tenant(req).sideConversations.get(Number(req.params.id));
      if (!list) return void res.status(404).json({ error: 'RecordNotFound', description: 'Not found' });
      res.json({ side_conversations: list, next_page: null, previous_page: null, count: list.length });
    });
    r.get('/tickets/:id/side_conversations/:sid', (req, res) => {
      const sc = this.tenant(req)
        .sideConversations.get(Number(req.params.id))
        ?.find((s) => s.id === req.params.sid);
      if (!sc) return void res.status(404).json({ error: 'RecordNotFound', description: 'Not found' });
      const { events, ...rest } = sc;
      res.json({ side_conversation: rest, ...(asText(req.query.include ?? '').includes('events') ? { events } : {}) });
    });
    r.get('/search', (req, res) => {
      const query = asText(req.query.query ?? '');
      if (!query)
        return void res.status(400).json({ error: { title: 'Invalid attribute', message: 'query is required' } });
      const page = Number(req.query.page ?? 1);
      const perPage = Number(req.query.per_page ?? 100);
      if (page * perPage > 1000 && (page - 1) * perPage >= 1000) {
        return void res
          .status(422)
          .json({ error: 'Insufficient Resource Error', description: 'Search results are limited to 1000 per query' });
      }
      if (
        req.query.sort_by !== undefined &&
        !['updated_at', 'created_at', 'priority', 'status', 'ticket_type'].includes(asText(req.query.sort_by))
      ) {
        return void res.status(400).json({ error: { title: 'Invalid attribute', message: 'invalid sort_by' } });
      }
      if (!this.sortOrder(req, res)) return;
      const terms = query.split(/\s+/).filter((s) => s && !s.startsWith('type:'));
      const results = [...this.tenant(req).tickets.values()]
        .filter((t) =>
          terms.every((term) =>
            term.startsWith('status:')
              ? t.status === term.slice(7)
              : `${t.subject} ${t.description}`.toLowerCase().includes(term.toLowerCase()),
          ),
        )
        .map((t) => ({ ...t, result_type: 'ticket' }));
      this.page(req, res, 'results', results);
    });
    r.get('/users', (req, res) => {
      let users = [...this.tenant(req).users.values()];
      if (req.query.role !== undefined) {
        if (!ROLES.includes(asText(req.query.role)))
          return void res.status(400).json({ error: { title: 'Invalid attribute', message: 'invalid role' } });
        users = users.filter((u) => u.role === req.query.role);
      }
      if (typeof req.query.sort === 'string' && req.query.sort.startsWith('-')) users.reverse();
      this.page(req, res, 'users', users);
    });
    r.get('/users/:id', (req, res) => {
      const user = this.tenant(req).users.get(Number(req.params.id));
      if (!user) return void res.status(404).json({ error: 'RecordNotFound', description: 'Not found' });
      res.json({ user });
    });
    r.post('/users', (req, res) => {
      const t = this.tenant(req);
      const u = (req.body as { user?: Record<string, unknown> }).user;
      if (!u || typeof u.name !== 'string' || !u.name) return this.invalid(res, 'name', 'Name: cannot be blank');
      if (u.role !== undefined && !ROLES.includes(asText(u.role))) return this.invalid(res, 'role', 'Role: is invalid');
      if (u.email !== undefined && [...t.users.values()].some((x) => x.email === u.email))
        return this.invalid(res, 'email', `Email: ${asText(u.email)} is already being used by another user`);
      if (u.phone !== undefined && !/^\+[1-9]\d{1,14}$/.test(asText(u.phone)))
        return this.invalid(res, 'phone', 'Phone: is invalid');
      const user: DeskUser = {
        id: t.nextId++,
        name: u.name,
        email: (u.email as string) ?? null,
        role: (u.role as string) ?? 'end-user',
        organization_id: (u.organization_id as number) ?? null,
        phone: (u.phone as string) ?? null,
        verified: u.verified === true,
        created_at: new Date().toISOString(),
      };
      t.users.set(user.id, user);
      res.status(201).json({ user });
    });
  }

  private ticketProblems(t: Tenant, body: Record<string, unknown>): [string, string] | undefined {
    if (body.status !== undefined && !STATUSES.includes(asText(body.status))) return ['status', 'Status: is invalid'];
    if (body.priority !== undefined && !PRIORITIES.includes(asText(body.priority)))
      return ['priority', 'Priority: is invalid'];
    if (body.type !== undefined && !TYPES.includes(asText(body.type))) return ['type', 'Type: is invalid'];
    if (body.tags !== undefined && (!Array.isArray(body.tags) || !body.tags.every((x) => typeof x === 'string')))
      return ['tags', 'Tags: must be a list of strings'];
    if (
      body.assignee_email !== undefined &&
      ![...t.users.values()].some((u) => u.email === body.assignee_email && u.role !== 'end-user')
    ) {
      return ['assignee', `Assignee: ${asText(body.assignee_email)} is not an agent`];
    }
    for (const k of ['assignee_id', 'group_id'])
      if (body[k] !== undefined && !Number.isInteger(body[k])) return [k, `${k}: must be an integer`];
    return undefined;
  }

  private assignee(t: Tenant, body: Record<string, unknown>): number | undefined {
    if (body.assignee_email === undefined) return undefined;
    return [...t.users.values()].find((u) => u.email === body.assignee_email)?.id;
  }
}
