/**
 * MCP servers end to end, driven by the official MCP SDK client (`Client` + `StreamableHTTPClientTransport`) as
 * Claude Desktop, Cursor or the MCP Inspector would: a server configuration for the helpdesk and mail tools, a URL
 * for an end user, tools/list with annotations, tool calls against the fake desk and the fake Microsoft Graph, an end
 * user with no account (a tool error with an authorization link that works), revoked and expired URLs, a search-mode
 * server, and the bearer-token endpoint for server-side agents.
 */
import { agentDescription } from '../../core/agent-description.ts';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { tools } from '../../generated/registry.ts';
import {
  authorize,
  followAuthorizationLink,
  oauthConnection,
  startHarness,
  TEST_CLIENT_ID,
  TEST_CLIENT_SECRET,
  type Harness,
} from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { record } from '../reliability/summary.ts';
import { startFakeGraph, type FakeGraph } from '../fakes/graph.ts';

let h: Harness;
let desk: FakeDesk;
let graph: FakeGraph;
let token: string;
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-api-token-mcp-7f3a9c1e5b';
const clients: Client[] = [];

async function api<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

const textOf = (r: unknown) => ((r as CallToolResult).content[0] as { type: 'text'; text: string }).text;

beforeAll(async () => {
  h = await startHarness();
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
  graph = await startFakeGraph({ validateToken: (t) => !!h.oauth.validate(t) });
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await h.client.upsertConnectedAccount({
    connectionName: 'helpdesk',
    identifier: 'ada',
    credentials: { domain: DOMAIN, email: EMAIL, api_token: API_TOKEN },
  });
  await oauthConnection(h, 'mail', 'mail', graph.url);
  await authorize(h, 'mail', 'ada');
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await graph?.close();
  await desk?.close();
  await h?.close();
});

const helpdeskAndMail = [...tools.values()].filter((t) => t.connector === 'helpdesk' || t.connector === 'mail');

describe('an MCP server for the helpdesk and mail tools', () => {
  let serverId: string;
  let adaUrl: string;
  let ada: Client;

  it('is created from connections, refusing unknown names with suggestions', async () => {
    const bad = await api('POST', '/v1/mcp-servers', {
      name: 'support',
      tools: ['helpdesk_ticket_gte'],
      connections: ['mial'],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([
      { field: 'tools[0]', message: 'is not a tool (did you mean helpdesk_ticket_get?)' },
      { field: 'connections[0]', message: 'is not a connection (did you mean mail?)' },
    ]);
    const badMode = await api('POST', '/v1/mcp-servers', { name: 'support', mode: 'all', connections: ['mail'] });
    expect(badMode.status).toBe(400);
    expect(JSON.stringify(badMode.body.error.details)).toContain('mode');

    const created = await api('POST', '/v1/mcp-servers', { name: 'support', connections: ['helpdesk', 'mail'] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'support',
      mode: 'tools',
      tools: [],
      connections: ['helpdesk', 'mail'],
      tool_count: helpdeskAndMail.length,
      active_urls: 0,
    });
    serverId = created.body.id;
    expect(created.body.mcp_endpoint).toBe(`${h.url}/v1/mcp-servers/${serverId}/mcp`);
    expect((await api('POST', '/v1/mcp-servers', { name: 'support', connections: ['mail'] })).status).toBe(409);
    expect((await api('GET', `/v1/mcp-servers/${serverId}`)).body.name).toBe('support');
    expect((await api('GET', '/v1/mcp-servers')).body.mcp_servers.map((s: { id: string }) => s.id)).toContain(serverId);
  });

  it('makes a URL for an end user, shown once and listed without its token', async () => {
    const made = await api('POST', `/v1/mcp-servers/${serverId}/urls`, { identifier: 'ada' });
    expect(made.status).toBe(201);
    adaUrl = made.body.url;
    expect(adaUrl).toMatch(new RegExp(`^${h.url}/mcp/[A-Za-z0-9_-]{43}$`));
    expect(Date.parse(made.body.expires_at) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const listed = await api('GET', `/v1/mcp-servers/${serverId}/urls`);
    expect(listed.body.urls).toEqual([
      expect.objectContaining({ id: made.body.id, identifier: 'ada', status: 'active', revoked_at: null }),
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(adaUrl.split('/').pop());
    expect((await api('GET', `/v1/mcp-servers/${serverId}`)).body.active_urls).toBe(1);
  });

  it('lists every tool with its schema, title, description and the annotations its YAML declares', async () => {
    ada = await connect(adaUrl);
    expect(ada.getServerVersion()?.name).toBe('agent-connector-service');
    const { tools: listed } = await ada.listTools();
    expect(listed.map((t) => t.name).sort()).toEqual(helpdeskAndMail.map((t) => t.name).sort());
    for (const t of listed) {
      const def = tools.get(t.name)!;
      expect(t.title).toBe(def.title);
      expect(t.description).toBe(agentDescription(def));
      expect(t.inputSchema.type).toBe('object');
      expect(t.inputSchema.properties).toEqual(def.inputSchema.properties);
      if (def.annotations) expect(t.annotations).toEqual({ title: def.title, ...def.annotations });
      else expect(t.annotations).toBeUndefined();
      expect(t.outputSchema).toEqual(def.outputSchema);
      expect(t.icons).toEqual([
        { src: `${h.config.publicUrl}/icons/${def.connector}.svg`, mimeType: 'image/svg+xml', sizes: ['any'] },
      ]);
    }
    // The icon is the service's to serve, as an image that can run nothing.
    const icon = await fetch(listed[0]!.icons![0]!.src);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    expect(icon.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await icon.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect((await fetch(`${h.config.publicUrl}/icons/nope.svg`)).status).toBe(404);
  });

  it('calls a helpdesk tool and a mail tool for the end user, against the fakes', async () => {
    const tickets = await ada.callTool({ name: 'helpdesk_tickets_list', arguments: { per_page: 2 } });
    expect(tickets.isError).toBeFalsy();
    // structuredContent (checked by the SDK client against the tool's outputSchema) and the same JSON as text.
    expect(JSON.parse(textOf(tickets)).tickets).toHaveLength(2);
    expect(tickets.structuredContent).toEqual(JSON.parse(textOf(tickets)));

    const before = graph.state.outbox.length;
    const sent = await ada.callTool({
      name: 'mail_send_message',
      arguments: { toRecipients: ['grace@example.com'], subject: 'Sent over MCP', body: 'Hello' },
    });
    expect(sent.isError).toBeFalsy();
    expect(sent.structuredContent).toEqual({}); // Graph answers 202 with no content
    expect(graph.state.outbox.slice(before)).toHaveLength(1);
    expect(JSON.stringify(graph.state.sentItems)).toContain('Sent over MCP');
  });

  it('answers invalid input and provider refusals as tool errors naming the field and the provider status', async () => {
    const invalid = await ada.callTool({ name: 'helpdesk_ticket_get', arguments: { ticket_id: 'abc' } });
    expect(invalid.isError).toBe(true);
    expect(invalid.structuredContent).toBeUndefined();
    expect(textOf(invalid)).toMatch(/^Invalid input for helpdesk_ticket_get: ticket_id /);

    const refused = await ada.callTool({ name: 'helpdesk_ticket_get', arguments: { ticket_id: 987654 } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toBeUndefined();
    expect(textOf(refused)).toMatch(/^The provider answered HTTP 404: /);

    await expect(ada.callTool({ name: 'helpdesk_ticket_gte', arguments: {} })).rejects.toThrow(
      /Unknown tool: helpdesk_ticket_gte \(did you mean helpdesk_ticket_get\?\)/,
    );
  });

  it('gives an end user with no account a tool error with a fresh authorization link that connects it', async () => {
    const made = await api('POST', `/v1/mcp-servers/${serverId}/urls`, { identifier: 'bob' });
    const bob = await connect(made.body.url);
    const missing = await bob.callTool({ name: 'mail_list_messages', arguments: {} });
    expect(missing.isError).toBe(true);
    const link = /(https?:\/\/\S+\/sso\/v1\/oauth\/\S+)/.exec(textOf(missing))?.[1];
    expect(textOf(missing)).toContain('has not connected');
    expect(link).toBeDefined();
    // The user opens the link; the same call then works.
    expect((await followAuthorizationLink(link!, 'bob')).status).toBe(200);
    const after = await bob.callTool({ name: 'mail_list_messages', arguments: {} });
    expect(after.isError).toBeFalsy();

    // An API-key connector has no link to open: the error says what to store.
    const desk = await bob.callTool({ name: 'helpdesk_tickets_list', arguments: {} });
    expect(desk.isError).toBe(true);
    expect(textOf(desk)).toContain('PUT /v1/connected-accounts');
  });

  it("hands out links that follow the server's user_verify_url, so a link in a transcript connects nobody else (issue 34, finding 6)", async () => {
    const verifyUrl = `${h.url}/verify-user`;
    const set = await api('PATCH', `/v1/mcp-servers/${serverId}`, { user_verify_url: verifyUrl });
    expect(set.status).toBe(200);
    expect(set.body.user_verify_url).toBe(verifyUrl);
    const refused = await api('PATCH', `/v1/mcp-servers/${serverId}`, { user_verify_url: 'https://evil.example/v' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0].field).toBe('user_verify_url');

    const made = await api('POST', `/v1/mcp-servers/${serverId}/urls`, { identifier: 'carol' });
    const carol = await connect(made.body.url);
    const missing = await carol.callTool({ name: 'mail_list_messages', arguments: {} });
    const link = /(https?:\/\/\S+\/sso\/v1\/oauth\/\S+)/.exec(textOf(missing))![1]!;
    // Whoever opens it is sent to the application's verification, and the account is not usable until it confirms.
    const done = await followAuthorizationLink(link, 'someone-at-provider');
    expect(done.status).toBe(302);
    const to = new URL(done.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(verifyUrl);
    expect((await carol.callTool({ name: 'mail_list_messages', arguments: {} })).isError).toBe(true);
    await h.client.verifyConnectedAccountUser({
      authRequestId: to.searchParams.get('auth_request_id')!,
      identifier: 'carol',
    });
    expect((await carol.callTool({ name: 'mail_list_messages', arguments: {} })).isError).toBeFalsy();

    const cleared = await api('PATCH', `/v1/mcp-servers/${serverId}`, { user_verify_url: '' });
    expect(cleared.body.user_verify_url).toBeNull();
    record({
      category: 'MCP links verified',
      what: "an MCP tool error's authorization link opened by someone else, with the server's user_verify_url",
      tried: 2,
      failed: 0,
    });
  });

  it('refuses a revoked URL and an expired one, and answers GET and DELETE with 405', async () => {
    const made = await api('POST', `/v1/mcp-servers/${serverId}/urls`, { identifier: 'ada' });
    const revoke = await api('DELETE', `/v1/mcp-servers/${serverId}/urls/${made.body.id}`);
    expect(revoke).toEqual({ status: 200, body: { revoked: true, id: made.body.id } });
    expect((await api('DELETE', `/v1/mcp-servers/${serverId}/urls/${made.body.id}`)).status).toBe(404);
    await expect(connect(made.body.url)).rejects.toThrow();
    const raw = await fetch(made.body.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(raw.status).toBe(401);
    expect(((await raw.json()) as { error: { message: string } }).error.message).toMatch(/revoked/);

    const old = await api('POST', `/v1/mcp-servers/${serverId}/urls`, { identifier: 'ada', expires_in: 60 });
    const db = new Database(join(h.config.dataDir, 'acs.sqlite'));
    db.prepare('UPDATE mcp_urls SET expires_at = ? WHERE id = ?').run(Date.now() - 1000, old.body.id);
    db.close();
    await expect(connect(old.body.url)).rejects.toThrow();
    const expired = await fetch(old.body.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
    const statuses = (await api('GET', `/v1/mcp-servers/${serverId}/urls`)).body.urls.map(
      (u: { id: string; status: string }) => [u.id, u.status],
    );
    expect(statuses).toContainEqual([made.body.id, 'revoked']);
    expect(statuses).toContainEqual([old.body.id, 'expired']);

    const unknown = await fetch(`${h.url}/mcp/${'x'.repeat(43)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(unknown.status).toBe(404);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(adaUrl, { method, headers: { accept: 'text/event-stream' } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
  });

  it('serves server-side agents with the bearer token and the identifier in a header', async () => {
    const endpoint = `${h.url}/v1/mcp-servers/${serverId}/mcp`;
    const agent = await connect(endpoint, { authorization: `Bearer ${token}`, 'x-identifier': 'ada' });
    const tickets = await agent.callTool({ name: 'helpdesk_tickets_list', arguments: { per_page: 1 } });
    expect(JSON.parse(textOf(tickets)).tickets).toHaveLength(1);
    await expect(connect(endpoint, { authorization: `Bearer ${token}` })).rejects.toThrow();
    await expect(connect(endpoint, { 'x-identifier': 'ada' })).rejects.toThrow();
  });

  it('updates the configuration (the next request sees it) and deletes it with its URLs', async () => {
    const patched = await api('PATCH', `/v1/mcp-servers/${serverId}`, {
      tools: ['helpdesk_ticket_get'],
      connections: [],
    });
    expect(patched.body).toMatchObject({ tools: ['helpdesk_ticket_get'], connections: [], tool_count: 1 });
    expect((await ada.listTools()).tools.map((t) => t.name)).toEqual(['helpdesk_ticket_get']);
    const empty = await api('PATCH', `/v1/mcp-servers/${serverId}`, { tools: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.error.details[0].field).toBe('tools');

    expect((await api('DELETE', `/v1/mcp-servers/${serverId}`)).body).toEqual({ deleted: true, id: serverId });
    expect((await api('GET', `/v1/mcp-servers/${serverId}`)).status).toBe(404);
    const gone = await fetch(adaUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(gone.status).toBe(404);
  });
});

describe('a search-mode MCP server', () => {
  it('exposes search_tools and execute_tool, restricted to its tools', async () => {
    const created = await api('POST', '/v1/mcp-servers', {
      name: 'finder',
      mode: 'search',
      connections: ['helpdesk', 'mail'],
    });
    expect(created.status).toBe(201);
    const made = await api('POST', `/v1/mcp-servers/${created.body.id}/urls`, { identifier: 'ada' });
    const agent = await connect(made.body.url);
    const { tools: listed } = await agent.listTools();
    expect(listed.map((t) => t.name)).toEqual(['search_tools', 'execute_tool']);

    const found = await agent.callTool({
      name: 'search_tools',
      arguments: { query: "reply to the customer's ticket saying we fixed it", limit: 5 },
    });
    const hits = JSON.parse(textOf(found)).tools as Array<{ name: string; connector: string; inputSchema: object }>;
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.length).toBeLessThanOrEqual(5);
    expect(hits.map((t) => t.name)).toContain('helpdesk_ticket_reply');
    for (const t of hits) {
      expect(['helpdesk', 'mail']).toContain(t.connector);
      expect(t.inputSchema).toMatchObject({ type: 'object' });
    }

    const listing = JSON.parse(
      textOf(await agent.callTool({ name: 'search_tools', arguments: { query: 'list support tickets' } })),
    ).tools as Array<{ name: string }>;
    expect(listing.map((t) => t.name)).toContain('helpdesk_tickets_list');
    const run = await agent.callTool({
      name: 'execute_tool',
      arguments: { name: 'helpdesk_tickets_list', input: { per_page: 2 } },
    });
    expect(run.isError).toBeFalsy();
    expect(JSON.parse(textOf(run)).tickets).toHaveLength(2);

    const wrong = await agent.callTool({
      name: 'execute_tool',
      arguments: { name: 'helpdesk_tickets_lst', input: {} },
    });
    expect(wrong.isError).toBe(true);
    expect(textOf(wrong)).toContain('did you mean helpdesk_tickets_list?');
    const badInput = await agent.callTool({
      name: 'execute_tool',
      arguments: { name: 'helpdesk_tickets_list', input: { per_page: 'many' } },
    });
    expect(badInput.isError).toBe(true);
    expect(textOf(badInput)).toMatch(/per_page/);
  });
});
