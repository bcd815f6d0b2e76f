/**
 * End users connect themselves (issue 38): authorization just in time over REST, the proxy and the client library
 * (403 `authorization_required` with a single-use link), and least-privilege scopes per tool (a link for a set of
 * tools, incremental consent for a tool whose scopes the account lacks), against the fake authorization server and
 * the fake Microsoft Graph.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthorizationRequiredError } from '../../packages/client/src/index.ts';
import {
  followAuthorizationLink,
  oauthConnection,
  serviceToken,
  startHarness,
  type Harness,
} from '../helpers/harness.ts';
import { failure } from '../helpers/tools.ts';
import { startFakeGraph, type FakeGraph } from '../fakes/graph.ts';
import { sql, type Kysely } from 'kysely';

let h: Harness;
let graph: FakeGraph;
let token: string;
let receiver: http.Server;
/** The webhook events received: `connected_account.active` with its account id. */
const events: Array<{ type: string; data: { connected_account_id: string } }> = [];

beforeAll(async () => {
  h = await startHarness({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      events.push(JSON.parse(body) as (typeof events)[number]);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  await h.client.createWebhook({
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
    events: ['connected_account.active'],
  });
  graph = await startFakeGraph({ validateToken: (t) => !!h.oauth.validate(t) });
  await oauthConnection(h, 'mail', 'mail', graph.url);
  token = await serviceToken(h.url);
});
afterAll(async () => {
  await new Promise((r) => receiver?.close(r));
  await graph?.close();
  await h?.close();
});

const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
};

const linkRows = async () => {
  // The store's own database handle (private to it): the rows themselves are what is counted.
  const db = (h.running.services.store as unknown as { db: Kysely<unknown> }).db;
  const r = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM oauth_links`.execute(db);
  return Number(r.rows[0]!.n);
};

/** The scopes the link asks the provider for: the `scope` of the authorization URL it redirects to. */
async function askedScopes(link: string): Promise<string[]> {
  const res = await fetch(link, { redirect: 'manual' });
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location')!).searchParams.get('scope')!.split(' ');
}

const listMessages = (identifier: string) =>
  h.client.executeTool({ toolName: 'mail_list_messages', toolInput: {}, connectionName: 'mail', identifier });

describe('authorization just in time', () => {
  it('answers a tool call for a user who never connected with 403 authorization_required and a link', async () => {
    const r = await api('POST', '/v1/tools/execute', {
      tool_name: 'mail_list_messages',
      tool_input: {},
      connection_name: 'mail',
      identifier: 'newcomer',
    });
    expect(r.status).toBe(403);
    expect(r.headers.get('x-error-source')).toBe('service');
    expect(r.json.error).toMatchObject({
      code: 'authorization_required',
      reason: 'not_connected',
      connection_name: 'mail',
      identifier: 'newcomer',
    });
    expect(r.json.error.link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/sso\/v1\/oauth\/.+\/authorize\?link=/);
    expect(Date.parse(r.json.error.link_expires_at)).toBeGreaterThan(Date.now());
  });

  it('hands out the same link again while it is fresh: repeated calls add no link rows', async () => {
    const first = await failure(listMessages('repeater'));
    const rows = await linkRows();
    for (let i = 0; i < 5; i++) {
      const again = await failure(listMessages('repeater'));
      expect(again).toBeInstanceOf(AuthorizationRequiredError);
      expect((again as AuthorizationRequiredError).link).toBe((first as AuthorizationRequiredError).link);
    }
    expect(await linkRows()).toBe(rows);
  });

  it('the client library throws a typed error; completing its link lets the retried call succeed', async () => {
    const e = await failure(listMessages('dora'));
    expect(e).toBeInstanceOf(AuthorizationRequiredError);
    const auth = e as AuthorizationRequiredError;
    expect(auth.status).toBe(403);
    expect(auth.reason).toBe('not_connected');
    expect(auth.linkExpiresAt.getTime()).toBeGreaterThan(Date.now());
    const done = await followAuthorizationLink(auth.link, 'dora');
    expect(done.status).toBe(200);
    const account = await h.client.getConnectedAccount(auth.connectedAccountId);
    expect(account.status).toBe('ACTIVE');
    const ok = await listMessages('dora');
    expect(ok.executionId).toMatch(/^exe_/);
    // The link is spent: opening it again is refused.
    expect((await fetch(auth.link, { redirect: 'manual' })).status).toBe(410);
  });

  it('persists no account for a user who never connected until the link is completed (a tools:execute-only credential creates no rows)', async () => {
    const created = await api('POST', '/v1/api-credentials', { name: 'runner', scopes: ['tools:execute'] });
    expect(created.status).toBe(201);
    const granted = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: created.json.client_id,
        client_secret: created.json.client_secret,
      }),
    });
    const runner = ((await granted.json()) as { access_token: string }).access_token;
    const accountRows = async (identifier: string) => {
      const db = (h.running.services.store as unknown as { db: Kysely<unknown> }).db;
      const r = await sql<{
        n: number;
      }>`SELECT COUNT(*) AS n FROM connected_accounts WHERE identifier = ${identifier}`.execute(db);
      return Number(r.rows[0]!.n);
    };
    const call = () =>
      api(
        'POST',
        '/v1/tools/execute',
        { tool_name: 'mail_list_messages', tool_input: {}, connection_name: 'mail', identifier: 'ghost' },
        { authorization: `Bearer ${runner}` },
      );
    const first = await call();
    expect(first.status).toBe(403);
    expect(first.json.error).toMatchObject({ code: 'authorization_required', reason: 'not_connected' });
    const again = await call();
    expect(again.json.error.link).toBe(first.json.error.link);
    expect(again.json.error.connected_account_id).toBe(first.json.error.connected_account_id);
    expect(await accountRows('ghost')).toBe(0);
    expect((await api('GET', `/v1/connected-accounts/${first.json.error.connected_account_id}`)).status).toBe(404);

    // Completing the link creates the account, under the id the answer named, and activates it.
    expect((await followAuthorizationLink(first.json.error.link, 'ghost')).status).toBe(200);
    expect(await accountRows('ghost')).toBe(1);
    const account = await h.client.getConnectedAccount(first.json.error.connected_account_id);
    expect(account).toMatchObject({ identifier: 'ghost', status: 'ACTIVE' });
    expect((await call()).status).toBe(200);
  });

  it('answers a proxy call for a user who never connected the same way', async () => {
    const r = await api('GET', '/proxy/v1.0/me/messages', undefined, {
      connection_name: 'mail',
      identifier: 'proxied',
    });
    expect(r.status).toBe(403);
    expect(r.json.error).toMatchObject({ code: 'authorization_required', reason: 'not_connected' });
    const e = await failure(
      h.client.request({ connectionName: 'mail', identifier: 'proxied', path: '/v1.0/me/messages' }),
    );
    expect(e).toBeInstanceOf(AuthorizationRequiredError);
    expect((e as AuthorizationRequiredError).link).toBe(r.json.error.link);
  });

  it('answers for a disconnected account with reason disconnected, on that account', async () => {
    const e = (await failure(listMessages('eve'))) as AuthorizationRequiredError;
    await followAuthorizationLink(e.link, 'eve');
    await h.client.disconnectConnectedAccount(e.connectedAccountId);
    const again = (await failure(listMessages('eve'))) as AuthorizationRequiredError;
    expect(again).toBeInstanceOf(AuthorizationRequiredError);
    expect(again.reason).toBe('disconnected');
    expect(again.connectedAccountId).toBe(e.connectedAccountId);
  });

  it('reconnects a disconnected account in place: the same id turns ACTIVE, and connected_account.active follows', async () => {
    const first = (await failure(listMessages('fay'))) as AuthorizationRequiredError;
    await followAuthorizationLink(first.link, 'fay');
    await h.client.disconnectConnectedAccount(first.connectedAccountId);
    const e = (await failure(listMessages('fay'))) as AuthorizationRequiredError;
    expect(e.reason).toBe('disconnected');
    expect((await followAuthorizationLink(e.link, 'fay')).status).toBe(200);
    const account = await h.client.getConnectedAccount(first.connectedAccountId);
    expect(account.status).toBe('ACTIVE');
    expect(
      (await api('GET', '/v1/connected-accounts?connection_name=mail&identifier=fay')).json.connected_accounts,
    ).toHaveLength(1);
    await listMessages('fay');
    // Two activations of the same account: the first connection and the reconnection.
    const activeFor = () =>
      events.filter((x) => x.type === 'connected_account.active' && x.data.connected_account_id === account.id);
    while (activeFor().length < 2) await new Promise((r) => setTimeout(r, 50));
    expect(activeFor()).toHaveLength(2);
  });

  it('keeps 404 for an account named by an id that does not exist', async () => {
    const e = await failure(
      h.client.executeTool({ toolName: 'mail_list_messages', toolInput: {}, connectedAccountId: 'ca_nope' }),
    );
    expect(e.status).toBe(404);
    expect(e.code).toBe('account_not_found');
  });
});

describe('least-privilege scopes per tool', () => {
  it('a link for [mail_list_messages] asks only for Mail.Read, offline_access and User.Read', async () => {
    const { link } = await h.client.getAuthorizationLink({
      connectionName: 'mail',
      identifier: 'lea',
      tools: ['mail_list_messages'],
    });
    expect((await askedScopes(link)).sort()).toEqual(['Mail.Read', 'User.Read', 'offline_access']);
  });

  it('refuses a tool of another connector in tools, naming it', async () => {
    const r = await api('POST', '/v1/connected-accounts/authorization-link', {
      connection_name: 'mail',
      identifier: 'lea',
      tools: ['mail_list_messages', 'crm_contact_get'],
    });
    expect(r.status).toBe(400);
    expect(r.json.error.details).toEqual([{ field: 'tools[1]', message: 'is not a tool of the mail connector' }]);
  });

  it('asks for Mail.Send when the account lacks it, and completing it adds it to the same account', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'mail',
      identifier: 'max',
      tools: ['mail_list_messages'],
    });
    expect((await followAuthorizationLink(link, 'max')).status).toBe(200);
    expect(await h.running.services.store.getAccount(id)).toMatchObject({
      status: 'ACTIVE',
      grantedScopes: ['offline_access', 'User.Read', 'Mail.Read'],
    });
    await listMessages('max');

    const listed = await api('GET', '/v1/tools?identifier=max&granted_scopes_only=true&connector=mail');
    const names = listed.json.tools.map((t: { name: string }) => t.name);
    expect(names).toContain('mail_list_messages');
    expect(names).not.toContain('mail_send_message');

    const sentBefore = graph.state.outbox.length;
    const send = () =>
      h.client.executeTool({
        toolName: 'mail_send_message',
        toolInput: { toRecipients: ['grace@example.com'], subject: 'Hi', body: 'Hello' },
        connectionName: 'mail',
        identifier: 'max',
      });
    const e = (await failure(send())) as AuthorizationRequiredError;
    expect(e).toBeInstanceOf(AuthorizationRequiredError);
    expect(e.reason).toBe('missing_scopes');
    expect(e.missingScopes).toEqual(['Mail.Send']);
    expect(e.connectedAccountId).toBe(id);
    // Nothing went to the provider.
    expect(graph.state.outbox.length).toBe(sentBefore);
    const asked = await askedScopes(e.link);
    expect(asked).toContain('Mail.Send');
    expect(asked).toContain('Mail.Read');
    expect((await followAuthorizationLink(e.link, 'max')).status).toBe(200);

    const after = (await h.running.services.store.getAccount(id))!;
    expect(after.status).toBe('ACTIVE');
    expect(after.grantedScopes).toEqual(expect.arrayContaining(['Mail.Read', 'Mail.Send']));
    const accounts = await api('GET', '/v1/connected-accounts?connection_name=mail&identifier=max');
    expect(accounts.json.connected_accounts).toHaveLength(1);
    await send();
    expect(graph.state.outbox.length).toBe(sentBefore + 1);
    const relisted = await api('GET', '/v1/tools?identifier=max&granted_scopes_only=true&connector=mail');
    expect(relisted.json.tools.map((t: { name: string }) => t.name)).toContain('mail_send_message');
  });

  it('a broader granted scope covers a narrower one the tool declares (Tasks.ReadWrite covers Tasks.Read)', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'mail',
      identifier: 'tess',
      tools: ['mail_todo_lists_create'],
    });
    await followAuthorizationLink(link, 'tess');
    expect((await h.running.services.store.getAccount(id))!.grantedScopes).toContain('Tasks.ReadWrite');
    const r = await h.client.executeTool({
      toolName: 'mail_todo_lists_list',
      toolInput: {},
      connectionName: 'mail',
      identifier: 'tess',
    });
    expect(r.executionId).toMatch(/^exe_/);
  });
});
