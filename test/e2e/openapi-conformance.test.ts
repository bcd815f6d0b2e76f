/**
 * The OpenAPI document (generated/docs/openapi.json) against the running service: every operation in it is
 * called for a success and for at least one error, and each real answer — status, content type and body — is
 * validated against what the document says of that operation, with ajv. An answer that drifts from the
 * document, or an operation no case here calls, fails.
 */
import { createHmac } from 'node:crypto';
import { FakeGong } from '../fakes/gong.ts';
import { FakeHubSpotApp } from '../fakes/push-providers.ts';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { startHarness, oauthConnection, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { Sentinel } from '../reliability/sentinel.ts';
import { tools } from '../../generated/registry.ts';

interface Operation {
  operationId: string;
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

const DOCUMENT = JSON.parse(
  readFileSync(new URL('../../generated/docs/openapi.json', import.meta.url), 'utf8'),
) as Document;

const operations = new Map<string, { path: string; method: string; op: Operation }>();
for (const [path, item] of Object.entries(DOCUMENT.paths))
  for (const [method, op] of Object.entries(item)) operations.set(op.operationId, { path, method, op });

// Compiling schemas is the test's business, never the runtime's: the document is added once, and each answer is
// checked against a reference into it.
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s));
ajv.addSchema(DOCUMENT, 'openapi.json');
const compiled = new Map<string, ValidateFunction>();
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** A HEAD answer has the headers of a GET but no body to check. */
  head?: boolean;
}

/** What the document allows for this status; throws, naming the operation, when it allows nothing. */
function check(operationId: string, answer: Answer): void {
  const entry = operations.get(operationId);
  expect(entry, `operation ${operationId} in the document`).toBeDefined();
  const { path, method, op } = entry!;
  const key = [String(answer.status), `${String(answer.status)[0]}XX`, 'default'].find((k) => op.responses[k]);
  const where = `${operationId} (${method.toUpperCase()} ${path}) answered ${answer.status} ${answer.contentType}: ${answer.text.slice(0, 300)}`;
  expect(key, `${where}: status not in the document`).toBeDefined();
  const content = op.responses[key!]!.content;
  if (answer.head) return;
  if (!content) {
    expect(answer.text, `${where}: the document says no body`).toBe('');
    return;
  }
  const media = answer.contentType.split(';')[0]!.trim();
  const type = media in content ? media : '*/*' in content ? '*/*' : undefined;
  expect(type, `${where}: content type not in the document (${Object.keys(content).join(', ')})`).toBeDefined();
  const schemaKey = pointer('paths', path, method, 'responses', key!, 'content', type!, 'schema');
  if (!content[type!]!.schema || Object.keys(content[type!]!.schema as object).length === 0) return;
  let validate = compiled.get(schemaKey);
  if (!validate) {
    validate = ajv.compile({ $ref: `openapi.json#/${schemaKey}` });
    compiled.set(schemaKey, validate);
  }
  const body = type === 'application/json' ? (JSON.parse(answer.text) as unknown) : answer.text;
  expect(validate(body), `${where}: ${ajv.errorsText(validate.errors)}`).toBe(true);
}

let h: Harness;
let sentinel: Sentinel;
let token: string;
const seen = new Map<string, { success: number; error: number }>();

/** Sends one request and checks the answer against the document; returns it for the case to look at. */
async function call(
  operationId: string,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string>; auth?: boolean; raw?: string } = {},
): Promise<Answer & { headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.auth !== false) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers,
    body: opts.raw ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined),
    redirect: 'manual',
  });
  const answer = {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    text: await res.text(),
    head: method === 'HEAD',
  };
  check(operationId, answer);
  const tally = seen.get(operationId) ?? { success: 0, error: 0 };
  if (res.status < 400) tally.success++;
  else tally.error++;
  seen.set(operationId, tally);
  return { ...answer, headers: res.headers };
}

beforeAll(async () => {
  h = await startHarness({ env: { LOG_LEVEL: 'warn' } });
  sentinel = await new Sentinel().start();
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(async () => {
  await sentinel?.close();
  await h?.close();
});

describe('every operation of the OpenAPI document, against the running service', () => {
  it('the index and the document itself', async () => {
    const index = await call('index', 'GET', '/', { auth: false, headers: { accept: 'application/json' } });
    expect(JSON.parse(index.text).links.openapi).toBe(`${h.url}/openapi.json`);
    const browser = await call('index', 'GET', '/', { auth: false, headers: { accept: 'text/html,*/*;q=0.8' } });
    expect(browser.headers.get('location')).toBe(`${h.url}/dashboard`);
    const doc = await call('openapi', 'GET', '/openapi.json', { auth: false });
    expect(JSON.parse(doc.text)).toEqual(DOCUMENT);
  });

  it('health and the token endpoint', async () => {
    await call('health', 'GET', '/health', { auth: false });
    await call('health', 'HEAD', '/health', { auth: false });
    expect(JSON.parse((await call('ready', 'GET', '/ready', { auth: false })).text)).toEqual({ status: 'ready' });
    await call('metrics', 'GET', '/metrics', { auth: false });
    h.running.services.config.metricsToken = 'conformance-metrics-token';
    try {
      await call('metrics', 'GET', '/metrics', { auth: false });
    } finally {
      h.running.services.config.metricsToken = undefined;
    }
    // What a draining process answers (SIGTERM sets this; test/e2e/graceful-drain.test.ts sends the signal).
    h.running.services.lifecycle.draining = true;
    try {
      const draining = await call('ready', 'GET', '/ready', { auth: false });
      expect([draining.status, JSON.parse(draining.text)]).toEqual([503, { status: 'draining' }]);
    } finally {
      h.running.services.lifecycle.draining = false;
    }
    const ok = await call('issueToken', 'POST', '/oauth/token', {
      auth: false,
      body: { client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET },
    });
    expect(JSON.parse(ok.text).token_type).toBe('Bearer');
    await call('issueToken', 'POST', '/oauth/token', { auth: false, body: { grant_type: 'password' } });
    await call('issueToken', 'POST', '/oauth/token', { auth: false, body: { client_id: 'x', client_secret: 'y' } });
    await call('issueToken', 'POST', '/oauth/token', {
      auth: false,
      raw: '{"client_id":',
      headers: { 'content-type': 'application/json' },
    });
  });

  it('connectors and tools', async () => {
    await call('listConnectors', 'GET', '/v1/connectors');
    await call('listConnectors', 'GET', '/v1/connectors', { auth: false });
    await call('getConnector', 'GET', '/v1/connectors/mail');
    await call('getConnector', 'GET', '/v1/connectors/helpdesk');
    await call('getConnector', 'GET', '/v1/connectors/notes');
    await call('getConnector', 'GET', '/v1/connectors/nope');
    const all = await call('listTools', 'GET', '/v1/tools');
    expect(JSON.parse(all.text).count).toBe(tools.size);
    // Every tool shows its human title (issue 13 point 8), never its name again.
    const listed = JSON.parse(all.text).tools as Array<{ name: string; title: string }>;
    expect(listed.find((t) => t.name === 'mail_list_messages')!.title).toBe('List mail messages');
    expect(listed.filter((t) => t.title === t.name)).toEqual([]);
    await call('listTools', 'GET', '/v1/tools?connector=callintel');
    await call('listTools', 'GET', '/v1/tools?connector=nope');
    await call('listTools', 'GET', '/v1/tools?connector=a&connector=b');
    for (const format of ['openai', 'openai-strict', 'anthropic', 'gemini', 'mcp'])
      await call('listTools', 'GET', `/v1/tools?format=${format}&connector=helpdesk`);
    await call('listTools', 'GET', '/v1/tools?format=openai&strict=true&api=responses&names=helpdesk_ticket_get');
    await call('listTools', 'GET', '/v1/tools?format=gemini&identifier=nobody');
    await call('listTools', 'GET', '/v1/tools?format=claude');
    await call('listTools', 'GET', '/v1/tools?format=mcp&names=helpdesk_tiket_get');
    await call('searchTools', 'GET', '/v1/tools/search?q=reply%20to%20a%20ticket&limit=3');
    await call('searchTools', 'GET', '/v1/tools/search?q=list&connector=mail&limit=1000');
    await call('searchTools', 'GET', '/v1/tools/search?q=%20');
    await call('searchTools', 'GET', '/v1/tools/search');
    await call('getTool', 'GET', '/v1/tools/helpdesk_ticket_get');
    await call('getTool', 'GET', '/v1/tools/callintel_calls_list');
    await call('getTool', 'GET', '/v1/tools/nope');
    // An unknown name gets the names made of the same words (issue 13 point 8).
    const unknown = await call('getTool', 'GET', '/v1/tools/mail_messages_list');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text).error.message).toBe(
      'No tool named "mail_messages_list"; did you mean mail_list_messages (or mail_todo_lists_list, mail_get_message)?',
    );
  });

  it('connections', async () => {
    await call('createConnection', 'POST', '/v1/connections', {
      body: { connection_name: 'data', connector: 'prodata', api_base_url: sentinel.url },
    });
    await oauthConnection(h, 'mailbox', 'mail', sentinel.url);
    await call('createConnection', 'POST', '/v1/connections', {
      body: { connection_name: 'data', connector: 'prodata' },
    });
    await call('createConnection', 'POST', '/v1/connections', {
      body: { connection_name: 'x', connector: 'mail', bogus: 1 },
    });
    await call('createConnection', 'POST', '/v1/connections', {
      raw: '{"connection_name": ',
      headers: { 'content-type': 'application/json' },
    });
    await call('listConnections', 'GET', '/v1/connections');
    await call('listConnections', 'GET', '/v1/connections', { auth: false });
    await call('getConnection', 'GET', '/v1/connections/mailbox');
    await call('getConnection', 'GET', '/v1/connections/nope');
    await call('updateConnection', 'PATCH', '/v1/connections/mailbox', { body: { scopes: ['Mail.Read'] } });
    await call('updateConnection', 'PATCH', '/v1/connections/mailbox', { body: { connector: 'crm' } });
    await call('updateConnection', 'PATCH', '/v1/connections/nope', { body: {} });
    await call('createConnection', 'POST', '/v1/connections', { body: { connection_name: 'gone', connector: 'crm' } });
    const deleted = await call('deleteConnection', 'DELETE', '/v1/connections/gone');
    await call('deleteConnection', 'DELETE', '/v1/connections/gone');
    await call('getConnectionDeletion', 'GET', deleted.headers.get('location')!);
    await call('getConnectionDeletion', 'GET', '/v1/connection-deletions/cdel_nope');
  });

  it('connected accounts and authorization links', async () => {
    const created = await call('getOrCreateConnectedAccount', 'POST', '/v1/connected-accounts', {
      body: { connection_name: 'data', identifier: 'user-1' },
    });
    expect(created.status).toBe(201);
    const again = await call('getOrCreateConnectedAccount', 'POST', '/v1/connected-accounts', {
      body: { connection_name: 'data', identifier: 'user-1' },
    });
    expect(again.status).toBe(200);
    await call('getOrCreateConnectedAccount', 'POST', '/v1/connected-accounts', {
      body: { connection_name: 'nope', identifier: 'user-1' },
    });
    const upserted = await call('upsertConnectedAccount', 'PUT', '/v1/connected-accounts', {
      body: { connection_name: 'data', identifier: 'user-1', credentials: { api_key: 'key-user-1' } },
    });
    const id = JSON.parse(upserted.text).connected_account.id as string;
    await call('upsertConnectedAccount', 'PUT', '/v1/connected-accounts', {
      body: { connection_name: 'data', identifier: 'user-1', credentials: { nope: 'x' } },
    });
    await call('listConnectedAccounts', 'GET', '/v1/connected-accounts');
    await call('listConnectedAccounts', 'GET', '/v1/connected-accounts?connection_name=data&limit=1&status=ACTIVE');
    await call('listConnectedAccounts', 'GET', '/v1/connected-accounts?limit=0');
    await call('listConnectedAccounts', 'GET', '/v1/connected-accounts?cursor=nope');
    await call('listConnectedAccounts', 'GET', '/v1/connected-accounts?connection_name=nope');
    await call('getConnectedAccount', 'GET', `/v1/connected-accounts/${id}`);
    await call('getConnectedAccount', 'GET', '/v1/connected-accounts/ca_nope');

    await call('createAuthorizationLink', 'POST', '/v1/connected-accounts/authorization-link', {
      body: { connection_name: 'mailbox', identifier: 'user-2' },
    });
    await call('createAuthorizationLink', 'POST', '/v1/connected-accounts/authorization-link', {
      body: { connection_name: 'data', identifier: 'user-2' },
    });
    await call('createAuthorizationLink', 'POST', '/v1/connected-accounts/authorization-link', {
      body: { connection_name: 'mailbox', identifier: 'user-2', redirect_url: 'https://elsewhere.example/x' },
    });

    const other = await call('getOrCreateConnectedAccount', 'POST', '/v1/connected-accounts', {
      body: { connection_name: 'data', identifier: 'user-3' },
    });
    const otherId = JSON.parse(other.text).connected_account.id as string;
    await call('disconnectConnectedAccount', 'POST', `/v1/connected-accounts/${otherId}/disconnect`);
    await call('disconnectConnectedAccount', 'POST', '/v1/connected-accounts/ca_nope/disconnect');
    await call('deleteConnectedAccount', 'DELETE', `/v1/connected-accounts/${otherId}`);
    await call('deleteConnectedAccount', 'DELETE', `/v1/connected-accounts/${otherId}`);
  });

  it('the OAuth browser endpoints: authorize and callback', async () => {
    const link = JSON.parse(
      (
        await call('createAuthorizationLink', 'POST', '/v1/connected-accounts/authorization-link', {
          body: { connection_name: 'mailbox', identifier: 'user-4' },
        })
      ).text,
    ).link as string;
    const start = await call('oauthAuthorize', 'GET', new URL(link).pathname + new URL(link).search, { auth: false });
    expect(start.status).toBe(302);
    const authorize = new URL(start.headers.get('location')!);
    authorize.searchParams.set('fake_user', 'user-4');
    const consent = await fetch(authorize, { redirect: 'manual' });
    const callback = new URL(consent.headers.get('location')!);
    const done = await call('oauthCallback', 'GET', callback.pathname + callback.search, { auth: false });
    expect(done.status).toBe(200);
    // The same state again is a replay.
    await call('oauthCallback', 'GET', callback.pathname + callback.search, { auth: false });
    await call('oauthAuthorize', 'GET', new URL(link).pathname + new URL(link).search, { auth: false });
    await call('oauthAuthorize', 'GET', `${new URL(link).pathname}?link=a&link=b`, { auth: false });
  });

  it("an MCP connection's Client ID Metadata Document", async () => {
    const made = await call('createConnection', 'POST', '/v1/connections', {
      body: { connection_name: 'notes-cimd', connector: 'notes', oauth: { resource: 'https://mcp.example.com/mcp' } },
    });
    const id = (JSON.parse(made.text) as { id: string }).id;
    expect((await call('oauthClientMetadata', 'GET', `/oauth/client-metadata/${id}`, { auth: false })).status).toBe(
      200,
    );
    await call('oauthClientMetadata', 'GET', '/oauth/client-metadata/conn_none', { auth: false });
  });

  it('user verification after OAuth', async () => {
    const { link } = JSON.parse(
      (
        await call('createAuthorizationLink', 'POST', '/v1/connected-accounts/authorization-link', {
          body: { connection_name: 'mailbox', identifier: 'user-5', user_verify_url: `${h.url}/verify-user` },
        })
      ).text,
    ) as { link: string };
    const start = await fetch(link, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location')!);
    authorize.searchParams.set('fake_user', 'user-5');
    const consent = await fetch(authorize, { redirect: 'manual' });
    const callback = new URL(consent.headers.get('location')!);
    const done = await call('oauthCallback', 'GET', callback.pathname + callback.search, { auth: false });
    expect(done.status).toBe(302);
    const authRequestId = new URL(done.headers.get('location')!).searchParams.get('auth_request_id')!;
    await call('verifyConnectedAccountUser', 'POST', '/v1/connected-accounts/verify', {
      body: { auth_request_id: authRequestId, identifier: 'user-5' },
    });
    await call('verifyConnectedAccountUser', 'POST', '/v1/connected-accounts/verify', {
      body: { auth_request_id: authRequestId, identifier: 'user-5' },
    });
    await call('verifyConnectedAccountUser', 'POST', '/v1/connected-accounts/verify', {
      body: { identifier: 'user-5' },
    });
    // The link is spent: opening it again is refused.
    await call('oauthAuthorize', 'GET', new URL(link).pathname + new URL(link).search, { auth: false });
  });

  it('tool execution: a live call, a dry run, the provider refusing, the service refusing', async () => {
    const body = {
      tool_name: 'prodata_scrape_profile',
      tool_input: { profile_url: 'https://www.linkedin.com/in/x' },
      connection_name: 'data',
      identifier: 'user-1',
    };
    await call('executeTool', 'POST', '/v1/tools/execute', { body });
    await call('executeTool', 'POST', '/v1/tools/execute', { body: { ...body, dry_run: true } });
    const { connection_name: _c, ...byIdentifier } = body;
    await call('executeTool', 'POST', '/v1/tools/execute', {
      body: { ...byIdentifier, dry_run: true, input_format: 'openai-strict' },
    });
    await call('executeTool', 'POST', '/v1/tools/execute', { body: { ...body, input_format: 'grok' } });
    sentinel.respond = () => ({ status: 404, body: JSON.stringify({ error: 'no such profile' }) });
    try {
      const refused = await call('executeTool', 'POST', '/v1/tools/execute', { body });
      expect(JSON.parse(refused.text).error.code).toBe('provider_error');
    } finally {
      sentinel.respond = undefined;
    }
    await call('executeTool', 'POST', '/v1/tools/execute', { body: { ...body, tool_input: { profile_url: 5 } } });
    await call('executeTool', 'POST', '/v1/tools/execute', { body: { ...body, tool_name: 'nope' } });
    const wordy = await call('executeTool', 'POST', '/v1/tools/execute', {
      body: { ...body, tool_name: 'prodata_profile_scrape' },
    });
    expect(wordy.status).toBe(404);
    expect(JSON.parse(wordy.text).error.details[0]).toEqual({
      field: 'tool_name',
      message: expect.stringMatching(/^is not a known tool \(did you mean prodata_scrape_profile\b/),
    });
    await call('executeTool', 'POST', '/v1/tools/execute', { body: { ...body, identifier: 'nobody' } });
    await call('executeTool', 'POST', '/v1/tools/execute', {
      raw: '{',
      headers: { 'content-type': 'application/json' },
    });
  });

  it('the proxy, with every method the document lists', async () => {
    const headers = { connection_name: 'data', identifier: 'user-1' };
    for (const method of ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD']) {
      const id = `proxy${method[0]}${method.slice(1).toLowerCase()}`;
      await call(id, method, '/proxy/echo', {
        headers,
        ...(method === 'GET' || method === 'HEAD' ? {} : { raw: 'x' }),
      });
      await call(id, method, '/proxy/echo', { headers: { connection_name: 'data' } });
    }
    await call('proxyGet', 'GET', '/proxy/echo', { headers: { connection_name: 'nope', identifier: 'user-1' } });
    await call('proxyGet', 'GET', '/proxy/echo', { headers, auth: false });
  });

  it("Scalekit's REST shape (/api/v1/…)", async () => {
    const account = { connector: 'data', identifier: 'sk-1' };
    await call('scalekitCreateConnectedAccount', 'POST', '/api/v1/connected_accounts', {
      body: {
        ...account,
        connected_account: { authorization_details: { static_auth: { details: { api_key: 'k-sk-1' } } } },
      },
    });
    await call('scalekitCreateConnectedAccount', 'POST', '/api/v1/connected_accounts', {
      body: { ...account, bogus: 1 },
    });
    await call('scalekitUpdateConnectedAccount', 'PUT', '/api/v1/connected_accounts', {
      body: {
        ...account,
        connected_account: { authorization_details: { static_auth: { details: { api_key: 'k-sk-2' } } } },
      },
    });
    await call('scalekitUpdateConnectedAccount', 'PUT', '/api/v1/connected_accounts', {
      // An identifier nothing ever named: a tool call for one (above) makes its account, to carry the link.
      body: { connector: 'data', identifier: 'never-seen' },
    });
    await call(
      'scalekitGetConnectedAccountAuth',
      'GET',
      '/api/v1/connected_accounts/auth?connector=data&identifier=sk-1',
    );
    await call(
      'scalekitGetConnectedAccountAuth',
      'GET',
      '/api/v1/connected_accounts/auth?connector=nope&identifier=sk-1',
    );
    await call('scalekitListConnectedAccounts', 'GET', '/api/v1/connected_accounts?connector=data&page_size=5');
    await call('scalekitListConnectedAccounts', 'GET', '/api/v1/connected_accounts?page_token=nope');
    await call('scalekitListTools', 'GET', '/api/v1/tools?provider=prodata&page_size=3');
    await call('scalekitListTools', 'GET', '/api/v1/tools?page_token=x');
    await call('scalekitListAppConnections', 'GET', '/api/v1/connections/app');
    await call('scalekitListAppConnections', 'GET', '/api/v1/connections/app', { auth: false });
    await call('scalekitExecuteTool', 'POST', '/api/v1/execute_tool', {
      body: {
        tool_name: 'prodata_scrape_profile',
        params: { profile_url: 'https://www.linkedin.com/in/x' },
        ...account,
      },
    });
    await call('scalekitExecuteTool', 'POST', '/api/v1/execute_tool', {
      body: { tool_name: 'prodata_scrape_profile', params: { profile_url: 5 }, ...account },
    });
    const link = await call('scalekitMagicLink', 'POST', '/api/v1/connected_accounts/magic_link', {
      body: { connector: 'mailbox', identifier: 'sk-2', user_verify_url: `${h.url}/verify-user` },
    });
    // A key connection's link leads to the hosted connect page (docs/connect.md): an unknown connection is the error.
    const keyLink = await call('scalekitMagicLink', 'POST', '/api/v1/connected_accounts/magic_link', {
      body: { connector: 'data', identifier: 'sk-2' },
    });
    await call('scalekitMagicLink', 'POST', '/api/v1/connected_accounts/magic_link', {
      body: { connector: 'nope', identifier: 'sk-2' },
    });
    // The hosted connect page: its form, a post without the page's CSRF cookie (refused), and one with it.
    const pageUrl = new URL(JSON.parse(keyLink.text).link as string);
    const shown = await call('oauthAuthorize', 'GET', pageUrl.pathname + pageUrl.search, { auth: false });
    const csrf = /name="csrf" value="([^"]+)"/.exec(shown.text)![1]!;
    const cookie = shown.headers.get('set-cookie')!.split(';')[0]!;
    const form = (extra: Record<string, string>) =>
      new URLSearchParams({ link: pageUrl.searchParams.get('link')!, csrf, ...extra }).toString();
    const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
    await call('connectSubmit', 'POST', pageUrl.pathname, { raw: form({}), headers: formHeaders, auth: false });
    await call('connectSubmit', 'POST', pageUrl.pathname, {
      raw: form({ c_api_key: 'k-sk-page' }),
      headers: { ...formHeaders, cookie },
      auth: false,
    });
    const start = await fetch(JSON.parse(link.text).link, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location')!);
    authorize.searchParams.set('fake_user', 'sk-2');
    const consent = await fetch(authorize, { redirect: 'manual' });
    const done = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
    const authRequestId = new URL(done.headers.get('location')!).searchParams.get('auth_request_id')!;
    await call('scalekitVerifyConnectedAccountUser', 'POST', '/api/v1/connected_accounts/verify', {
      body: { auth_request_id: authRequestId, identifier: 'sk-2' },
    });
    await call('scalekitVerifyConnectedAccountUser', 'POST', '/api/v1/connected_accounts/verify', {
      body: { auth_request_id: authRequestId, identifier: 'sk-2' },
    });
    await call('scalekitDeleteConnectedAccount', 'POST', '/api/v1/connected_accounts:delete', { body: account });
    await call('scalekitDeleteConnectedAccount', 'POST', '/api/v1/connected_accounts:delete', { body: account });
  });

  it('webhooks', async () => {
    h.running.services.config.webhookAllowedHosts = ['127.0.0.1'];
    const created = await call('createWebhook', 'POST', '/v1/webhooks', {
      body: { url: `${sentinel.url}/hooks`, events: ['connected_account.active'] },
    });
    await call('createWebhook', 'POST', '/v1/webhooks', { body: { url: 'http://10.0.0.1/', events: ['x'] } });
    const { id } = JSON.parse(created.text) as { id: string };
    await call('listWebhooks', 'GET', '/v1/webhooks');
    await call('listWebhooks', 'GET', '/v1/webhooks', { auth: false });
    await call('getWebhook', 'GET', `/v1/webhooks/${id}`);
    await call('getWebhook', 'GET', '/v1/webhooks/wh_nope');
    await call('updateWebhook', 'PATCH', `/v1/webhooks/${id}`, { body: { events: ['connected_account.expired'] } });
    await call('updateWebhook', 'PATCH', `/v1/webhooks/${id}`, { body: { events: [] } });
    await call('rotateWebhookSecret', 'POST', `/v1/webhooks/${id}/rotate-secret`);
    await call('rotateWebhookSecret', 'POST', '/v1/webhooks/wh_nope/rotate-secret');
    await call('listWebhookDeliveries', 'GET', `/v1/webhooks/${id}/deliveries`);
    await call('listWebhookDeliveries', 'GET', `/v1/webhooks/${id}/deliveries?limit=0`);
    await call('redeliverWebhook', 'POST', `/v1/webhooks/${id}/deliveries/whd_nope/redeliver`);
    // A delivery to redeliver: one event, written as a status change writes it, fanned out to this endpoint.
    await call('updateWebhook', 'PATCH', `/v1/webhooks/${id}`, { body: { events: ['connected_account.active'] } });
    const store = h.running.services.store;
    await store.addWebhookEvent({
      id: 'msg_conformance',
      type: 'connected_account.active',
      payload: '{"type":"connected_account.active","timestamp":"2026-01-01T00:00:00.000Z","data":{}}',
      createdAt: Date.now(),
    });
    await store.fanOutWebhookEvents(10, Date.now());
    const page = await call('listWebhookDeliveries', 'GET', `/v1/webhooks/${id}/deliveries`);
    const [delivery] = (JSON.parse(page.text) as { deliveries: Array<{ id: string }> }).deliveries;
    await call('redeliverWebhook', 'POST', `/v1/webhooks/${id}/deliveries/${delivery!.id}/redeliver`);
    await call('deleteWebhook', 'DELETE', `/v1/webhooks/${id}`);
    await call('deleteWebhook', 'DELETE', `/v1/webhooks/${id}`);
  });

  it('triggers', async () => {
    const gong = await new FakeGong({
      accessKey: 'QWERTY1234567890',
      accessKeySecret: 'gong-conformance-5e6f',
    }).start();
    try {
      await call('createConnection', 'POST', '/v1/connections', {
        body: { connection_name: 'gong', connector: 'callintel', auth_kind: 'api_key', api_base_url: gong.url },
      });
      await call('upsertConnectedAccount', 'PUT', '/v1/connected-accounts', {
        body: {
          connection_name: 'gong',
          identifier: 'acme',
          credentials: { access_key: 'QWERTY1234567890', access_key_secret: 'gong-conformance-5e6f' },
        },
      });
      await call('listTriggerTypes', 'GET', '/v1/trigger-types?connector=callintel');
      await call('listTriggerTypes', 'GET', '/v1/trigger-types', { auth: false });
      const created = await call('createTrigger', 'POST', '/v1/triggers', {
        body: {
          trigger: 'callintel_call_created',
          connection_name: 'gong',
          identifier: 'acme',
          interval_seconds: 3600,
        },
      });
      await call('createTrigger', 'POST', '/v1/triggers', {
        body: { trigger: 'callintel_call_created', connection_name: 'gong', identifier: 'nobody' },
      });
      const { id } = JSON.parse(created.text) as { id: string };
      await call('listTriggers', 'GET', '/v1/triggers?connection_name=gong&limit=1');
      await call('listTriggers', 'GET', '/v1/triggers?status=sleeping');
      await call('getTrigger', 'GET', `/v1/triggers/${id}`);
      await call('getTrigger', 'GET', '/v1/triggers/trg_nope');
      await call('pauseTrigger', 'POST', `/v1/triggers/${id}/pause`);
      await call('pauseTrigger', 'POST', '/v1/triggers/trg_nope/pause');
      await call('resumeTrigger', 'POST', `/v1/triggers/${id}/resume`);
      await call('resumeTrigger', 'POST', '/v1/triggers/trg_nope/resume');
      await call('deleteTrigger', 'DELETE', `/v1/triggers/${id}`);
      await call('deleteTrigger', 'DELETE', `/v1/triggers/${id}`);
    } finally {
      await gong.close();
    }
  });

  it('push-trigger ingress (HubSpot app webhooks against the fake)', async () => {
    const hubspot = await new FakeHubSpotApp('conformance-hubspot-secret').start();
    try {
      hubspot.portals.set('conformance-hs-token', 4_440_004);
      await h.client.createConnection({
        connection_name: 'hubspot-ingress',
        connector: 'crm',
        client_id: 'hs-app',
        client_secret: 'conformance-hubspot-secret',
        api_base_url: hubspot.url,
      });
      await h.client.upsertConnectedAccount({
        connectionName: 'hubspot-ingress',
        identifier: 'portal',
        credentials: { access_token: 'conformance-hs-token', expires_in: 3600 },
      });
      const t = await h.client.createTrigger({
        trigger: 'crm_contact_created',
        connection_name: 'hubspot-ingress',
        identifier: 'portal',
      });
      const path = new URL(t.ingress_url!).pathname;
      const signed = (url: string, body: string) => {
        const timestamp = String(Date.now());
        const signature = createHmac('sha256', 'conformance-hubspot-secret')
          .update(`POST${h.url}${url}${body}${timestamp}`)
          .digest('base64');
        return { 'x-hubspot-signature-v3': signature, 'x-hubspot-request-timestamp': timestamp };
      };
      const batch = JSON.stringify([FakeHubSpotApp.event(4_440_004, 'contact.creation', 77)]);
      await call('triggerIngress', 'POST', path, { raw: batch, auth: false, headers: signed(path, batch) });
      await call('triggerIngress', 'POST', path, { raw: batch, auth: false });
      await call('triggerIngress', 'POST', path, { raw: 'x'.repeat(300_000), auth: false });
      const own = `${path}/${t.id}`;
      await call('triggerIngressInstance', 'POST', own, { raw: batch, auth: false, headers: signed(own, batch) });
      await call('triggerIngressInstance', 'POST', `${path}/trg_nope`, { raw: batch, auth: false });
    } finally {
      await hubspot.close();
    }
  });

  it('API credentials', async () => {
    const created = await call('createApiCredential', 'POST', '/v1/api-credentials', { body: { name: 'conformance' } });
    await call('createApiCredential', 'POST', '/v1/api-credentials', { body: { name: 5 } });
    await call('listApiCredentials', 'GET', '/v1/api-credentials');
    await call('listApiCredentials', 'GET', '/v1/api-credentials', { auth: false });
    const { id } = JSON.parse(created.text) as { id: string };
    await call('revokeApiCredential', 'DELETE', `/v1/api-credentials/${id}`);
    await call('revokeApiCredential', 'DELETE', `/v1/api-credentials/${id}`);
  });

  it('the audit log', async () => {
    await call('listAuditEvents', 'GET', '/v1/audit-events?limit=2');
    await call('listAuditEvents', 'GET', '/v1/audit-events?from=yesterday');
    await call('exportAuditEvents', 'GET', '/v1/audit-events/export?action=credential.create');
    await call('exportAuditEvents', 'GET', '/v1/audit-events/export', { auth: false });
  });

  it('MCP servers, their URLs and the MCP endpoints', async () => {
    const created = await call('createMcpServer', 'POST', '/v1/mcp-servers', {
      body: { name: 'agent', connections: ['data'] },
    });
    const { id } = JSON.parse(created.text) as { id: string };
    await call('createMcpServer', 'POST', '/v1/mcp-servers', { body: { name: 'agent', connections: ['data'] } });
    await call('createMcpServer', 'POST', '/v1/mcp-servers', { body: { name: 'other', tools: ['nope'] } });
    await call('listMcpServers', 'GET', '/v1/mcp-servers');
    await call('listMcpServers', 'GET', '/v1/mcp-servers', { auth: false });
    await call('getMcpServer', 'GET', `/v1/mcp-servers/${id}`);
    await call('getMcpServer', 'GET', '/v1/mcp-servers/nope');
    await call('updateMcpServer', 'PATCH', `/v1/mcp-servers/${id}`, { body: { mode: 'search' } });
    await call('updateMcpServer', 'PATCH', `/v1/mcp-servers/${id}`, { body: { mode: 'all' } });
    const made = await call('createMcpUrl', 'POST', `/v1/mcp-servers/${id}/urls`, { body: { identifier: 'user-1' } });
    await call('createMcpUrl', 'POST', `/v1/mcp-servers/${id}/urls`, { body: { identifier: 'user-1', expires_in: 1 } });
    await call('listMcpUrls', 'GET', `/v1/mcp-servers/${id}/urls`);
    await call('listMcpUrls', 'GET', '/v1/mcp-servers/nope/urls');

    const { url, id: urlId } = JSON.parse(made.text) as { url: string; id: string };
    const path = new URL(url).pathname;
    const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const rpc = (method: string, params: object = {}) => ({ jsonrpc: '2.0', id: 1, method, params });
    const init = rpc('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'conformance', version: '1' },
    });
    await call('mcpUrlPost', 'POST', path, { auth: false, headers: mcpHeaders, body: init });
    await call('mcpUrlPost', 'POST', path, { auth: false, headers: mcpHeaders, body: rpc('tools/list') });
    await call('mcpUrlPost', 'POST', path, {
      auth: false,
      headers: mcpHeaders,
      body: { jsonrpc: '2.0', method: 'notifications/initialized' },
    });
    await call('mcpUrlPost', 'POST', path, { auth: false, headers: mcpHeaders, raw: '{' });
    await call('mcpUrlPost', 'POST', path, {
      auth: false,
      headers: { ...mcpHeaders, accept: 'text/html' },
      body: init,
    });
    await call('mcpUrlPost', 'POST', '/mcp/nope', { auth: false, headers: mcpHeaders, body: init });
    await call('mcpUrlGet', 'GET', path, { auth: false });
    await call('mcpUrlDelete', 'DELETE', path, { auth: false });

    const bearerPath = `/v1/mcp-servers/${id}/mcp`;
    const asUser = { ...mcpHeaders, 'x-identifier': 'user-1' };
    await call('mcpServerPost', 'POST', bearerPath, {
      headers: asUser,
      body: rpc('tools/call', { name: 'execute_tool', arguments: { name: 'prodata_scrape_profile', input: {} } }),
    });
    await call('mcpServerPost', 'POST', bearerPath, { headers: mcpHeaders, body: rpc('tools/list') });
    await call('mcpServerPost', 'POST', '/v1/mcp-servers/nope/mcp', { headers: asUser, body: rpc('tools/list') });
    await call('mcpServerGet', 'GET', bearerPath);
    await call('mcpServerGet', 'GET', bearerPath, { auth: false });
    await call('mcpServerDelete', 'DELETE', bearerPath);
    await call('mcpServerDelete', 'DELETE', '/v1/mcp-servers/nope/mcp');

    // The OAuth-protected endpoint and its authorization server (the flow itself: test/e2e/mcp-oauth.test.ts).
    const oauthPath = `/mcp/oauth/${id}`;
    await call('mcpOAuthPost', 'POST', oauthPath, { auth: false, headers: mcpHeaders, body: init });
    await call('mcpOAuthPost', 'POST', oauthPath, {
      auth: false,
      headers: { ...mcpHeaders, authorization: 'Bearer not-a-token-of-this-service' },
      body: init,
    });
    await call('mcpOAuthPost', 'POST', '/mcp/oauth/nope', { auth: false, headers: mcpHeaders, body: init });
    await call('mcpOAuthGet', 'GET', oauthPath, { auth: false });
    await call('mcpOAuthDelete', 'DELETE', oauthPath, { auth: false });
    await call('mcpProtectedResourceMetadata', 'GET', `/.well-known/oauth-protected-resource${oauthPath}`, {
      auth: false,
    });
    await call('mcpProtectedResourceMetadata', 'GET', '/.well-known/oauth-protected-resource/mcp/oauth/nope', {
      auth: false,
    });
    await call('mcpAuthorizationServerMetadata', 'GET', '/.well-known/oauth-authorization-server', { auth: false });
    const registered = await call('mcpOAuthRegister', 'POST', '/oauth/mcp/register', {
      auth: false,
      body: { redirect_uris: ['http://127.0.0.1:8765/callback'], client_name: 'conformance' },
    });
    await call('mcpOAuthRegister', 'POST', '/oauth/mcp/register', {
      auth: false,
      body: { redirect_uris: ['http://example.com/callback'] },
    });
    const clientId = (JSON.parse(registered.text) as { client_id: string }).client_id;
    const authorize = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: 'http://127.0.0.1:8765/callback',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      resource: `${h.url}${oauthPath}`,
    });
    // No identity provider is set here: the client gets server_error, with iss, at its redirect URI.
    const sent = await call('mcpOAuthAuthorize', 'GET', `/oauth/mcp/authorize?${authorize}`, { auth: false });
    expect(new URL(sent.headers.get('location')!).searchParams.get('error')).toBe('server_error');
    await call('mcpOAuthAuthorize', 'GET', '/oauth/mcp/authorize?client_id=mcpc_unknown', { auth: false });
    await call('mcpOAuthCallback', 'GET', '/oauth/mcp/callback?code=x&state=y', { auth: false });
    await call('mcpOAuthConsent', 'POST', '/oauth/mcp/consent', {
      auth: false,
      body: { csrf: 'x', decision: 'allow' },
    });
    await call('mcpOAuthToken', 'POST', '/oauth/mcp/token', {
      auth: false,
      body: { grant_type: 'authorization_code', client_id: clientId, code: 'x', code_verifier: 'y'.repeat(43) },
    });
    await call('mcpOAuthToken', 'POST', '/oauth/mcp/token', { auth: false, body: { grant_type: 'password' } });
    await call('mcpOAuthRevoke', 'POST', '/oauth/mcp/revoke', {
      auth: false,
      body: { token: 'x', client_id: clientId },
    });
    await call('mcpOAuthRevoke', 'POST', '/oauth/mcp/revoke', { auth: false, body: { token: 'x' } });

    await call('revokeMcpUrl', 'DELETE', `/v1/mcp-servers/${id}/urls/${urlId}`);
    await call('revokeMcpUrl', 'DELETE', `/v1/mcp-servers/${id}/urls/${urlId}`);
    await call('mcpUrlPost', 'POST', path, { auth: false, headers: mcpHeaders, body: init });
    await call('deleteMcpServer', 'DELETE', `/v1/mcp-servers/${id}`);
    await call('deleteMcpServer', 'DELETE', `/v1/mcp-servers/${id}`);
  });

  it('left no operation of the document without a success and an error', () => {
    // /health, / and /openapi.json have no error to provoke: they read nothing from the request and need no store.
    const noError = new Set(['health', 'index', 'openapi', 'mcpAuthorizationServerMetadata']);
    // GET and DELETE on a stateless MCP endpoint have no success to call: they answer 405, as the transport says.
    const noSuccess = new Set([
      'mcpUrlGet',
      'mcpUrlDelete',
      'mcpServerGet',
      'mcpServerDelete',
      'mcpOAuthGet',
      'mcpOAuthDelete',
    ]);
    // These succeed only after a sign-in at an OpenID provider: test/e2e/mcp-oauth.test.ts runs them against a real one.
    for (const id of ['mcpOAuthPost', 'mcpOAuthCallback', 'mcpOAuthConsent', 'mcpOAuthToken']) noSuccess.add(id);
    const missing = [...operations.keys()].filter((id) => {
      const t = seen.get(id);
      return !t || (t.success === 0 && !noSuccess.has(id)) || (t.error === 0 && !noError.has(id));
    });
    expect(missing.map((id) => `${id} ${JSON.stringify(seen.get(id))}`).join(', ')).toBe('');
  });
});

describe('the checker itself', () => {
  it('fails an answer that drifts from the document', () => {
    const drift: Answer = {
      status: 200,
      contentType: 'application/json; charset=utf-8',
      text: JSON.stringify({ status: 'ok', store: 'sqlite', tools: 127, extra: true }),
    };
    expect(() => check('health', drift)).toThrow(/extra|additional/);
    expect(() => check('health', { ...drift, status: 201 })).toThrow(/status not in the document/);
    expect(() => check('health', { ...drift, contentType: 'text/html' })).toThrow(/content type/);
  });
});
