/**
 * The fake Gong refuses what real Gong refuses, so a wrong mapping in the connector cannot pass the
 * end-to-end tests by accident: credentials and scopes, case-sensitive paths and parameter names, unknown
 * body fields, ids sent as numbers, date formats, Gong's own required fields, paging and its errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALL_1, CALL_3, FakeGong, FLOW_REP_1, U_REP, WS_SALES } from './gong.ts';

const KEY = 'fake-key';
const SECRET = 'fake-secret';
let gong: FakeGong;
const basic = `Basic ${Buffer.from(`${KEY}:${SECRET}`).toString('base64')}`;

async function call(method: string, path: string, body?: unknown, authorization = basic) {
  const res = await fetch(`${gong.url}${path}`, {
    method,
    headers: { authorization, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

beforeAll(async () => {
  gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET }).start();
  gong.bearerScopes = (token) => (token === 'good-token' ? ['api:users:read'] : undefined);
});
afterAll(async () => {
  await gong?.close();
});

describe('fake Gong', () => {
  it('accepts the access key over Basic and a bearer token with the endpoint scope, in Gong error bodies otherwise', async () => {
    expect((await call('GET', '/v2/users')).status).toBe(200);
    expect((await call('GET', '/v2/users', undefined, 'Bearer good-token')).status).toBe(200);
    const scope = await call('GET', '/v2/workspaces', undefined, 'Bearer good-token');
    expect(scope.status).toBe(403);
    expect(scope.body).toEqual({
      requestId: expect.any(String),
      errors: ['This endpoint requires the scope api:workspaces:read'],
    });
    expect((await call('GET', '/v2/users', undefined, 'Bearer expired')).status).toBe(401);
    expect(
      (await call('GET', '/v2/users', undefined, `Basic ${Buffer.from(`${KEY}:wrong`).toString('base64')}`)).status,
    ).toBe(401);
    expect((await call('GET', '/v2/users', undefined, '')).status).toBe(401);
  });

  it('routes and parameter names are case-sensitive', async () => {
    expect((await call('GET', '/v2/Users')).status).toBe(404);
    const wrong = await call('GET', '/v2/flows/folders?flowOwnerEmail=rep@acme.com');
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual(["Required request parameter 'flowFolderOwnerEmail' is not present"]);
    expect((await call('GET', '/v2/flows?flowFolderOwnerEmail=rep@acme.com')).status).toBe(400);
    const coaching = await call(
      'GET',
      `/v2/coaching?workspaceId=${WS_SALES}&managerId=1&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z`,
    );
    expect(coaching.body.errors).toEqual([
      "Required request parameter 'workspace-id' is not present",
      "Required request parameter 'manager-id' is not present",
    ]);
  });

  it('refuses unknown body fields, a plural where Gong takes one id, and ids sent as numbers', async () => {
    const misspelt = await call('POST', '/v2/flows/prospects/assign', {
      flowId: FLOW_REP_1,
      crmProspectIds: ['a'],
      flowInstanceOwnerEmail: 'rep@acme.com',
    });
    expect(misspelt.status).toBe(400);
    expect(misspelt.body.errors[0]).toMatch(/^Unrecognized field "crmProspectIds"/);
    const plural = await call('POST', '/v2/flows/prospects/unassign-flows-by-crm-id', {
      crmProspectId: ['a', 'b'],
      flowId: FLOW_REP_1,
    });
    expect(plural.body.errors).toEqual(['crmProspectId must be one CRM id (a string)']);
    // eslint-disable-next-line no-loss-of-precision -- the test sends an id too large for a double on purpose
    const numeric = await call('POST', '/v2/calls/transcript', { filter: { callIds: [7782342274025937895] } });
    expect(numeric.body.errors).toEqual(['filter.callIds must be a list of call ids as strings']);
  });

  it('requires what Gong requires to register a call, and refuses the output-only speakerId', async () => {
    const bare = await call('POST', '/v2/calls', { actualStart: '2026-06-15T14:00:00Z' });
    expect(bare.body.errors).toEqual([
      'clientUniqueId is required',
      'direction is required',
      'parties is required',
      'primaryUser is required',
    ]);
    const speaker = await call('POST', '/v2/calls', {
      clientUniqueId: 'x-1',
      actualStart: '2026-06-15T14:00:00Z',
      direction: 'Inbound',
      primaryUser: U_REP,
      parties: [{ userId: U_REP, speakerId: '1' }],
    });
    expect(speaker.body.errors[0]).toMatch(/^Unrecognized field "speakerId" in parties\[0\]/);
  });

  it('answers 404 "No calls found" instead of an empty list, and takes stats periods as exclusive dates', async () => {
    const none = await call('POST', '/v2/calls/transcript', { filter: { callIds: ['1'] } });
    expect(none).toMatchObject({ status: 404, body: { errors: ['No calls found for the specified period'] } });
    const times = await call('POST', '/v2/stats/interaction', {
      filter: { fromDate: '2026-01-01T00:00:00Z', toDate: '2026-02-01' },
    });
    expect(times.body.errors[0]).toMatch(/^filter.fromDate must be a date in the form YYYY-MM-DD/);
    const backwards = await call('POST', '/v2/stats/interaction', {
      filter: { fromDate: '2026-02-01', toDate: '2026-02-01' },
    });
    expect(backwards.body.errors).toEqual(['filter.fromDate must be before filter.toDate (toDate is exclusive)']);
  });

  it('pages with records.cursor (query on GET, body on POST) and refuses a cursor of another list', async () => {
    const first = await call('GET', '/v2/calls');
    expect(first.body.records).toMatchObject({
      totalRecords: 3,
      currentPageSize: 2,
      currentPageNumber: 0,
      cursor: expect.any(String),
    });
    const last = await call('GET', `/v2/calls?cursor=${first.body.records.cursor}`);
    expect(last.body.calls.map((c: { id: string }) => c.id)).toEqual([CALL_3]);
    expect(last.body.records.cursor).toBeUndefined();
    const foreign = await call('POST', '/v2/calls/extensive', {
      filter: { callIds: [CALL_1] },
      cursor: first.body.records.cursor,
    });
    expect(foreign.body.errors).toEqual(['cursor is invalid or belongs to another request']);
  });

  it('answers 429 with Retry-After when told to', async () => {
    gong.rateLimit = { count: 1, retryAfter: 2 };
    const limited = await call('GET', '/v2/workspaces');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect((await call('GET', '/v2/workspaces')).status).toBe(200);
  });
});
