/**
 * The support-desk connector end to end: client library → service → fake desk, for every tool, the
 * proxy, and the errors a client meets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDesk } from '../fakes/desk.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, toolRunner } from '../helpers/tools.ts';
import { tools } from '../../generated/registry.ts';
import { rawGet } from '../helpers/raw-http.ts';

let h: Harness;
let desk: FakeDesk;
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const TOKEN = 'zd-api-token-7f3a9c1e5b';
const creds = { domain: DOMAIN, email: EMAIL, api_token: TOKEN };
const who = { connectionName: 'helpdesk', identifier: 'user-1' };

// The upstream mapping is checked against the provider's own answer (response_format detailed); the concise
// answers are checked against the tool's declared output (test/helpers/answer-check.ts).
const answers = new AnswerLog('helpdesk', () => h);
const run = toolRunner({ harness: () => h, who, responseFormat: 'detailed', answers });

beforeAll(async () => {
  h = await startHarness();
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, TOKEN);
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await h.client.upsertConnectedAccount({ ...who, credentials: creds });
});
afterAll(async () => {
  answers.write();
  await desk?.close();
  await h?.close();
});

describe('helpdesk tools against the fake desk', () => {
  it('lists, gets, creates and updates tickets', async () => {
    const list = await run('helpdesk_tickets_list', { per_page: 2, sort_order: 'asc' });
    expect(list.tickets).toHaveLength(2);
    expect(list.count).toBe(3);
    expect(list.next_page).toMatch(/page=2/);

    const created = await run('helpdesk_ticket_create', {
      comment_body: 'Printer on fire',
      subject: 'Help',
      priority: 'urgent',
      status: 'new',
      type: 'incident',
      tags: ['hw'],
      assignee_email: EMAIL,
    });
    const id = created.ticket.id as number;
    expect(created.ticket).toMatchObject({
      subject: 'Help',
      priority: 'urgent',
      type: 'incident',
      assignee_id: 1,
      tags: ['hw'],
    });

    const got = await run('helpdesk_ticket_get', { ticket_id: id, include: 'users' });
    expect(got.ticket.id).toBe(id);
    expect(got.users.length).toBeGreaterThan(0);

    const updated = await run('helpdesk_ticket_update', {
      ticket_id: id,
      status: 'pending',
      tags: ['a', 'b'],
      group_id: 7002,
    });
    expect(updated.ticket).toMatchObject({ status: 'pending', tags: ['a', 'b'], group_id: 7002 });

    await run('helpdesk_ticket_reply', { ticket_id: id, body: 'Looking into it' });
    await run('helpdesk_ticket_reply', { ticket_id: id, body: 'Internal: check the toner', public: false });
    const comments = await run('helpdesk_ticket_comments_list', { ticket_id: id, sort_order: 'asc' });
    expect(comments.comments.map((c: { body: string; public: boolean }) => [c.body, c.public])).toEqual([
      ['Printer on fire', true],
      ['Looking into it', true],
      ['Internal: check the toner', false],
    ]);
    // What the desk received for the internal note: the comment envelope of a ticket update.
    const note = desk.requests.filter((r) => r.method === 'PUT').at(-1)!;
    expect(note.body).toEqual({ ticket: { comment: { body: 'Internal: check the toner', public: false } } });
  });

  it('searches within the result cap', async () => {
    const found = await run('helpdesk_search_tickets', { query: 'type:ticket status:open', per_page: 25, page: 1 });
    expect(found.results.every((r: { status: string }) => r.status === 'open')).toBe(true);
    expect(desk.requests.at(-1)!.query).toMatchObject({
      query: 'type:ticket status:open',
      per_page: '25',
      sort_order: 'desc',
    });
  });

  it('reads users, organizations, groups, views and side conversations', async () => {
    const users = await run('helpdesk_users_list', { role: 'end-user' });
    expect(users.users.every((u: { role: string }) => u.role === 'end-user')).toBe(true);
    const user = await run('helpdesk_user_create', { name: 'Ann Lee', email: 'ann@x.com', phone: '+15551234567' });
    expect(user.user).toMatchObject({ name: 'Ann Lee', role: 'end-user', verified: false });
    expect((await run('helpdesk_user_get', { user_id: user.user.id })).user.email).toBe('ann@x.com');
    expect((await run('helpdesk_organizations_list', {})).organizations[0].id).toBe(42);
    expect((await run('helpdesk_organization_get', { organization_id: 42 })).organization.name).toBe('Acme');
    expect((await run('helpdesk_groups_list', { per_page: 1 })).groups).toHaveLength(1);
    const views = await run('helpdesk_views_list', { sort_by: 'title', sort_order: 'asc' });
    expect(views.views.map((v: { title: string }) => v.title)).toEqual(['My tickets', 'Unassigned']);
    expect(desk.requests.at(-1)!.query.sort_by).toBe('alphabetical');
    const scs = await run('helpdesk_side_conversations_list', { ticket_id: 1000 });
    const sc = await run('helpdesk_side_conversation_get', {
      ticket_id: 1000,
      side_conversation_id: scs.side_conversations[0].id,
      include: 'side_conversation_events',
    });
    expect(sc.side_conversation.id).toBe(scs.side_conversations[0].id);
  });

  it('covers every helpdesk tool of the registry', () => {
    const shape = (p: string) => p.replace(/\/[0-9a-f]{8}-[0-9a-f-]{27}/g, '/:uuid').replace(/\/\d+/g, '/:id');
    const exercised = new Set(desk.requests.map((r) => `${r.method} ${shape(r.path)}`));
    const helpdeskTools = [...tools.values()].filter((t) => t.connector === 'helpdesk');
    expect(helpdeskTools).toHaveLength(16);
    for (const t of helpdeskTools) {
      const req = t.examples[0]!.requests[0]!;
      const path = shape(new URL(req.url).pathname.replace(/^\/api\/v2/, ''));
      expect(exercised, `${t.name} was executed`).toContain(`${req.method} ${path}`);
    }
  });
});

describe('bad input is a 400 naming the field, before any upstream call', () => {
  it('names every bad field', async () => {
    const before = desk.requests.length;
    const e = await failure(run('helpdesk_ticket_create', { subject: 5, priority: 'asap', tags: 'x', extra: 1 }));
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_input');
    const fields = e.details.map((d) => d.field).sort();
    expect(fields).toEqual(['comment_body', 'extra', 'priority', 'subject', 'tags']);
    expect(e.details.find((d) => d.field === 'priority')!.message).toBe('must be one of: urgent, high, normal, low');
    expect(desk.requests.length).toBe(before);
  });

  it('refuses a search page beyond floor(1000 / per_page)', async () => {
    const e = await failure(run('helpdesk_search_tickets', { query: 'x', per_page: 25, page: 41 }));
    expect(e.status).toBe(400);
    expect(e.details[0]).toMatchObject({ field: 'page' });
    expect(e.details[0]!.message).toContain('at most 40');
    await run('helpdesk_search_tickets', { query: 'x', per_page: 25, page: 40 });
    const e2 = await failure(run('helpdesk_search_tickets', { query: 'x', page: 11 }));
    expect(e2.details[0]!.message).toContain('at most 10');
  });

  it('enforces per_page ≤ 100, whole numbers, and the end-user email rule', async () => {
    expect((await failure(run('helpdesk_groups_list', { per_page: 101 }))).details[0]).toEqual({
      field: 'per_page',
      message: 'must be at most 100',
    });
    expect((await failure(run('helpdesk_ticket_get', { ticket_id: 1.5 }))).details[0]).toEqual({
      field: 'ticket_id',
      message: 'must be a whole number',
    });
    expect((await failure(run('helpdesk_user_create', { name: 'No Mail' }))).details[0]).toMatchObject({
      field: 'email',
    });
    await run('helpdesk_user_create', { name: 'Agent Two', role: 'agent' });
  });

  it('suggests the tool or parameter that was meant', async () => {
    const e = await failure(run('helpdesk_ticket_gett', {}));
    expect(e.status).toBe(404);
    expect(e.message).toContain('helpdesk_ticket_get');
    const e2 = await failure(run('helpdesk_tickets_list', { per_pge: 5 }));
    expect(e2.details[0]!.message).toContain('did you mean per_page?');
  });
});

describe('provider errors stay provider errors', () => {
  it('keeps the provider status and body', async () => {
    const e = await failure(run('helpdesk_ticket_get', { ticket_id: 999999 }));
    expect(e.status).toBe(404);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toEqual({ error: 'RecordNotFound', description: 'Not found' });
    expect(e.executionId).toMatch(/^exe_/);
  });

  it('retries a GET after 429 with Retry-After, but never repeats a POST without it', async () => {
    desk.rateLimit = { count: 1, retryAfter: 0 };
    const before = desk.requests.length;
    await run('helpdesk_groups_list', {});
    expect(desk.requests.length - before).toBe(2);

    desk.rateLimit = { count: 1 };
    const before2 = desk.requests.length;
    const e = await failure(run('helpdesk_ticket_create', { comment_body: 'once' }));
    expect(e.status).toBe(429);
    expect(e.isProviderError).toBe(true);
    expect(desk.requests.length - before2).toBe(1);
  });

  it('reports wrong credentials as the provider 401, not as a service auth failure', async () => {
    await h.client.upsertConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'wrong',
      credentials: { ...creds, api_token: 'nope' },
    });
    const e = await failure(
      h.client.executeTool({
        toolName: 'helpdesk_groups_list',
        toolInput: {},
        connectionName: 'helpdesk',
        identifier: 'wrong',
      }),
    );
    expect(e.status).toBe(401);
    expect(e.isProviderError).toBe(true);
  });
});

describe('dry run', () => {
  it('shows the upstream request of every helpdesk tool with the secret redacted', async () => {
    for (const t of [...tools.values()].filter((x) => x.connector === 'helpdesk')) {
      const { data } = await h.client.executeTool({
        toolName: t.name as never,
        toolInput: t.examples[0]!.input as never,
        ...who,
        dryRun: true,
      });
      const { requests } = data as {
        requests: Array<{ method: string; url: string; headers: Record<string, string> }>;
      };
      expect(requests[0]!.method).toBe(t.examples[0]!.requests[0]!.method);
      expect(requests[0]!.url.startsWith(`${desk.url}/desks/${DOMAIN}/api/v2/`)).toBe(true);
      expect(requests[0]!.headers.authorization).toBe('Basic [REDACTED]');
      expect(JSON.stringify(data)).not.toContain(TOKEN);
    }
  });
});

describe('connected accounts and credentials', () => {
  it('validates the desk fields and keeps what was stored', async () => {
    const bad = await failure(
      h.client.upsertConnectedAccount({
        ...who,
        credentials: { domain: '127.0.0.1', email: 'not-an-email', api_token: '' },
      }),
    );
    expect(bad.status).toBe(400);
    expect(bad.details.map((d) => d.field).sort()).toEqual([
      'credentials.api_token',
      'credentials.domain',
      'credentials.email',
    ]);
    const evil = await failure(
      h.client.upsertConnectedAccount({ ...who, credentials: { ...creds, domain: 'zendesk.com.evil.org' } }),
    );
    expect(evil.details[0]!.message).toContain('*.zendesk.com');
    // The earlier, valid credentials are untouched: tools still work.
    expect((await run('helpdesk_groups_list', {})).groups.length).toBeGreaterThan(0);
  });

  it('gets or creates accounts by identifier and lists them', async () => {
    const a = await h.client.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'ünïcode user ✓' });
    const b = await h.client.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'ünïcode user ✓' });
    expect(a.id).toBe(b.id);
    expect(a.status).toBe('PENDING_AUTH');
    const e = await failure(
      h.client.executeTool({ toolName: 'helpdesk_groups_list', toolInput: {}, connectedAccountId: a.id }),
    );
    // The user enters the credentials on the hosted connect page the link leads to (docs/connect.md).
    expect(e.status).toBe(403);
    expect(e.code).toBe('authorization_required');
    const list = await h.client.listConnectedAccounts({ connectionName: 'helpdesk', status: 'PENDING_AUTH' });
    expect(list.connected_accounts.map((x) => x.identifier)).toContain('ünïcode user ✓');
    const full = await h.client.getConnectedAccount((await h.client.getOrCreateConnectedAccount(who)).id);
    expect(full.fields).toEqual({ domain: DOMAIN, email: EMAIL });
    expect(JSON.stringify(full)).not.toContain(TOKEN);
  });
});

describe('proxy', () => {
  it('GET /v2/tickets goes to https://<domain>/api/v2/tickets with the credentials injected', async () => {
    const res = await h.client.request({ ...who, path: '/v2/tickets', queryParams: { per_page: 2 } });
    expect(res.status).toBe(200);
    expect((res.data as { tickets: unknown[] }).tickets).toHaveLength(2);
    const seen = desk.requests.at(-1)!;
    expect(seen).toMatchObject({ method: 'GET', domain: DOMAIN, path: '/tickets' });
    expect(seen.authorization).toBe(`Basic ${Buffer.from(`${EMAIL}/token:${TOKEN}`).toString('base64')}`);
  });

  it('POST passes the body through and returns status and body', async () => {
    const res = await h.client.request({
      ...who,
      path: '/v2/tickets',
      method: 'POST',
      formData: JSON.stringify({ ticket: { comment: { body: 'via proxy' }, subject: 'Proxy' } }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(201);
    expect((res.data as { ticket: { subject: string } }).ticket.subject).toBe('Proxy');
    // The provider sees the account's credentials, never the client's service token.
    expect(desk.requests.at(-1)!.authorization).toMatch(/^Basic /);
    expect(desk.requests.every((r) => !r.authorization?.startsWith('Bearer'))).toBe(true);
  });

  it('passes provider errors through with their status', async () => {
    const res = await h.client.request({ ...who, path: '/v2/tickets/424242' });
    expect(res.status).toBe(404);
    expect(res.data).toEqual({ error: 'RecordNotFound', description: 'Not found' });
  });

  it('refuses traversal, absolute URLs and host changes with 400, sending nothing', async () => {
    const before = desk.requests.length;
    const token = (
      (await await fetch(`${h.url}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({
          client_id: 'acs_test_client',
          client_secret: 'acs_sk_test_secret_0123456789abcdef',
        }),
      }).then((r) => r.json())) as { access_token: string }
    ).access_token;
    for (const path of [
      '/v2/../../etc/passwd',
      '/v2/%2e%2e/%2e%2e/x',
      '//evil.example/x',
      '/https://evil.example/x',
      '/v2%2f..%2fx',
      '/@evil.example/x',
      '/v2/\\evil',
    ]) {
      // A raw request: fetch() would normalise the dot segments away before they reach the service.
      const res = await rawGet(`${h.url}/proxy${path}`, {
        authorization: `Bearer ${token}`,
        connection_name: 'helpdesk',
        identifier: 'user-1',
      });
      expect(res.status, path).toBe(400);
      expect(res.headers['x-error-source']).toBe('service');
    }
    expect(desk.requests.length).toBe(before);
  });
});
