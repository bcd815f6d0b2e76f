/**
 * Scalekit's official Node SDK (`@scalekit-sdk/node`), unchanged, pointed at this service as its envUrl: gRPC over
 * cleartext HTTP/2 on the service's one port (h2c), with its own lazy token fetch, get-or-create, tool execution,
 * proxy, listing, authorization links, user verification and errors (the scenarios are shared with the run over
 * https:// in scalekit-sdk-tls.test.ts); then the same calls over Scalekit's /api/v1 REST shape.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  followAuthorizationLink,
  startHarness,
  TEST_CLIENT_ID,
  TEST_CLIENT_SECRET,
  type Harness,
} from '../helpers/harness.ts';
import {
  clientSide,
  createConnections,
  DESK_DOMAIN as DOMAIN,
  DESK_EMAIL as EMAIL,
  DESK_TOKEN as TOKEN,
  RETURN_ORIGIN,
  sdkScenarios,
  type ClientSide,
} from '../helpers/scalekit-sdk-scenarios.ts';
import { startScalekitServerSide, type ScalekitServerSide } from '../helpers/scalekit-server-side.ts';

let h: Harness;
let side: ScalekitServerSide;
let c: ClientSide;

beforeAll(async () => {
  h = await startHarness({ env: { ALLOWED_REDIRECT_ORIGINS: RETURN_ORIGIN } });
  side = await startScalekitServerSide(h);
  c = clientSide(side.server, h.client);
  await createConnections(c);
});
afterAll(async () => {
  await side?.close();
  await h?.close();
});

describe('the Scalekit SDK against the service over h2c', () => {
  for (const scenario of sdkScenarios) it(scenario.name, () => scenario.run(c));
});

describe('the same calls over the /api/v1 REST shape with plain fetch', () => {
  let token: string;
  async function rest(method: string, path: string, body?: unknown) {
    const res = await fetch(`${h.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, json: (await res.json()) as Record<string, any> };
  }
  beforeAll(async () => {
    const res = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
      }),
    });
    token = ((await res.json()) as { access_token: string }).access_token;
  });

  it('creates with static credentials, gets, lists and executes a tool', async () => {
    const created = await rest('POST', '/api/v1/connected_accounts', {
      connector: 'helpdesk',
      identifier: 'rest-1',
      connected_account: {
        authorization_details: { static_auth: { details: { domain: DOMAIN, email: EMAIL, api_token: TOKEN } } },
      },
    });
    expect(created.status).toBe(200);
    expect(created.json.connected_account).toMatchObject({
      identifier: 'rest-1',
      connector: 'helpdesk',
      status: 'ACTIVE',
      authorization_type: 'API_KEY',
    });
    expect(JSON.stringify(created.json)).not.toContain(TOKEN);
    const got = await rest('GET', '/api/v1/connected_accounts/auth?connector=helpdesk&identifier=rest-1');
    expect(got.json.connected_account.id).toBe(created.json.connected_account.id);
    const listed = await rest('GET', '/api/v1/connected_accounts?connector=helpdesk&page_size=50');
    expect(listed.json.connected_accounts.map((a: { identifier: string }) => a.identifier)).toContain('rest-1');
    const ran = await rest('POST', '/api/v1/execute_tool', {
      tool_name: 'helpdesk_tickets_list',
      connector: 'helpdesk',
      identifier: 'rest-1',
      params: { per_page: 2 },
    });
    expect(ran.status).toBe(200);
    expect(ran.json.execution_id).toMatch(/^exe_/);
    expect(ran.json.data.tickets).toHaveLength(2);
    const tools = await rest('GET', '/api/v1/tools?provider=helpdesk&summary=true');
    expect(tools.json.tool_names).toContain('helpdesk_ticket_get');
    const connections = await rest('GET', '/api/v1/connections/app');
    expect(connections.json.connections.map((c: { key_id: string }) => c.key_id).sort()).toEqual(['helpdesk', 'mail']);
  });

  it('refuses invalid input naming the field, and reports a provider failure', async () => {
    const unknown = await rest('POST', '/api/v1/connected_accounts', {
      connector: 'helpdesk',
      identifier: 'x',
      bogus: 1,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.details[0].field).toBe('bogus');
    const badInput = await rest('POST', '/api/v1/execute_tool', {
      tool_name: 'helpdesk_ticket_get',
      connector: 'helpdesk',
      identifier: 'rest-1',
      params: { ticket_id: 'abc' },
    });
    expect(badInput.status).toBe(400);
    expect(badInput.json.error.details[0].field).toBe('ticket_id');
    const missing = await rest('POST', '/api/v1/connected_accounts', {
      connector: 'helpdesk',
      identifier: 'rest-2',
      connected_account: { authorization_details: { static_auth: { details: { domain: DOMAIN, email: EMAIL } } } },
    });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.json.error.details)).toContain('api_token');
    const provider = await rest('POST', '/api/v1/execute_tool', {
      tool_name: 'helpdesk_ticket_get',
      connector: 'helpdesk',
      identifier: 'rest-1',
      params: { ticket_id: 999999 },
    });
    expect(provider.status).toBe(404);
    expect(provider.json.error).toMatchObject({ code: 'provider_error', provider_status: 404 });
    expect(provider.json.error.execution_id ?? provider.json.execution_id).toBeDefined();
  });

  it('gives an authorization link, verifies the user, and deletes then answers not found', async () => {
    const link = await rest('POST', '/api/v1/connected_accounts/magic_link', {
      connector: 'mail',
      identifier: 'rest-carol',
      user_verify_url: `${RETURN_ORIGIN}/verify`,
    });
    expect(link.status).toBe(200);
    expect(link.json.expiry).toMatch(/^\d{4}-/);
    const back = await followAuthorizationLink(link.json.link, 'carol-at-provider');
    const authRequestId = new URL(back.headers.get('location')!).searchParams.get('auth_request_id')!;
    const pending = await rest('GET', '/api/v1/connected_accounts/auth?connector=mail&identifier=rest-carol');
    expect(pending.json.connected_account.status).toBe('PENDING_VERIFICATION');
    const verified = await rest('POST', '/api/v1/connected_accounts/verify', {
      auth_request_id: authRequestId,
      identifier: 'rest-carol',
    });
    expect(verified.status).toBe(200);
    const active = await rest('GET', '/api/v1/connected_accounts/auth?connector=mail&identifier=rest-carol');
    expect(active.json.connected_account.status).toBe('ACTIVE');

    const deleted = await rest('POST', '/api/v1/connected_accounts:delete', {
      connector: 'mail',
      identifier: 'rest-carol',
    });
    expect(deleted.status).toBe(200);
    const gone = await rest('GET', '/api/v1/connected_accounts/auth?connector=mail&identifier=rest-carol');
    expect(gone.status).toBe(404);
    expect(gone.json.error.code).toBe('account_not_found');
  });
});
