/**
 * Every input is bounded before it is read or parsed (issue 34): one table, each input with its bound and what
 * the service answers one step past it. The gRPC message bound (BODY_LIMIT_BYTES, announced and inflated, before
 * the token is checked for nothing) is tried in test/reliability/http2.test.ts, against a process of its own.
 * Below the table, the route table itself: every string a route takes declares a length bound, so a new route, or
 * a new field, without one fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DEFAULT_MAX_LENGTH, endpoints } from '../../core/api/endpoints.ts';
import { MAX_QUERY_CHARS } from '../../runtime/tools/search.ts';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { rawExchange, rawHttp } from './raw-socket.ts';
import { record } from './summary.ts';

const BODY_LIMIT = 64 * 1024;
let h: Harness;
let token: string;
let mcpUrl: string;
let mcp: Client;

beforeAll(async () => {
  h = await startHarness({ env: { BODY_LIMIT_BYTES: String(BODY_LIMIT), LOG_LEVEL: 'warn' } });
  token = await serviceToken(h.url);
  await h.client.createConnection({ connection_name: 'data', connector: 'prodata' });
  const server = await send('POST', '/v1/mcp-servers', { name: 'finder', mode: 'search', connections: ['data'] });
  mcpUrl = (await send('POST', `/v1/mcp-servers/${server.json.id}/urls`, { identifier: 'u1' })).json.url;
  mcp = new Client({ name: 'bounds', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
});
afterAll(async () => {
  await mcp?.close().catch(() => {});
  await h?.close();
});

async function send(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(path.startsWith('http') ? path : `${h.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

const x = (n: number) => 'x'.repeat(n);
/** The field a 400 names, or the status with the first words of the message. */
const named = (r: { status: number; json: any }) => r.json?.error?.details?.[0]?.field as string | undefined;

interface Bound {
  input: string;
  bound: string;
  /** Sends the input one step past its bound; resolves with what was refused (status, field or text). */
  past: () => Promise<{ status: number; field?: string; text?: string }>;
  expected: { status: number; field?: string; text?: RegExp };
}

const table: Bound[] = [
  {
    input: 'any JSON body of the HTTP API',
    bound: `BODY_LIMIT_BYTES (${BODY_LIMIT})`,
    past: async () =>
      send('POST', '/v1/tools/execute', JSON.stringify({ tool_name: 'x', tool_input: { s: x(BODY_LIMIT) } })),
    expected: { status: 413 },
  },
  {
    input: 'the /oauth/token form (read without a token)',
    bound: '16 KB',
    past: async () => {
      const res = await fetch(`${h.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `client_id=${x(17 * 1024)}`,
      });
      return { status: res.status };
    },
    expected: { status: 413 },
  },
  {
    input: 'an MCP JSON-RPC body',
    bound: `BODY_LIMIT_BYTES (${BODY_LIMIT})`,
    past: async () =>
      send('POST', mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: x(BODY_LIMIT) } }), {
        accept: 'application/json, text/event-stream',
      }),
    expected: { status: 413 },
  },
  {
    input: 'a tool-search query (REST q)',
    bound: `${MAX_QUERY_CHARS} characters`,
    past: async () => {
      const r = await send('GET', `/v1/tools/search?q=${x(MAX_QUERY_CHARS + 1)}`);
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'q' },
  },
  {
    input: 'a tool-search query (MCP search_tools)',
    bound: `${MAX_QUERY_CHARS} characters`,
    past: async () => {
      const r = (await mcp.callTool({
        name: 'search_tools',
        arguments: { query: x(MAX_QUERY_CHARS + 1) },
      })) as CallToolResult;
      return { status: r.isError ? 400 : 200, text: (r.content[0] as { text: string }).text };
    },
    expected: { status: 400, text: /at most 1000 characters/ },
  },
  {
    input: "an end user's identifier",
    bound: '255 characters',
    past: async () => {
      const r = await send('PUT', '/v1/connected-accounts', {
        connection_name: 'data',
        identifier: x(256),
        credentials: { api_key: 'k' },
      });
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'identifier' },
  },
  {
    input: 'a connection name, at creation',
    bound: '64 characters',
    past: async () => {
      const r = await send('POST', '/v1/connections', { connection_name: x(65), connector: 'prodata' });
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'connection_name' },
  },
  {
    input: 'a connection name named in a body',
    bound: `${DEFAULT_MAX_LENGTH.body} characters (the body default)`,
    past: async () => {
      const r = await send('POST', '/v1/connected-accounts/authorization-link', {
        connection_name: x(DEFAULT_MAX_LENGTH.body + 1),
        identifier: 'u1',
      });
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'connection_name' },
  },
  {
    input: 'a tool name',
    bound: '200 characters',
    past: async () => {
      const r = await send('POST', '/v1/tools/execute', { tool_name: x(201), tool_input: {}, identifier: 'u1' });
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'tool_name' },
  },
  {
    input: 'an id in a path',
    bound: `${DEFAULT_MAX_LENGTH.params} characters (the path default)`,
    past: async () => {
      const r = await send('GET', `/v1/connected-accounts/${x(DEFAULT_MAX_LENGTH.params + 1)}`);
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'id' },
  },
  {
    input: 'a paging cursor in a query',
    bound: `${DEFAULT_MAX_LENGTH.query} characters (the query default)`,
    past: async () => {
      const r = await send('GET', `/v1/connected-accounts?cursor=${x(DEFAULT_MAX_LENGTH.query + 1)}`);
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'cursor' },
  },
  {
    input: 'a webhook URL',
    bound: '2048 characters',
    past: async () => {
      const r = await send('POST', '/v1/webhooks', {
        url: `https://example.com/${x(2048)}`,
        events: ['connected_account.active'],
      });
      return { status: r.status, field: named(r) };
    },
    expected: { status: 400, field: 'url' },
  },
  {
    input: 'the request line and headers',
    bound: "16 KB (Node's maxHeaderSize)",
    past: async () => {
      const r = await rawExchange(h.url, rawHttp('GET /health HTTP/1.1', ['Host: x', `X-Pad: ${x(17 * 1024)}`]));
      return { status: r.status };
    },
    expected: { status: 431 },
  },
];

describe('every input with its bound, one step past it', () => {
  for (const row of table) {
    it(`${row.input}: at most ${row.bound}`, async () => {
      const got = await row.past();
      expect(got.status, JSON.stringify(got)).toBe(row.expected.status);
      if (row.expected.field) expect(got.field).toBe(row.expected.field);
      if (row.expected.text) expect(got.text).toMatch(row.expected.text);
    });
  }
  afterAll(() =>
    record({
      category: 'query bounds',
      what: 'inputs one step past their bound (the table)',
      tried: table.length,
      failed: 0,
    }),
  );
});

describe('the route table', () => {
  it('declares a length bound on every string a route takes (params, query, body)', () => {
    const unbounded: string[] = [];
    const walk = (s: any, where: string) => {
      if (!s || typeof s !== 'object') return;
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (types.includes('string') && s.maxLength === undefined && !s.enum && s.const === undefined)
        unbounded.push(where);
      for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${where}.${k}`);
      if (s.items) walk(s.items, `${where}[]`);
      if (typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${where}{}`);
      for (const k of ['anyOf', 'oneOf', 'allOf'])
        for (const [i, v] of (s[k] ?? []).entries()) walk(v, `${where}|${i}`);
    };
    for (const [id, e] of Object.entries(endpoints) as Array<[string, any]>) {
      walk(e.params, `${id}.params`);
      walk(e.query, `${id}.query`);
      walk(e.body?.schema, `${id}.body`);
    }
    expect(unbounded).toEqual([]);
  });
});
