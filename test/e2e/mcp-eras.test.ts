/**
 * Both MCP protocol eras end to end, with the official SDK's clients: the v1 client (`@modelcontextprotocol/sdk`,
 * 2025-11-25, the initialize handshake) and the v2 client (`@modelcontextprotocol/client`) in its legacy mode, in
 * `auto` mode (it probes with server/discover and settles on 2026-07-28) and pinned to 2026-07-28. Each lists the
 * tools (the same, in name order) and calls one against the fake helpdesk. Then the 2026-07-28 wire itself (resultType,
 * cache hints, the Mcp-Method check, an unknown revision answered with the supported ones and the request's id), and
 * the Host and Origin checks of an end user's URL (DNS rebinding), with MCP_ALLOWED_HOSTS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { loadConfig } from '../../runtime/config.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';

const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-api-token-eras-5d2e7a';
const MODERN = '2026-07-28';

let h: Harness;
let desk: FakeDesk;
let url: string;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  h = await startHarness({ env: { MCP_ALLOWED_HOSTS: 'mcp.internal.example' } });
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
  const token = await serviceToken(h.url);
  const api = async (path: string, body: unknown): Promise<Record<string, string>> => {
    const res = await fetch(`${h.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status, path).toBeLessThan(300);
    return (await res.json()) as Record<string, string>;
  };
  await api('/v1/connections', {
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await h.client.upsertConnectedAccount({
    connectionName: 'helpdesk',
    identifier: 'ada',
    credentials: { domain: DOMAIN, email: EMAIL, api_token: API_TOKEN },
  });
  const server = await api('/v1/mcp-servers', { name: 'support', connections: ['helpdesk'] });
  url = (await api(`/v1/mcp-servers/${server.id}/urls`, { identifier: 'ada' })).url!;
});

afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  await desk?.close();
  await h?.close();
});

type Mode = 'v1' | 'v2 legacy' | 'v2 auto' | 'v2 pinned';

/** The era the client ended up in (the protocol version it speaks), and a client facade for the test. */
async function connect(mode: Mode) {
  if (mode === 'v1') {
    const client = new ClientV1({ name: 'eras-v1', version: '1.0.0' });
    const transport = new TransportV1(new URL(url));
    await client.connect(transport);
    closers.push(() => client.close());
    return { client, version: transport.protocolVersion };
  }
  const versionNegotiation =
    mode === 'v2 auto' ? { mode: 'auto' as const } : mode === 'v2 pinned' ? { mode: { pin: MODERN } } : undefined;
  const client = new ClientV2({ name: 'eras-v2', version: '1.0.0' }, versionNegotiation ? { versionNegotiation } : {});
  const transport = new TransportV2(new URL(url));
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, version: transport.protocolVersion };
}

describe.each<[Mode, string]>([
  ['v1', '2025-11-25'],
  ['v2 legacy', '2025-11-25'],
  ['v2 auto', MODERN],
  ['v2 pinned', MODERN],
])('the SDK client %s', (mode, era) => {
  it(`speaks ${era}, lists the tools in name order and calls one`, async () => {
    const { client, version } = await connect(mode);
    if (era === MODERN) expect(version).toBe(MODERN);
    else expect(version ?? '2025-11-25').toBe('2025-11-25');
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names.length).toBeGreaterThan(10);
    expect(names).toEqual([...names].sort());
    expect(names).toContain('helpdesk_tickets_list');
    const listed = tools.find((t) => t.name === 'helpdesk_tickets_list')!;
    expect(listed.title).toBeTruthy();
    expect(listed.outputSchema).toBeDefined();

    const tickets = await client.callTool({ name: 'helpdesk_tickets_list', arguments: { per_page: 2 } });
    expect(tickets.isError).toBeFalsy();
    const content = tickets.content as { type: string; text: string }[];
    expect((JSON.parse(content[0]!.text) as { tickets: unknown[] }).tickets).toHaveLength(2);
    expect(tickets.structuredContent).toEqual(JSON.parse(content[0]!.text));

    const refused = await client.callTool({ name: 'helpdesk_ticket_get', arguments: { ticket_id: 987654 } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toBeUndefined();
  });
});

const meta = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

async function post(body: unknown, headers: Record<string, string> = {}, to = url) {
  const res = await fetch(to, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('the 2026-07-28 wire', () => {
  it('answers server/discover and tools/list with resultType and cache hints (private: per end user)', async () => {
    const discover = await post(
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } },
      { 'mcp-method': 'server/discover' },
    );
    expect(discover.status).toBe(200);
    expect(discover.body.result.supportedVersions).toContain(MODERN);
    expect(discover.body.result.capabilities.tools).toEqual({ listChanged: false });
    expect(discover.body.result.resultType).toBe('complete');

    const list = await post(
      { jsonrpc: '2.0', id: 'l-1', method: 'tools/list', params: { _meta: meta } },
      { 'mcp-method': 'tools/list' },
    );
    expect(list.body.id).toBe('l-1');
    expect(list.body.result).toMatchObject({ resultType: 'complete', ttlMs: 60_000, cacheScope: 'private' });
  });

  it('refuses a Mcp-Method header that disagrees with the body, keeping the id', async () => {
    const r = await post(
      { jsonrpc: '2.0', id: 42, method: 'tools/list', params: { _meta: meta } },
      { 'mcp-method': 'tools/call' },
    );
    expect(r.status).toBe(400);
    expect(r.body.id).toBe(42);
    expect(r.body.error.code).toBeLessThan(0);
  });

  it('answers an unknown revision with UnsupportedProtocolVersionError naming the supported ones', async () => {
    const r = await post(
      {
        jsonrpc: '2.0',
        id: 'v-9',
        method: 'tools/list',
        params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      },
      { 'mcp-method': 'tools/list', 'mcp-protocol-version': '2099-01-01' },
    );
    expect(r.status).toBe(400);
    expect(r.body.id).toBe('v-9');
    expect(r.body.error.data.supported).toContain(MODERN);
    expect(r.body.error.data.requested).toBe('2099-01-01');
  });
});

describe('DNS rebinding: Host and Origin of an end user URL', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  };
  const legacy = { 'mcp-protocol-version': '2025-11-25' };

  it('refuses a foreign Host or Origin with 403, and takes the public URL’s and MCP_ALLOWED_HOSTS', async () => {
    const { request } = await import('undici');
    const send = async (headers: Record<string, string>) => {
      const res = await request(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...legacy,
          ...headers,
        },
        body: JSON.stringify(initialize),
      });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, any> };
    };
    const evil = await send({ host: 'evil.example' });
    expect(evil.status).toBe(403);
    expect(evil.body.error.message).toMatch(/Forbidden/);
    expect((await send({ origin: 'https://evil.example' })).status).toBe(403);
    expect((await send({ origin: 'null' })).status).toBe(403);
    expect((await send({})).status).toBe(200);
    expect((await send({ origin: new URL(h.config.publicUrl).origin })).status).toBe(200);
    expect((await send({ host: 'mcp.internal.example' })).status).toBe(200);
    expect((await send({ host: 'mcp.internal.example', origin: 'https://mcp.internal.example' })).status).toBe(200);
  });

  it('refuses a bad MCP_ALLOWED_HOSTS at start, naming it', () => {
    expect(() => loadConfig({ MCP_ALLOWED_HOSTS: 'https://mcp.example.com' })).toThrow(/MCP_ALLOWED_HOSTS.*host names/);
    expect(() => loadConfig({ MCP_ALLOWED_HOSTS: 'mcp.example.com:8443' })).toThrow(/MCP_ALLOWED_HOSTS/);
    expect(loadConfig({ MCP_ALLOWED_HOSTS: ' MCP.example.com , [::1]' }).mcpAllowedHosts).toEqual([
      'mcp.example.com',
      '[::1]',
    ]);
  });
});
