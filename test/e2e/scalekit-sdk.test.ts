/**
 * Scalekit's official Node SDK (`@scalekit-sdk/node`), unchanged, pointed at this service as its envUrl: gRPC over
 * cleartext HTTP/2 on the service's one port (h2c), with its own lazy token fetch, get-or-create, tool execution,
 * proxy, listing, authorization links, user verification and errors.
 */
import { create } from '@bufbuild/protobuf';
import { ScalekitClient } from '@scalekit-sdk/node';
import {
  AuthorizationDetailsSchema,
  StaticAuthSchema,
} from '@scalekit-sdk/node/lib/pkg/grpc/scalekit/v1/connected_accounts/connected_accounts_pb.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDesk } from '../fakes/desk.ts';
import {
  followAuthorizationLink,
  oauthConnection,
  startHarness,
  TEST_CLIENT_ID,
  TEST_CLIENT_SECRET,
  type Harness,
} from '../helpers/harness.ts';
import { listen, type Listening } from '../fakes/listen.ts';
import express from 'express';

let h: Harness;
let desk: FakeDesk;
let api: Listening;
let sk: ScalekitClient;
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const TOKEN = 'zd-api-token-sdk-4b1d';
const RETURN_ORIGIN = 'https://app.client.example';

beforeAll(async () => {
  h = await startHarness({ env: { ALLOWED_REDIRECT_ORIGINS: RETURN_ORIGIN } });
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, TOKEN);
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  const app = express();
  app.get('/v1.0/me', (req, res) => {
    const who = h.oauth.validate(req.headers.authorization);
    if (!who) return void res.status(401).json({ error: { code: 'InvalidAuthenticationToken' } });
    res.json({ id: who.subject });
  });
  api = await listen(app);
  await oauthConnection(h, 'mail', 'mail', api.url);
  sk = new ScalekitClient(h.url, TEST_CLIENT_ID, TEST_CLIENT_SECRET);
});
afterAll(async () => {
  await api?.close();
  await desk?.close();
  await h?.close();
});

/** The SDK's exception for a promise, or a failure if it resolved. */
async function sdkError(p: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  return e as Error & Record<string, unknown>;
}

describe('the Scalekit SDK against the service over h2c', () => {
  it('gets or creates an account with static credentials, fetching its token lazily', async () => {
    const created = await sk.actions.getOrCreateConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'user-1',
      authorizationDetails: create(AuthorizationDetailsSchema, {
        details: {
          case: 'staticAuth',
          value: create(StaticAuthSchema, { details: { domain: DOMAIN, email: EMAIL, api_token: TOKEN } }),
        },
      }),
    });
    expect(created.connectedAccount).toMatchObject({
      identifier: 'user-1',
      connector: 'helpdesk',
      provider: 'helpdesk',
    });
    expect(created.connectedAccount!.status).toBe(1); // ACTIVE
    // The stored key is never echoed back.
    expect(JSON.stringify(created.connectedAccount, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(
      TOKEN,
    );
    const again = await sk.actions.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'user-1' });
    expect(again.connectedAccount!.id).toBe(created.connectedAccount!.id);
    const got = await sk.actions.getConnectedAccount({ connectionName: 'helpdesk', identifier: 'user-1' });
    expect(got.connectedAccount!.id).toBe(created.connectedAccount!.id);
  });

  it('executes a tool against the fake desk', async () => {
    const res = await sk.actions.executeTool({
      toolName: 'helpdesk_tickets_list',
      connector: 'helpdesk',
      identifier: 'user-1',
      toolInput: { per_page: 2, sort_order: 'asc' },
    });
    expect(res.executionId).toMatch(/^exe_/);
    expect((res.data as { tickets: unknown[] }).tickets).toHaveLength(2);
  });

  it('proxies a raw request with the account credentials', async () => {
    const res = await sk.actions.request({
      connectionName: 'helpdesk',
      identifier: 'user-1',
      path: '/v2/tickets',
    });
    expect(res.status).toBe(200);
    expect((res.data as { tickets: unknown[] }).tickets.length).toBeGreaterThan(0);
  });

  it('lists accounts, connections and tools', async () => {
    const accounts = await sk.actions.listConnectedAccounts({ connectionName: 'helpdesk' });
    expect(accounts.connectedAccounts.map((a) => a.identifier)).toContain('user-1');
    const connections = await sk.actions.listConnections();
    expect(connections.connections.map((c) => c.connectionName).sort()).toEqual(['helpdesk', 'mail']);
    const tools = await sk.tools.listTools({ filter: { provider: 'helpdesk', summary: true } as never });
    expect(tools.toolNames).toContain('helpdesk_ticket_get');
    const available = await sk.tools.listAvailableTools('user-1');
    expect(available.tools.every((t) => t.provider === 'helpdesk')).toBe(true);
    expect(available.tools.length).toBeGreaterThan(5);
    const scoped = await sk.tools.listScopedTools('user-1', { filter: { connectionNames: ['helpdesk'] } });
    expect(scoped.tools.length).toBe(available.tools.length);
    expect(scoped.tools[0]).toMatchObject({ identifier: 'user-1', connectedAccountId: expect.stringMatching(/^ca_/) });
    // The SDK's other clients have no service here: UNIMPLEMENTED.
    const other = await sdkError(sk.organization.listOrganization({ pageSize: 1 }));
    expect(other.name).toBe('ScalekitNotImplementedException');
  });

  it('refuses invalid input, naming the field', async () => {
    const e = await sdkError(
      sk.actions.executeTool({
        toolName: 'helpdesk_ticket_get',
        connector: 'helpdesk',
        identifier: 'user-1',
        toolInput: { ticket_id: 'abc' },
      }),
    );
    expect(e.name).toBe('ScalekitBadRequestException');
    expect(e.message).toContain('ticket_id');
    const bad = await sdkError(
      sk.actions.getOrCreateConnectedAccount({
        connectionName: 'helpdesk',
        identifier: 'user-2',
        authorizationDetails: create(AuthorizationDetailsSchema, {
          details: {
            case: 'staticAuth',
            value: create(StaticAuthSchema, { details: { domain: DOMAIN, email: EMAIL } }),
          },
        }),
      }),
    );
    expect(bad.name).toBe('ScalekitBadRequestException');
    expect(bad.message).toContain('api_token');
  });

  it('reports a provider failure as TOOL_ERROR with the execution id', async () => {
    const e = await sdkError(
      sk.actions.executeTool({
        toolName: 'helpdesk_ticket_get',
        connector: 'helpdesk',
        identifier: 'user-1',
        toolInput: { ticket_id: 999999 },
      }),
    );
    expect(e.isToolError).toBe(true);
    expect(e.toolErrorCode).toBe('404');
    expect(e.executionId).toMatch(/^exe_/);
    expect(String(e.toolErrorMessage)).toContain('RecordNotFound');
  });

  it('gives an authorization link for an OAuth connection, and a PENDING_AUTH account before it is used', async () => {
    const { link, expiry } = await sk.actions.getAuthorizationLink({ connectionName: 'mail', identifier: 'alice' });
    expect(link).toContain('/sso/v1/oauth/');
    expect(expiry).toBeDefined();
    const pending = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'alice' });
    expect(pending.connectedAccount!.status).toBe(3); // PENDING_AUTH
    expect((await followAuthorizationLink(link, 'alice-at-provider')).status).toBe(200);
    const active = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'alice' });
    expect(active.connectedAccount!.status).toBe(1);
    const me = await sk.actions.request({ connectionName: 'mail', identifier: 'alice', path: '/v1.0/me' });
    expect(me.data).toEqual({ id: 'alice-at-provider' });
  });

  it('verifies the user after OAuth when the link carries a user_verify_url', async () => {
    const { link } = await sk.actions.getAuthorizationLink({
      connectionName: 'mail',
      identifier: 'bob',
      userVerifyUrl: `${RETURN_ORIGIN}/verify`,
    });
    const back = await followAuthorizationLink(link, 'bob-at-provider');
    expect(back.status).toBe(302);
    const authRequestId = new URL(back.headers.get('location')!).searchParams.get('auth_request_id')!;
    const pending = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'bob' });
    expect(pending.connectedAccount!.status).toBe(4); // PENDING_VERIFICATION
    const notYet = await sdkError(sk.actions.request({ connectionName: 'mail', identifier: 'bob', path: '/v1.0/me' }));
    expect(notYet._errDetails).toMatchObject({ error: { code: 'account_pending_verification' } });
    const wrong = await sdkError(sk.actions.verifyConnectedAccountUser({ authRequestId: 'nope', identifier: 'bob' }));
    expect(wrong.name).toBe('ScalekitNotFoundException');
    await sk.actions.verifyConnectedAccountUser({ authRequestId, identifier: 'bob' });
    const active = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'bob' });
    expect(active.connectedAccount!.status).toBe(1);
  });

  it('deletes an account; getting it then answers not found', async () => {
    await sk.actions.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'gone' });
    await sk.actions.deleteConnectedAccount({ connectionName: 'helpdesk', identifier: 'gone' });
    const e = await sdkError(sk.actions.getConnectedAccount({ connectionName: 'helpdesk', identifier: 'gone' }));
    expect(e.name).toBe('ScalekitNotFoundException');
  });

  it('answers UNAUTHENTICATED to a call without or with a bad token, and the SDK recovers with a new one', async () => {
    const fresh = new ScalekitClient(h.url, TEST_CLIENT_ID, TEST_CLIENT_SECRET);
    (fresh as unknown as { coreClient: { accessToken: string } }).coreClient.accessToken = 'not-a-token';
    const list = await fresh.actions.listConnectedAccounts({ connectionName: 'helpdesk' });
    expect(list.connectedAccounts.length).toBeGreaterThan(0);
    const wrongSecret = new ScalekitClient(h.url, TEST_CLIENT_ID, 'wrong-secret');
    const e = await sdkError(wrongSecret.actions.listConnectedAccounts({ connectionName: 'helpdesk' }));
    expect(e.message).toMatch(/401|invalid_client|Unauthorized/i);
  });

  it('leaves HTTP/1.1 clients as they were on the same port', async () => {
    const res = await fetch(`${h.url}/health`);
    expect(res.status).toBe(200);
    expect(
      (
        await h.client.getConnectedAccount(
          (await h.client.listConnectedAccounts({ connectionName: 'helpdesk' })).connected_accounts[0]!.id,
        )
      ).connection_name,
    ).toBe('helpdesk');
  });
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
