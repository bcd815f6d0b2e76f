/**
 * The CRM connector end to end: the real service, an OAuth connection authorized against the fake OAuth
 * server, and the fake HubSpot portal (test/fakes/crm.ts). Every tool is executed through the client
 * library and checked against what the portal received and holds; every tool is dry-run; the connector's
 * 400 rules are checked to name their field before anything is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.ts';
import { authorize, oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, toolRunner } from '../helpers/tools.ts';
import { tools } from '../../generated/registry.ts';
import { AuthorizationRequiredError } from '../../packages/client/src/index.ts';

let h: Harness;
let crm: FakeCrm;
const who = { connectionName: 'crm', identifier: 'user-1' };
const crmTools = () => [...tools.values()].filter((t) => t.connector === 'crm');
const executed = new Set<string>();
const DEFAULT_SCOPES = [
  'oauth',
  'crm.objects.contacts.read',
  'crm.objects.contacts.write',
  'crm.objects.companies.read',
  'crm.objects.companies.write',
  'crm.objects.deals.read',
  'crm.objects.deals.write',
];

// The upstream mapping is checked against the provider's own answer (response_format detailed); the concise
// answers are checked against the tool's declared output (test/helpers/answer-check.ts).
const answers = new AnswerLog('crm', () => h);
const run = toolRunner({ harness: () => h, who, executed, responseFormat: 'detailed', answers });

const last = () => crm.requests.at(-1)!;

beforeAll(async () => {
  // HubSpot: access tokens live 30 minutes, refresh tokens are reusable (not rotated), no PKCE.
  h = await startHarness({ oauth: { expiresIn: 1800, rotateRefreshTokens: false, requirePkce: false } });
  crm = await new FakeCrm(h.oauth).start();
  await oauthConnection(h, 'crm', 'crm', crm.url);
  await authorize(h, 'crm', 'user-1');
});
afterAll(async () => {
  answers.write();
  await crm?.close();
  await h?.close();
});

describe('authorization', () => {
  it('asks for the CRM scopes without PKCE and exchanges the code with client_secret_post', async () => {
    const { link } = await h.client.getAuthorizationLink({ connectionName: 'crm', identifier: 'probe' });
    const start = await fetch(link, { redirect: 'manual' });
    const authorizeUrl = new URL(start.headers.get('location')!);
    expect(authorizeUrl.searchParams.get('scope')!.split(' ')).toEqual(DEFAULT_SCOPES);
    expect(authorizeUrl.searchParams.get('response_type')).toBe('code');
    expect(authorizeUrl.searchParams.has('code_challenge')).toBe(false);
    const exchange = h.oauth.tokenRequests.find((r) => r.grant_type === 'authorization_code')!;
    expect(exchange.client_secret).toMatch(/^secret-crm-/);
    expect(exchange.code_verifier).toBeUndefined();
  });
});

describe('contacts', () => {
  it('creates a contact with crm_lead_status sent as hs_lead_status', async () => {
    const created = await run('crm_contact_create', {
      email: 'jane@acme.com',
      firstname: 'Jane',
      lastname: 'Smith',
      company: 'Acme',
      jobtitle: 'VP Eng',
      lifecyclestage: 'lead',
      crm_lead_status: 'NEW',
      phone: '+1 555 0100',
      website: 'acme.com',
    });
    expect(last()).toMatchObject({ method: 'POST', path: '/crm/v3/objects/contacts', contentType: 'application/json' });
    expect(last().body).toEqual({
      properties: {
        email: 'jane@acme.com',
        firstname: 'Jane',
        lastname: 'Smith',
        company: 'Acme',
        jobtitle: 'VP Eng',
        lifecyclestage: 'lead',
        hs_lead_status: 'NEW',
        phone: '+1 555 0100',
        website: 'acme.com',
      },
    });
    const stored = crm.records.contacts.get(created.id)!;
    expect(stored.properties).toMatchObject({ email: 'jane@acme.com', hs_lead_status: 'NEW', jobtitle: 'VP Eng' });
    expect(created.properties.hs_lead_status).toBe('NEW');
    // The bearer token is one the OAuth server issued to this account, with the CRM scopes.
    const grant = h.oauth.validate(last().authorization);
    expect(grant?.scope.split(' ')).toEqual(DEFAULT_SCOPES);
  });

  it('refuses a second contact with the same email as the provider 409', async () => {
    const before = crm.records.contacts.size;
    const e = await failure(run('crm_contact_create', { email: 'JANE@acme.com', firstname: 'Again' }));
    expect(e.status).toBe(409);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toMatchObject({ status: 'error', category: 'CONFLICT' });
    expect((e.providerBody as { message: string }).message).toMatch(/^Contact already exists\. Existing ID: \d+$/);
    expect(crm.records.contacts.size).toBe(before);
  });

  it('gets a contact with the properties as a comma-separated query value', async () => {
    const jane = crm.find('contacts', 'email', 'jane@acme.com')!;
    const got = await run('crm_contact_get', { contact_id: jane.id, properties: 'email, firstname,hs_lead_status' });
    expect(last().query).toEqual({ properties: 'email,firstname,hs_lead_status' });
    expect(got.properties).toEqual({ email: 'jane@acme.com', firstname: 'Jane', hs_lead_status: 'NEW' });
    const e = await failure(run('crm_contact_get', { contact_id: '999999' }));
    expect(e.status).toBe(404);
    expect(e.providerBody).toMatchObject({ category: 'OBJECT_NOT_FOUND' });
  });

  it('updates only the given properties', async () => {
    const jane = crm.find('contacts', 'email', 'jane@acme.com')!;
    const updated = await run('crm_contact_update', {
      contact_id: jane.id,
      props: { firstname: 'Janet', phone: '+1 555 0199' },
    });
    expect(last()).toMatchObject({ method: 'PATCH', path: `/crm/v3/objects/contacts/${jane.id}` });
    expect(last().body).toEqual({ properties: { firstname: 'Janet', phone: '+1 555 0199' } });
    expect(crm.records.contacts.get(jane.id)!.properties).toMatchObject({
      firstname: 'Janet',
      phone: '+1 555 0199',
      lastname: 'Smith',
      hs_lead_status: 'NEW',
    });
    expect(updated.properties.firstname).toBe('Janet');
  });

  it('passes props through unchanged, so the neutral crm_ name fails at the provider, not silently', async () => {
    const jane = crm.find('contacts', 'email', 'jane@acme.com')!;
    const e = await failure(run('crm_contact_update', { contact_id: jane.id, props: { crm_lead_status: 'OPEN' } }));
    expect(e.status).toBe(400);
    expect(e.providerBody).toMatchObject({ category: 'VALIDATION_ERROR', errors: [{ code: 'PROPERTY_DOESNT_EXIST' }] });
    await run('crm_contact_update', { contact_id: jane.id, props: { hs_lead_status: 'OPEN' } });
    expect(crm.records.contacts.get(jane.id)!.properties.hs_lead_status).toBe('OPEN');
  });

  it('lists contacts page by page with paging.next.after, and archived ones on request', async () => {
    const active = [...crm.records.contacts.values()].filter((r) => !r.archived).length;
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = await run('crm_contacts_list', { limit: 2, properties: 'email', ...(after ? { after } : {}) });
      expect(last().query).toMatchObject({ limit: '2', properties: 'email', ...(after ? { after } : {}) });
      seen.push(...page.results.map((r: { id: string; properties: { email: string } }) => r.properties.email));
      after = page.paging?.next?.after;
      pages++;
    } while (after && pages < 10);
    expect(seen).toHaveLength(active);
    expect(seen).toContain('jane@acme.com');
    expect(new Set(seen).size).toBe(seen.length);

    const archived = await run('crm_contacts_list', { archived: true });
    expect(last().query).toEqual({ archived: 'true' });
    expect(
      archived.results.map((r: { properties: { email: string }; archived: boolean }) => [
        r.properties.email,
        r.archived,
      ]),
    ).toEqual([['old@initech.com', true]]);
  });

  it('searches contacts with filterGroups parsed from JSON and properties split into an array', async () => {
    const found = await run('crm_contacts_search', {
      filterGroups: JSON.stringify([
        { filters: [{ propertyName: 'email', operator: 'CONTAINS_TOKEN', value: '*@acme.com' }] },
      ]),
      properties: 'email,firstname',
      limit: 2,
    });
    expect(last()).toMatchObject({ method: 'POST', path: '/crm/v3/objects/contacts/search' });
    expect(last().body).toEqual({
      filterGroups: [{ filters: [{ propertyName: 'email', operator: 'CONTAINS_TOKEN', value: '*@acme.com' }] }],
      properties: ['email', 'firstname'],
      limit: 2,
    });
    expect(found.total).toBe(3);
    expect(found.results.map((r: { properties: { email: string } }) => r.properties.email)).toEqual([
      'alice@acme.com',
      'carol@acme.com',
    ]);
    const next = await run('crm_contacts_search', {
      filterGroups: JSON.stringify([
        { filters: [{ propertyName: 'email', operator: 'CONTAINS_TOKEN', value: '*@acme.com' }] },
      ]),
      properties: 'email',
      limit: 2,
      after: found.paging.next.after,
    });
    expect(last().body).toMatchObject({ after: '2' });
    expect(next.results.map((r: { properties: { email: string } }) => r.properties.email)).toEqual(['jane@acme.com']);
    expect(next.paging).toBeUndefined();

    // The object form {"filterGroups": [...]} and free text together; EQ on the renamed lead status.
    const byStatus = await run('crm_contacts_search', {
      query: 'acme',
      filterGroups: JSON.stringify({
        filterGroups: [{ filters: [{ propertyName: 'hs_lead_status', operator: 'EQ', value: 'CONNECTED' }] }],
      }),
    });
    expect(last().body).toEqual({
      query: 'acme',
      filterGroups: [{ filters: [{ propertyName: 'hs_lead_status', operator: 'EQ', value: 'CONNECTED' }] }],
    });
    expect(byStatus.results.map((r: { properties: { email: string } }) => r.properties.email)).toEqual([
      'carol@acme.com',
    ]);
  });
});

describe('companies', () => {
  it('creates a company with numbers sent as strings, and gets it', async () => {
    const created = await run('crm_company_create', {
      name: 'Umbrella',
      domain: 'umbrella.com',
      industry: 'HOSPITAL_HEALTH_CARE',
      city: 'Raccoon City',
      state: 'MO',
      country: 'US',
      phone: '+1 555 0101',
      numberofemployees: 500,
      annualrevenue: 75000000.5,
      description: 'Pharmaceuticals',
    });
    expect(last().body).toEqual({
      properties: {
        name: 'Umbrella',
        domain: 'umbrella.com',
        industry: 'HOSPITAL_HEALTH_CARE',
        city: 'Raccoon City',
        state: 'MO',
        country: 'US',
        phone: '+1 555 0101',
        numberofemployees: '500',
        annualrevenue: '75000000.5',
        description: 'Pharmaceuticals',
      },
    });
    expect(crm.records.companies.get(created.id)!.properties).toMatchObject({
      name: 'Umbrella',
      numberofemployees: '500',
      annualrevenue: '75000000.5',
    });

    const got = await run('crm_company_get', { company_id: created.id, properties: 'name,numberofemployees' });
    expect(last()).toMatchObject({
      method: 'GET',
      path: `/crm/v3/objects/companies/${created.id}`,
      query: { properties: 'name,numberofemployees' },
    });
    expect(got.properties).toEqual({ name: 'Umbrella', numberofemployees: '500' });

    const minimal = await run('crm_company_create', { name: 'Tiny' });
    expect(last().body).toEqual({ properties: { name: 'Tiny' } });
    expect(crm.records.companies.get(minimal.id)!.properties.name).toBe('Tiny');
  });

  it('searches companies with GT / LT filters and paging', async () => {
    const big = await run('crm_companies_search', {
      filterGroups: JSON.stringify([
        { filters: [{ propertyName: 'numberofemployees', operator: 'GT', value: '200' }] },
      ]),
      properties: 'name, numberofemployees',
    });
    expect(last().body).toEqual({
      filterGroups: [{ filters: [{ propertyName: 'numberofemployees', operator: 'GT', value: '200' }] }],
      properties: ['name', 'numberofemployees'],
    });
    expect(big.results.map((r: { properties: { name: string } }) => r.properties.name)).toEqual([
      'Acme',
      'Initech',
      'Umbrella',
    ]);
    const small = await run('crm_companies_search', {
      filterGroups: JSON.stringify({ filters: [{ propertyName: 'numberofemployees', operator: 'LT', value: '100' }] }),
      query: 'globex',
      limit: 1,
    });
    expect(small.results.map((r: { properties: { name: string } }) => r.properties.name)).toEqual(['Globex']);
    const page2 = await run('crm_companies_search', { limit: 2, after: '2' });
    expect(last().body).toEqual({ limit: 2, after: '2' });
    expect(page2.results).toHaveLength(2);
  });
});

describe('deals', () => {
  it('creates a deal: amount as a string, crm_priority lower-cased into hs_priority, close date as a date', async () => {
    const created = await run('crm_deal_create', {
      dealname: 'Acme renewal',
      amount: 50000,
      dealstage: 'appointmentscheduled',
      pipeline: 'default',
      closedate: '2026-12-31',
      dealtype: 'newbusiness',
      description: 'Three-year renewal',
      crm_priority: 'HIGH',
    });
    expect(last().body).toEqual({
      properties: {
        dealname: 'Acme renewal',
        amount: '50000',
        dealstage: 'appointmentscheduled',
        pipeline: 'default',
        closedate: '2026-12-31',
        dealtype: 'newbusiness',
        description: 'Three-year renewal',
        hs_priority: 'high',
      },
    });
    expect(crm.records.deals.get(created.id)!.properties).toMatchObject({
      hs_priority: 'high',
      amount: '50000',
      closedate: '2026-12-31T00:00:00Z',
    });

    const plain = await run('crm_deal_create', { dealname: 'Small one', amount: 99.5, dealstage: 'qualifiedtobuy' });
    expect(last().body).toEqual({ properties: { dealname: 'Small one', amount: '99.5', dealstage: 'qualifiedtobuy' } });
    expect(crm.records.deals.get(plain.id)!.properties.pipeline).toBe('default');
  });

  it('updates a deal with good_deal merged into properties as a string', async () => {
    const deal = crm.find('deals', 'dealname', 'Acme renewal')!;
    const updated = await run('crm_deal_update', {
      deal_id: deal.id,
      properties: { dealstage: 'closedwon', amount: '90000' },
      good_deal: true,
    });
    expect(last()).toMatchObject({ method: 'PATCH', path: `/crm/v3/objects/deals/${deal.id}` });
    expect(last().body).toEqual({ properties: { dealstage: 'closedwon', amount: '90000', good_deal: 'true' } });
    expect(crm.records.deals.get(deal.id)!.properties).toMatchObject({
      dealstage: 'closedwon',
      amount: '90000',
      good_deal: 'true',
      hs_priority: 'high',
    });
    expect(updated.properties.good_deal).toBe('true');

    await run('crm_deal_update', { deal_id: deal.id, properties: {}, good_deal: false });
    expect(last().body).toEqual({ properties: { good_deal: 'false' } });
    await run('crm_deal_update', { deal_id: deal.id, properties: { dealname: 'Acme renewal (won)' } });
    expect(last().body).toEqual({ properties: { dealname: 'Acme renewal (won)' } });
    expect(crm.records.deals.get(deal.id)!.properties).toMatchObject({
      good_deal: 'false',
      dealname: 'Acme renewal (won)',
    });
  });

  it('returns the provider 400 when the portal has no good_deal property, instead of dropping it', async () => {
    const deal = crm.find('deals', 'dealname', 'Globex pilot')!;
    const saved = crm.properties.deals.good_deal!;
    delete crm.properties.deals.good_deal;
    try {
      const e = await failure(
        run('crm_deal_update', { deal_id: deal.id, properties: { amount: '3500' }, good_deal: true }),
      );
      expect(e.status).toBe(400);
      expect(e.providerBody).toMatchObject({
        category: 'VALIDATION_ERROR',
        errors: [{ code: 'PROPERTY_DOESNT_EXIST', context: { propertyName: ['good_deal'] } }],
      });
      expect(crm.records.deals.get(deal.id)!.properties.amount).toBe('3000');
    } finally {
      crm.properties.deals.good_deal = saved;
    }
  });

  it('searches deals', async () => {
    const found = await run('crm_deals_search', {
      query: 'acme',
      filterGroups: JSON.stringify([
        { filters: [{ propertyName: 'dealstage', operator: 'EQ', value: 'closedwon' }] },
        {
          filters: [
            { propertyName: 'amount', operator: 'GT', value: '10000' },
            { propertyName: 'amount', operator: 'LT', value: '20000' },
          ],
        },
      ]),
      properties: 'dealname,amount,dealstage',
      limit: 10,
    });
    expect(last()).toMatchObject({ method: 'POST', path: '/crm/v3/objects/deals/search' });
    expect(last().body).toMatchObject({ query: 'acme', properties: ['dealname', 'amount', 'dealstage'], limit: 10 });
    expect(found.results.map((r: { properties: { dealname: string } }) => r.properties.dealname)).toEqual([
      'Acme expansion',
      'Acme renewal (won)',
    ]);
  });
});

describe('every tool', () => {
  it('was executed against the portal', () => {
    const names = crmTools().map((t) => t.name);
    expect(names).toHaveLength(11);
    for (const n of names) expect(executed, `${n} was executed`).toContain(n);
    const shape = (p: string) => p.replace(/\/\d+(?=\/|$)/g, '/:id');
    const received = new Set(crm.requests.map((r) => `${r.method} ${shape(r.path)}`));
    for (const t of crmTools()) {
      const req = t.examples[0]!.requests[0]!;
      expect(received, t.name).toContain(`${req.method} ${shape(new URL(req.url).pathname)}`);
    }
  });

  it('dry-runs to exactly the requests of its examples, with the token redacted', async () => {
    const tokens = h.oauth.issuedAccessTokens();
    const before = crm.requests.length;
    for (const t of crmTools()) {
      for (const example of t.examples) {
        const { data } = await h.client.executeTool({
          toolName: t.name as never,
          toolInput: example.input as never,
          ...who,
          dryRun: true,
        });
        const { requests } = data as {
          requests: Array<{ method: string; url: string; headers: Record<string, string>; body?: unknown }>;
        };
        expect(
          requests.map((r) => `${r.method} ${r.url}`),
          t.name,
        ).toEqual(example.requests.map((r) => `${r.method} ${r.url.replace('https://api.hubapi.com', crm.url)}`));
        requests.forEach((r, i) => {
          expect(r.body, t.name).toEqual(example.requests[i]!.body);
          expect(r.headers.authorization).toBe('Bearer [REDACTED]');
        });
        for (const tok of tokens) expect(JSON.stringify(data)).not.toContain(tok);
      }
    }
    expect(crm.requests.length).toBe(before);
  });
});

describe('bad input is a 400 naming the field, before any upstream call', () => {
  it('names each bad field', async () => {
    const before = crm.requests.length;
    const fields = async (tool: string, input: Record<string, unknown>) => {
      const e = await failure(run(tool, input));
      expect(e.status, tool).toBe(400);
      expect(e.code).toBe('invalid_input');
      expect(e.isProviderError).toBe(false);
      return Object.fromEntries(e.details.map((d) => [d.field, d.message]));
    };

    for (const tool of ['crm_contacts_search', 'crm_companies_search', 'crm_deals_search']) {
      const f = await fields(tool, { filterGroups: '[{"filters":[', limit: 101 });
      expect(f.filterGroups).toMatch(/^must be valid JSON/);
      expect(f.limit).toBe('must be at most 100');
      expect(await fields(tool, { filterGroups: '"EQ"' })).toEqual({
        filterGroups: 'must be a JSON array or object, got string',
      });
      expect(await fields(tool, { limit: 2.5 })).toEqual({ limit: 'must be a whole number' });
      expect(await fields(tool, { limit: 0 })).toEqual({ limit: 'must be at least 1' });
    }
    expect(await fields('crm_contacts_list', { limit: 101, archived: 'yes' })).toEqual({
      limit: 'must be at most 100',
      archived: 'must be a boolean',
    });

    expect(Object.keys(await fields('crm_contact_update', { contact_id: '101' }))).toEqual(['props']);
    expect(await fields('crm_contact_update', { contact_id: '101', props: {} })).toEqual({
      props: 'must not be empty',
    });
    expect(await fields('crm_contact_update', { contact_id: '101', props: '{"firstname":"x"}' })).toEqual({
      props: 'must be an object',
    });

    expect(await fields('crm_deal_update', { deal_id: '5001', properties: {} })).toEqual({
      properties: 'must name at least one property to change (or give good_deal); an empty update would change nothing',
    });
    expect(await fields('crm_deal_update', { deal_id: '5001' })).toEqual({ properties: 'is required' });

    expect(
      await fields('crm_deal_create', { amount: '5', dealname: '', crm_priority: 'URGENT', closedate: '31/12/2026' }),
    ).toEqual({
      amount: 'must be a number',
      dealname: 'must not be empty',
      dealstage: 'is required',
      crm_priority: 'must be one of: HIGH, MEDIUM, LOW',
      closedate: 'must be a date in the form YYYY-MM-DD',
    });
    expect(await fields('crm_contact_create', { email: 'not-an-email', crm_lead_status: 5 })).toEqual({
      email: 'must be an email address',
      crm_lead_status: 'must be a string',
    });
    expect(await fields('crm_company_create', { numberofemployees: 10 })).toEqual({ name: 'is required' });
    expect(await fields('crm_company_get', { company_id: '' })).toEqual({ company_id: 'must not be empty' });
    expect(Object.keys(await fields('crm_contact_get', { contact_id: '101', hs_lead_status: 'NEW' }))).toEqual([
      'hs_lead_status',
    ]);
    expect(crm.requests.length).toBe(before);
  });
});

describe('provider behaviour', () => {
  it('refreshes an expired access token once and repeats the call', async () => {
    const refreshes = h.oauth.counts.refresh_token;
    h.oauth.expireAccessTokens();
    const before = crm.requests.length;
    const list = await run('crm_contacts_list', { limit: 1 });
    expect(list.results).toHaveLength(1);
    expect(h.oauth.counts.refresh_token).toBe(refreshes + 1);
    const refresh = h.oauth.tokenRequests.at(-1)!;
    expect(refresh).toMatchObject({ grant_type: 'refresh_token' });
    expect(refresh.client_secret).toMatch(/^secret-crm-/);
    const sent = crm.requests.slice(before);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.authorization).not.toBe(sent[1]!.authorization);
    // The reusable refresh token keeps working for the next expiry.
    h.oauth.expireAccessTokens();
    await run('crm_contacts_list', { limit: 1 });
    expect(h.oauth.counts.refresh_token).toBe(refreshes + 2);
  });

  it('retries 429s it may repeat, and never repeats a create HubSpot did not ask to retry', async () => {
    crm.rateLimit = { count: 1, retryAfter: 0 };
    let before = crm.requests.length;
    await run('crm_contact_get', { contact_id: '101' });
    expect(crm.requests.length - before).toBe(2);

    crm.rateLimit = { count: 1, retryAfter: 0 };
    before = crm.requests.length;
    await run('crm_deals_search', { limit: 1 });
    expect(crm.requests.length - before).toBe(2);

    crm.rateLimit = { count: 1 };
    before = crm.requests.length;
    const contacts = crm.records.contacts.size;
    const e = await failure(run('crm_contact_create', { email: 'ratelimited@acme.com' }));
    expect(e.status).toBe(429);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toMatchObject({ category: 'RATE_LIMITS' });
    expect(crm.requests.length - before).toBe(1);
    expect(crm.records.contacts.size).toBe(contacts);
  });

  it('asks for a scope the account lacks (incremental consent) instead of sending what the provider refuses', async () => {
    await oauthConnection(h, 'crm-readonly', 'crm', crm.url, {
      extra: { scopes: ['oauth', 'crm.objects.contacts.read'] },
    });
    const ro = { connectionName: 'crm-readonly', identifier: 'reader' };
    await authorize(h, 'crm-readonly', 'reader');
    expect((await run('crm_contacts_list', { limit: 1 }, ro)).results).toHaveLength(1);
    const e = await failure(run('crm_contact_update', { contact_id: '101', props: { firstname: 'x' } }, ro));
    expect(e.status).toBe(403);
    expect(e).toBeInstanceOf(AuthorizationRequiredError);
    expect((e as AuthorizationRequiredError).missingScopes).toEqual(['crm.objects.contacts.write']);
  });
});

describe('proxy', () => {
  it('sends /crm/v3/... to the API root with the bearer token injected', async () => {
    const res = await h.client.request({
      ...who,
      path: '/crm/v3/objects/companies/9001',
      queryParams: { properties: 'name' },
    });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ id: '9001', properties: { name: 'Acme' } });
    expect(last()).toMatchObject({
      method: 'GET',
      path: '/crm/v3/objects/companies/9001',
      query: { properties: 'name' },
    });
    expect(h.oauth.validate(last().authorization)).toBeDefined();
  });

  it('forwards bodies unchanged and the provider error with its status', async () => {
    const res = await h.client.request({
      ...who,
      path: '/crm/v3/objects/contacts',
      method: 'POST',
      formData: JSON.stringify({ properties: { email: 'proxy@acme.com', crm_lead_status: 'NEW' } }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.data).toMatchObject({ category: 'VALIDATION_ERROR', errors: [{ code: 'PROPERTY_DOESNT_EXIST' }] });
    expect(crm.find('contacts', 'email', 'proxy@acme.com')).toBeUndefined();
  });
});
