/**
 * The fake CRM portal on its own: it must refuse what HubSpot refuses, or the end-to-end tests that rely on it
 * could not catch a wrong mapping.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containsToken, FakeCrm, toDateTime, type TokenAuthority } from '../fakes/crm.ts';

const FULL =
  'oauth crm.objects.contacts.read crm.objects.contacts.write crm.objects.companies.read crm.objects.companies.write crm.objects.deals.read crm.objects.deals.write';
const grants = new Map<string, string>([
  ['tok-full', FULL],
  ['tok-read', 'oauth crm.objects.contacts.read'],
]);
const expired = new Set(['tok-expired']);
const authority: TokenAuthority = {
  validate: (t) => (t && grants.has(t) ? { scope: grants.get(t)! } : undefined),
  issuedAccessTokens: () => [...grants.keys(), ...expired],
};

let crm: FakeCrm;
beforeAll(async () => {
  crm = await new FakeCrm(authority).start();
});
afterAll(async () => {
  await crm?.close();
});

async function call(
  method: string,
  path: string,
  body?: unknown,
  token = 'tok-full',
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${crm.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? (JSON.parse(text) as Record<string, any>) : undefined,
  };
}

describe('fake CRM: auth and scopes', () => {
  it('wants a valid bearer token and tells an expired one apart', async () => {
    expect((await call('GET', '/crm/v3/objects/contacts', undefined, 'nope')).body).toMatchObject({
      status: 'error',
      category: 'INVALID_AUTHENTICATION',
    });
    const exp = await call('GET', '/crm/v3/objects/contacts', undefined, 'tok-expired');
    expect(exp.status).toBe(401);
    expect(exp.body!.category).toBe('EXPIRED_AUTHENTICATION');
    expect(exp.body!.correlationId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('checks the granular scope of the object and access', async () => {
    expect((await call('GET', '/crm/v3/objects/contacts', undefined, 'tok-read')).status).toBe(200);
    const write = await call('POST', '/crm/v3/objects/contacts', { properties: { email: 'x@y.com' } }, 'tok-read');
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({
      category: 'MISSING_SCOPES',
      errors: [{ context: { requiredGranularScopes: ['crm.objects.contacts.write'] } }],
    });
    const deals = await call('POST', '/crm/v3/objects/deals/search', {}, 'tok-read');
    expect(deals.body!.errors[0].context.requiredGranularScopes).toEqual(['crm.objects.deals.read']);
  });

  it('answers 429 with the rate-limit headers, and Retry-After when asked', async () => {
    crm.rateLimit = { count: 1, retryAfter: 2 };
    const limited = await call('GET', '/crm/v3/objects/contacts');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(limited.headers.get('x-hubspot-ratelimit-remaining')).toBe('0');
    expect(limited.body).toMatchObject({ category: 'RATE_LIMITS', errorType: 'RATE_LIMIT' });
    expect((await call('GET', '/crm/v3/objects/contacts')).status).toBe(200);
  });
});

describe('fake CRM: writes', () => {
  it('refuses unknown properties, wrong options, non-numbers, and unrecognised top-level fields', async () => {
    const unknown = await call('POST', '/crm/v3/objects/contacts', {
      properties: { email: 'u@x.com', crm_lead_status: 'NEW' },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body!.category).toBe('VALIDATION_ERROR');
    expect(unknown.body!.message).toContain('PROPERTY_DOESNT_EXIST');
    expect(unknown.body!.errors).toEqual([
      {
        message: 'Property "crm_lead_status" does not exist',
        code: 'PROPERTY_DOESNT_EXIST',
        context: { propertyName: ['crm_lead_status'] },
      },
    ]);
    const upper = await call('POST', '/crm/v3/objects/deals', {
      properties: { dealname: 'd', dealstage: 'closedwon', hs_priority: 'HIGH' },
    });
    expect(upper.body!.errors[0]).toMatchObject({ code: 'INVALID_OPTION', context: { propertyName: ['hs_priority'] } });
    const nan = await call('POST', '/crm/v3/objects/companies', {
      properties: { name: 'n', numberofemployees: 'many' },
    });
    expect(nan.body!.errors[0].code).toBe('INVALID_FLOAT');
    const nested = await call('POST', '/crm/v3/objects/companies', { properties: { name: { first: 'x' } } });
    expect(nested.body!.errors[0].code).toBe('INVALID_PROPERTY_VALUE');
    const stray = await call('PATCH', '/crm/v3/objects/contacts/101', { props: { firstname: 'x' } });
    expect(stray.status).toBe(400);
    expect(stray.body!.message).toContain('Unrecognized field "props"');
    const text = await call('POST', '/crm/v3/objects/contacts', 'email=a', 'tok-full', {
      'content-type': 'text/plain',
    });
    expect(text.status).toBe(415);
  });

  it('creates with strings (coercing JSON numbers), normalises dates, and refuses a duplicate email with 409', async () => {
    const made = await call('POST', '/crm/v3/objects/deals', {
      properties: { dealname: 'D', dealstage: 'closedwon', amount: 10, closedate: '2026-12-31' },
    });
    expect(made.status).toBe(201);
    expect(made.body!.properties).toMatchObject({
      amount: '10',
      closedate: '2026-12-31T00:00:00Z',
      pipeline: 'default',
      hs_object_id: made.body!.id,
    });
    const first = await call('POST', '/crm/v3/objects/contacts', { properties: { email: 'Dup@x.com' } });
    expect(first.status).toBe(201);
    const dup = await call('POST', '/crm/v3/objects/contacts', { properties: { email: 'dup@X.com' } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({
      category: 'CONFLICT',
      message: `Contact already exists. Existing ID: ${first.body!.id}`,
    });
    const steal = await call('PATCH', '/crm/v3/objects/contacts/101', { properties: { email: 'dup@x.com' } });
    expect(steal.status).toBe(409);
    expect(
      (await call('PATCH', '/crm/v3/objects/contacts/999999', { properties: { firstname: 'x' } })).body,
    ).toMatchObject({ category: 'OBJECT_NOT_FOUND' });
  });
});

describe('fake CRM: reads, list paging and search', () => {
  it('returns requested properties on GET and 404 for unknown or archived ids', async () => {
    const got = await call('GET', '/crm/v3/objects/contacts/101?properties=email,hs_lead_status,nosuchprop');
    expect(got.body!.properties).toEqual({ email: 'alice@acme.com', hs_lead_status: 'NEW' });
    expect((await call('GET', '/crm/v3/objects/contacts/104')).status).toBe(404);
    expect((await call('GET', '/crm/v3/objects/0-1/101')).body!.properties.firstname).toBe('Alice');
  });

  it('pages a list with an opaque cursor and lists archived records on their own', async () => {
    const p1 = await call('GET', '/crm/v3/objects/contacts?limit=2');
    expect(p1.body!.results.map((r: { id: string }) => r.id)).toEqual(['101', '102']);
    const after = p1.body!.paging.next.after as string;
    const p2 = await call('GET', `/crm/v3/objects/contacts?limit=2&after=${encodeURIComponent(after)}`);
    expect(p2.body!.results[0].id).toBe('103');
    const archived = await call('GET', '/crm/v3/objects/contacts?archived=true');
    expect(archived.body!.results.map((r: { archived: boolean }) => r.archived)).toEqual([true]);
    expect((await call('GET', '/crm/v3/objects/contacts?limit=101')).status).toBe(400);
    expect((await call('GET', '/crm/v3/objects/contacts?after=bogus')).status).toBe(400);
  });

  it('evaluates filter groups: OR of groups, AND within, EQ, CONTAINS_TOKEN, GT/LT, BETWEEN, IN, HAS_PROPERTY', async () => {
    const ids = async (type: string, body: unknown) =>
      (await call('POST', `/crm/v3/objects/${type}/search`, body)).body!.results.map((r: { id: string }) => r.id);
    expect(
      await ids('contacts', {
        filterGroups: [{ filters: [{ propertyName: 'hs_lead_status', operator: 'EQ', value: 'new' }] }],
      }),
    ).toEqual(['101']);
    expect(
      await ids('contacts', {
        filterGroups: [{ filters: [{ propertyName: 'email', operator: 'CONTAINS_TOKEN', value: '*@acme.com' }] }],
      }),
    ).toEqual(['101', '103']);
    expect(
      await ids('contacts', {
        filterGroups: [
          {
            filters: [
              { propertyName: 'company', operator: 'CONTAINS_TOKEN', value: 'acme' },
              { propertyName: 'firstname', operator: 'EQ', value: 'Carol' },
            ],
          },
          { filters: [{ propertyName: 'lifecyclestage', operator: 'EQ', value: 'customer' }] },
        ],
      }),
    ).toEqual(['102', '103']);
    expect(
      await ids('companies', {
        filterGroups: [{ filters: [{ propertyName: 'numberofemployees', operator: 'GT', value: '100' }] }],
      }),
    ).toEqual(['9001', '9003']);
    expect(
      await ids('companies', {
        filterGroups: [{ filters: [{ propertyName: 'numberofemployees', operator: 'LT', value: 100 }] }],
      }),
    ).toEqual(['9002']);
    expect(
      await ids('deals', {
        filterGroups: [
          { filters: [{ propertyName: 'amount', operator: 'BETWEEN', value: '3000', highValue: '12000' }] },
        ],
      }),
    ).toEqual(['5001', '5002']);
    expect(
      await ids('deals', {
        filterGroups: [{ filters: [{ propertyName: 'hs_priority', operator: 'IN', values: ['high', 'medium'] }] }],
      }),
    ).toEqual(['5001', '5003']);
    expect(
      await ids('deals', {
        filterGroups: [{ filters: [{ propertyName: 'hs_priority', operator: 'NOT_HAS_PROPERTY' }] }],
      }),
    ).toContain('5002');
    expect(await ids('contacts', { query: 'globex' })).toEqual(['102']);
  });

  it('pages search results with the offset cursor in the body', async () => {
    const p1 = await call('POST', '/crm/v3/objects/companies/search', { limit: 2, properties: ['name'] });
    expect(p1.body).toMatchObject({ total: 3, paging: { next: { after: '2' } } });
    expect(Object.keys(p1.body!.results[0].properties).sort()).toEqual([
      'createdate',
      'hs_lastmodifieddate',
      'hs_object_id',
      'name',
    ]);
    const p2 = await call('POST', '/crm/v3/objects/companies/search', { limit: 2, after: '2' });
    expect(p2.body!.results.map((r: { id: string }) => r.id)).toEqual(['9003']);
    expect(p2.body!.paging).toBeUndefined();
  });

  it('refuses malformed searches the way HubSpot does', async () => {
    const bad = async (body: unknown) => (await call('POST', '/crm/v3/objects/deals/search', body)).body!;
    expect((await bad({ filterGroups: '[{"filters":[]}]' })).message).toContain('must be an array');
    expect((await bad({ properties: 'dealname,amount' })).message).toContain('array of strings');
    expect(
      (await bad({ filterGroups: [{ filters: [{ propertyName: 'dealname', operator: 'LIKE', value: 'x' }] }] }))
        .message,
    ).toContain('operator');
    expect(
      (await bad({ filterGroups: [{ filters: [{ propertyName: 'crm_priority', operator: 'EQ', value: 'x' }] }] }))
        .message,
    ).toContain('does not exist');
    expect((await bad({ filterGroups: Array.from({ length: 6 }, () => ({ filters: [] })) })).message).toContain(
      'Too many filter groups',
    );
    expect((await bad({ limit: 201 })).category).toBe('VALIDATION_ERROR');
    expect((await bad({ after: 20 })).message).toContain('after');
    expect((await bad({ props: {} })).message).toContain('Unrecognized field');
  });
});

describe('fake CRM helpers', () => {
  it('matches tokens and parses dates', () => {
    expect(containsToken('Acme Corp', 'acme')).toBe(true);
    expect(containsToken('Acmeish', 'acme')).toBe(false);
    expect(containsToken('jane@acme.com', '*@acme.com')).toBe(true);
    expect(toDateTime('2026-12-31')).toBe('2026-12-31T00:00:00Z');
    expect(toDateTime('1767139200000')).toBe('2025-12-31T00:00:00.000Z');
    expect(toDateTime('31/12/2026')).toBeUndefined();
  });
});
