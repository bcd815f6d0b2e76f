/**
 * Upstream faults, injected by a misbehaving provider (test/fakes/faulty-upstream.ts) behind a real
 * support-desk connection (REST tool calls and the proxy) and a meeting-notes connection (MCP tool calls,
 * JSON-RPC over HTTP). For every fault the test checks what
 * the client sees (provider errors kept apart from the service's own), how many requests the provider
 * received (retries only where safe: never a duplicated POST), and that /health and a normal tool call
 * on another connection succeed while the fault is in progress.
 *
 * Timeouts: the service runs with UPSTREAM_TIMEOUT_MAX_MS=1000, the operator's cap on every connector's
 * timeouts, so a hanging provider costs a second instead of the connector's 30 s.
 * Sizes: a tool call is offered 2 GB (it refuses after TOOL_RESPONSE_LIMIT_BYTES, so this is cheap);
 * the proxy streams 256 MB through by default and the full 2 GB with RELIABILITY_SOAK=1.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDesk } from '../fakes/desk.ts';
import { FaultyUpstream, type Fault } from '../fakes/faulty-upstream.ts';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { ConnectorServiceError } from '../../packages/client/src/index.ts';
import { record } from './summary.ts';
import { send } from '../../runtime/upstream/http.ts';

const SOAK = process.env.RELIABILITY_SOAK === '1';
const MB = 1024 * 1024;
const GB = 1024 * MB;
const PROXY_BYTES = SOAK ? 2 * GB : 256 * MB;
const TOOL_OFFER_BYTES = 2 * GB;
const TIMEOUT_CAP_MS = 1000;

const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-fault-token-5c2e8a71d9';
const MCP_TOKEN = 'mcp-access-token-3f9a0c';
const BASIC = `Basic ${Buffer.from(`${EMAIL}/token:${API_TOKEN}`).toString('base64')}`;

let h: Harness;
let desk: FakeDesk;
let up: FaultyUpstream;
let other: FaultyUpstream;
let token: string;

const tally = {
  tool: { tried: 0, failed: 0 },
  mcp: { tried: 0, failed: 0 },
  proxy: { tried: 0, failed: 0 },
  serving: { tried: 0, failed: 0 },
};
const details = { tool: [] as string[], mcp: [] as string[], proxy: [] as string[] };

/** An `it` whose outcome is counted in the reliability summary. */
function scenario(group: 'tool' | 'mcp' | 'proxy', name: string, fn: () => Promise<void>, timeout?: number) {
  it(
    name,
    async ({ onTestFailed }) => {
      tally[group].tried++;
      onTestFailed(() => void tally[group].failed++);
      up.reset();
      other.reset();
      await fn();
    },
    timeout,
  );
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function exec(toolName: string, toolInput: Record<string, unknown>, connection = 'faulty'): Promise<Answer> {
  const res = await fetch(`${h.url}/v1/tools/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      tool_name: toolName,
      connection_name: connection,
      identifier: 'user-1',
      tool_input: toolInput,
    }),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

const getTicket = () => exec('helpdesk_ticket_get', { ticket_id: 42 });
const createTicket = () => exec('helpdesk_ticket_create', { comment_body: 'Printer on fire', subject: 'Help' });

interface ProxyAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: number;
  body: string;
  /** The response ended cleanly (all of it arrived); false when the connection broke mid-body. */
  complete: boolean;
}

/**
 * A raw HTTP request to `/proxy<path>` on the faulty connection, on a connection of its own, its answer handed to
 * `onResponse`. Not yet ended: the caller sends the body, if any, and ends it.
 */
function proxyRequest(
  method: string,
  path: string,
  onResponse?: (res: http.IncomingMessage) => void,
  headers: Record<string, string> = {},
): http.ClientRequest {
  const u = new URL(h.url);
  return http.request(
    {
      host: u.hostname,
      port: u.port,
      method,
      path: `/proxy${path}`,
      headers: { authorization: `Bearer ${token}`, connection_name: 'faulty', identifier: 'user-1', ...headers },
      agent: false,
    },
    onResponse,
  );
}

/**
 * Sends `GET /proxy/v2/tickets/1.json` on the faulty connection and, once the request has reached the provider
 * (its count of requests in flight rose above `inFlightBefore`), closes the client's connection without waiting
 * for an answer.
 */
async function proxyThenLeave(inFlightBefore: number): Promise<void> {
  const req = proxyRequest('GET', '/v2/tickets/1.json');
  req.on('error', () => {});
  req.end();
  await until(() => up.inFlight > inFlightBefore, 'the request to reach the provider');
  req.destroy();
}

/** A proxy call over raw HTTP, counting the body's bytes (kept as text only when small). */
function proxy(method: string, path: string): Promise<ProxyAnswer> {
  return new Promise((resolve, reject) => {
    const req = proxyRequest(
      method,
      path,
      (res) => {
        let bytes = 0;
        const kept: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (bytes <= 64 * 1024) kept.push(c);
        });
        res.on('error', () => {});
        res.on('close', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            bytes,
            body: Buffer.concat(kept).toString('utf8'),
            complete: res.complete,
          }),
        );
      },
      method === 'POST' ? { 'content-type': 'application/json' } : {},
    );
    req.on('error', reject);
    req.end(method === 'POST' ? '{"ticket":{"subject":"x"}}' : undefined);
  });
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

/**
 * Once the provider has received `n` requests (the fault is under way), /health and a normal tool call
 * on the healthy desk must succeed.
 */
async function stillServing(n = 1): Promise<void> {
  await until(() => up.received.length + other.received.length >= n, `the provider to receive ${n} request(s)`);
  tally.serving.tried++;
  try {
    const [health, normal] = await Promise.all([
      fetch(`${h.url}/health`),
      exec('helpdesk_groups_list', {}, 'helpdesk'),
    ]);
    expect(health.status).toBe(200);
    expect(normal.status).toBe(200);
    expect(Array.isArray(normal.body.data.groups)).toBe(true);
  } catch (e) {
    tally.serving.failed++;
    throw e;
  }
}

/** Runs a call against a fault held back until the service is shown to keep serving, then releases it. */
async function held<T>(call: () => Promise<T>): Promise<T> {
  const release = up.hold();
  let settled = false;
  const pending = call().finally(() => (settled = true));
  try {
    await stillServing();
    expect(settled).toBe(false);
  } finally {
    release();
  }
  return pending;
}

function expectProviderError(a: Answer, status: number, body?: unknown) {
  expect(a.status).toBe(status);
  expect(a.headers.get('x-error-source')).toBe('provider');
  expect(a.body.error.code).toBe('provider_error');
  expect(a.body.error.provider_status).toBe(status);
  if (body !== undefined) expect(a.body.error.provider_body).toEqual(body);
}

function expectServiceError(a: Answer, status: number, code: string) {
  expect(a.body.error?.code).toBe(code);
  expect(a.status).toBe(status);
  expect(a.headers.get('x-error-source')).toBe('service');
  expect(a.body.error.provider_status).toBeUndefined();
}

/** Peak RSS growth (bytes) while `work` runs. */
async function rssGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, growth: peak - base };
  } finally {
    clearInterval(timer);
  }
}

const status = (
  s: number,
  headers?: Record<string, string>,
  body: unknown = { error: 'Boom', description: `provider said ${s}` },
): Fault => ({
  kind: 'status',
  status: s,
  headers,
  body,
});

beforeAll(async () => {
  h = await startHarness({ env: { UPSTREAM_TIMEOUT_MAX_MS: String(TIMEOUT_CAP_MS) } });
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
  up = await new FaultyUpstream().start();
  other = await new FaultyUpstream().start('127.0.0.2');
  const creds = { domain: DOMAIN, email: EMAIL, api_token: API_TOKEN };
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await h.client.createConnection({ connection_name: 'faulty', connector: 'helpdesk', api_base_url: `${up.url}/api` });
  await h.client.upsertConnectedAccount({ connectionName: 'helpdesk', identifier: 'user-1', credentials: creds });
  await h.client.upsertConnectedAccount({ connectionName: 'faulty', identifier: 'user-1', credentials: creds });
  // The meeting-notes connector speaks MCP (JSON-RPC over HTTP) to its provider: the same faults on that transport.
  await h.client.createConnection({
    connection_name: 'notes-faulty',
    connector: 'notes',
    oauth: { resource: `${up.url}/mcp` },
  });
  await h.client.upsertConnectedAccount({
    connectionName: 'notes-faulty',
    identifier: 'user-1',
    credentials: { access_token: MCP_TOKEN },
  });
  token = await serviceToken(h.url);
});

afterAll(async () => {
  record({
    category: 'faults injected',
    what: 'upstream faults on tool calls',
    ...tally.tool,
    detail: details.tool.join('; '),
  });
  record({
    category: 'faults injected',
    what: 'upstream faults on MCP tool calls',
    ...tally.mcp,
    detail: details.mcp.join('; '),
  });
  record({
    category: 'faults injected',
    what: 'upstream faults on the proxy',
    ...tally.proxy,
    detail: details.proxy.join('; '),
  });
  record({
    category: 'faults injected',
    what: '/health and a normal tool call while a fault was in progress',
    ...tally.serving,
  });
  await up?.close();
  await other?.close();
  await desk?.close();
  await h?.close();
});

describe('tool calls against a faulty provider', () => {
  scenario('tool', '429 with Retry-After: the GET waits as asked, then succeeds', async () => {
    up.plan([status(429, { 'retry-after': '1' })], { kind: 'status', status: 200, body: { ticket: { id: 42 } } });
    const pending = getTicket();
    await stillServing();
    const a = await pending;
    expect(a.status).toBe(200);
    expect(a.body.data).toEqual({ ticket: { id: 42 } });
    expect(up.count('GET')).toBe(2);
  });

  scenario(
    'tool',
    '429 with Retry-After on a POST: retried once (the provider refused it), never duplicated',
    async () => {
      up.plan([status(429, { 'retry-after': '1' })], { kind: 'status', status: 201, body: { ticket: { id: 7 } } });
      const pending = createTicket();
      await stillServing();
      const a = await pending;
      expect(a.status).toBe(200);
      expect(a.body.data.ticket.id).toBe(7);
      expect(up.count('POST')).toBe(2);
    },
  );

  scenario(
    'tool',
    '429 without Retry-After on a POST: not retried, the provider error reaches the client',
    async () => {
      up.plan([], status(429, undefined, { error: 'TooManyRequests' }));
      const a = await held(createTicket);
      expectProviderError(a, 429, { error: 'TooManyRequests' });
      expect(up.count('POST')).toBe(1);
    },
  );

  scenario(
    'tool',
    '429 without Retry-After on a GET: retried with backoff up to the policy, then the provider error',
    async () => {
      up.plan([], status(429, undefined, { error: 'TooManyRequests' }));
      const a = await held(getTicket);
      expectProviderError(a, 429, { error: 'TooManyRequests' });
      expect(up.count('GET')).toBe(3);
    },
  );

  scenario('tool', '429 with a Retry-After beyond the policy: answered at once, Retry-After passed on', async () => {
    up.plan([], status(429, { 'retry-after': '3600' }, { error: 'TooManyRequests' }));
    const a = await held(getTicket);
    expectProviderError(a, 429);
    expect(a.headers.get('retry-after')).toBe('3600');
    expect(up.count('GET')).toBe(1);
  });

  scenario('tool', '500 and 502 are not in the policy: one request, provider status and body kept', async () => {
    for (const s of [500, 502]) {
      up.reset();
      up.plan([], status(s));
      const a = await held(getTicket);
      expectProviderError(a, s, { error: 'Boom', description: `provider said ${s}` });
      expect(up.count('GET')).toBe(1);
    }
  });

  scenario(
    'tool',
    'what the client library makes of them: a provider error and a service error, told apart',
    async () => {
      const viaClient = () =>
        h.client
          .executeTool({
            toolName: 'helpdesk_ticket_create',
            toolInput: { comment_body: 'Printer on fire' },
            connectionName: 'faulty',
            identifier: 'user-1',
          })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
      up.plan([], status(404, undefined, { error: 'RecordNotFound', description: 'Not found' }));
      const notFound = (await held(viaClient)) as ConnectorServiceError;
      expect(notFound).toBeInstanceOf(ConnectorServiceError);
      expect(notFound).toMatchObject({
        isProviderError: true,
        status: 404,
        providerStatus: 404,
        providerBody: { error: 'RecordNotFound', description: 'Not found' },
      });
      up.reset();
      up.plan([], { kind: 'hang' });
      const pending = viaClient();
      await stillServing();
      const timedOut = (await pending) as ConnectorServiceError;
      expect(timedOut).toBeInstanceOf(ConnectorServiceError);
      expect(timedOut).toMatchObject({
        isProviderError: false,
        status: 504,
        code: 'upstream_timeout',
        providerStatus: undefined,
      });
    },
  );

  scenario('tool', '503 with Retry-After as an HTTP date on a POST: retried once, as the provider asked', async () => {
    up.plan([status(503, { 'retry-after': new Date(Date.now() + 1500).toUTCString() })], {
      kind: 'status',
      status: 201,
      body: { ticket: { id: 8 } },
    });
    const pending = createTicket();
    await stillServing();
    const a = await pending;
    expect(a.status).toBe(200);
    expect(a.body.data.ticket.id).toBe(8);
    expect(up.count('POST')).toBe(2);
  });

  scenario('tool', '503 without Retry-After: a GET is retried, a POST is not', async () => {
    up.plan([], status(503));
    expectProviderError(await held(getTicket), 503, { error: 'Boom', description: 'provider said 503' });
    expect(up.count('GET')).toBe(3);
    up.reset();
    up.plan([], status(503));
    expectProviderError(await held(createTicket), 503);
    expect(up.count('POST')).toBe(1);
  });

  scenario('tool', 'timeout before the headers: upstream_timeout; a GET is retried, a POST is sent once', async () => {
    up.plan([], { kind: 'hang' });
    const get = getTicket();
    await stillServing();
    const timedOut = await get;
    expectServiceError(timedOut, 504, 'upstream_timeout');
    // The connector's 30 s, capped by the operator's UPSTREAM_TIMEOUT_MAX_MS.
    expect(timedOut.body.error.message).toContain(`timeout after ${TIMEOUT_CAP_MS} ms`);
    expect(up.count('GET')).toBe(3);
    up.reset();
    up.plan([], { kind: 'hang' });
    const post = createTicket();
    await stillServing();
    expectServiceError(await post, 504, 'upstream_timeout');
    expect(up.count('POST')).toBe(1);
  });

  scenario('tool', 'stall in the middle of the body: upstream_timeout, the POST sent once', async () => {
    up.plan([], { kind: 'stall', bytes: 1000 });
    const post = createTicket();
    await stillServing();
    expectServiceError(await post, 504, 'upstream_timeout');
    expect(up.count('POST')).toBe(1);
    details.tool.push('timeouts capped at 1 s by UPSTREAM_TIMEOUT_MAX_MS');
  });

  scenario(
    'tool',
    'a provider that drips one byte at a time, never idle: upstream_timeout, not a call held forever',
    async () => {
      up.plan([], { kind: 'dribble', everyMs: 100 });
      const post = createTicket();
      await stillServing();
      const a = await post;
      expectServiceError(a, 504, 'upstream_timeout');
      expect(up.count('POST')).toBe(1);
    },
  );

  scenario('tool', 'connection reset before the headers: upstream_connection_reset, the POST sent once', async () => {
    up.plan([], { kind: 'reset' });
    expectServiceError(await held(getTicket), 502, 'upstream_connection_reset');
    expect(up.count('GET')).toBe(3);
    up.reset();
    up.plan([], { kind: 'reset' });
    expectServiceError(await held(createTicket), 502, 'upstream_connection_reset');
    expect(up.count('POST')).toBe(1);
  });

  scenario(
    'tool',
    'connection reset in the middle of the body: upstream_connection_reset, the POST sent once',
    async () => {
      up.plan([], { kind: 'reset_mid_body', bytes: 1000 });
      expectServiceError(await held(createTicket), 502, 'upstream_connection_reset');
      expect(up.count('POST')).toBe(1);
    },
  );

  scenario('tool', 'malformed JSON in a 200: provider_malformed_response, a service error', async () => {
    up.plan([], { kind: 'malformed_json' });
    const a = await held(getTicket);
    expectServiceError(a, 502, 'provider_malformed_response');
    expect(up.count('GET')).toBe(1);
  });

  scenario(
    'tool',
    'not HTTP at all, or gzip that is not: provider_malformed_response, the POST sent once',
    async () => {
      for (const kind of ['garbage', 'bad_gzip'] as const) {
        up.reset();
        up.plan([], { kind });
        const a = await held(createTicket);
        expectServiceError(a, 502, 'provider_malformed_response');
        expect(up.count('POST')).toBe(1);
      }
    },
  );

  scenario('tool', 'redirect to another, unconfigured host: refused, nothing sent there', async () => {
    // A hop on the same host keeps the credential; the hop to a host the connection does not configure is
    // refused, because that host resolves to a private address (see runtime/upstream/address-guard.ts).
    up.plan([
      { kind: 'redirect', location: '/api/v2/tickets/42/moved' },
      { kind: 'redirect', location: `${other.url}/api/v2/tickets/42` },
    ]);
    other.plan([], { kind: 'status', status: 200, body: { ticket: { id: 42, moved: true } } });
    const a = await held(getTicket);
    expect(a.status).toBe(502);
    expect(a.headers.get('x-error-source')).toBe('service');
    expect(a.body.error.code).toBe('upstream_host_not_public');
    expect(up.received.map((r) => r.headers.authorization)).toEqual([BASIC, BASIC]);
    expect(other.received).toHaveLength(0);
  });

  it('a redirect that changes origin is followed for a GET without the credential headers', async () => {
    // At the level of send(), where every host is allowed: the credential stays on the first origin.
    up.plan([{ kind: 'redirect', location: `${other.url}/api/v2/tickets/42` }]);
    other.plan([], { kind: 'status', status: 200, body: { ticket: { id: 42, moved: true } } });
    const res = await send(
      {
        method: 'GET',
        url: `${up.url}/api/v2/tickets/42`,
        headers: { authorization: BASIC, 'x-api-key': 'k-123456', accept: 'application/json' },
      },
      {
        connectTimeoutMs: 2_000,
        responseTimeoutMs: 2_000,
        maxBytes: 1 << 20,
        credentialHeaders: ['authorization', 'x-api-key'],
      },
    );
    expect(res.status).toBe(200);
    expect(other.received).toHaveLength(1);
    expect(other.received[0]!.headers.authorization).toBeUndefined();
    expect(other.received[0]!.headers['x-api-key']).toBeUndefined();
    expect(other.received[0]!.headers.accept).toBe('application/json');
    record({
      category: 'faults injected',
      what: 'cross-origin redirect at the HTTP layer: credential headers dropped',
      tried: 1,
      failed: 0,
    });
  });

  scenario('tool', "a redirect loop: followed five times, then the provider's redirect is the answer", async () => {
    up.plan([], { kind: 'redirect', location: '/api/v2/tickets/42' });
    const a = await held(getTicket);
    expect(a.headers.get('x-error-source')).toBe('provider');
    expect(a.body.error.provider_status).toBe(302);
    expect(up.count('GET')).toBe(6);
  });

  scenario('tool', 'redirect of a POST: not followed, nothing sent to the other host', async () => {
    up.plan([{ kind: 'redirect', location: `${other.url}/api/v2/tickets`, status: 307 }]);
    const a = await held(createTicket);
    expect(a.headers.get('x-error-source')).toBe('provider');
    expect(a.body.error.provider_status).toBe(307);
    expect(other.received).toHaveLength(0);
    expect(up.count('POST')).toBe(1);
  });

  for (const shape of [
    { name: 'with content-length', contentLength: true, gzip: false },
    { name: 'chunked, without content-length', contentLength: false, gzip: false },
    { name: 'gzip-compressed (2 GB once decompressed)', contentLength: false, gzip: true },
  ]) {
    scenario('tool', `a 2 GB answer ${shape.name}: response_too_large, without reading it`, async () => {
      up.plan([], { kind: 'huge', bytes: TOOL_OFFER_BYTES, contentLength: shape.contentLength, gzip: shape.gzip });
      const pending = rssGrowth(getTicket);
      await stillServing();
      const { result: a, growth } = await pending;
      expectServiceError(a, 502, 'response_too_large');
      expect(up.count('GET')).toBe(1);
      // The limit is 10 MB; the service reads a little past it (plus what sits in socket buffers, a lot once
      // decompressed), never the 2 GB.
      expect(up.bytesWritten).toBeLessThan(256 * MB);
      expect(growth).toBeLessThan(256 * MB);
      details.tool.push(
        `2 GB ${shape.gzip ? 'gzip' : shape.contentLength ? 'sized' : 'chunked'}: provider produced ${(up.bytesWritten / MB).toFixed(1)} MB, RSS +${(growth / MB).toFixed(0)} MB`,
      );
    });
  }
});

describe('MCP tool calls against a faulty MCP server', () => {
  // The provider's answer as it came (the MCP result's content), which these scenarios read.
  const listMeetings = () =>
    exec('notes_list_meetings', { time_range: 'this_week', response_format: 'detailed' }, 'notes-faulty');
  const mcp = (call: Fault): Fault => ({ kind: 'mcp', call });
  const calls = () => up.rpcCount('tools/call');

  scenario(
    'mcp',
    "a good answer first (the way there works), then one without the call's id: provider_malformed_response",
    async () => {
      up.plan([], { kind: 'mcp' });
      const good = await held(listMeetings);
      expect(good.status).toBe(200);
      expect(good.body.data.content[0].text).toContain('Launch review');
      expect(up.rpcCount('initialize')).toBeGreaterThanOrEqual(1);
      expect(up.received.every((r) => r.headers.authorization === `Bearer ${MCP_TOKEN}`)).toBe(true);
      up.reset();
      up.plan(
        [],
        mcp({ kind: 'status', status: 200, body: { jsonrpc: '2.0', id: 'not-the-call', result: { content: [] } } }),
      );
      expectServiceError(await held(listMeetings), 502, 'provider_malformed_response');
      expect(calls()).toBe(1);
    },
  );

  scenario('mcp', "429 and 503 on tools/call: the provider's error, the call sent once", async () => {
    for (const s of [429, 503]) {
      up.reset();
      up.plan([], mcp(status(s, { 'retry-after': '1' })));
      const a = await listMeetings();
      expectProviderError(a, s, { error: 'Boom', description: `provider said ${s}` });
      expect(calls()).toBe(1);
    }
  });

  scenario('mcp', 'timeout before the headers: upstream_timeout, the call sent once', async () => {
    up.plan([], mcp({ kind: 'hang' }));
    const pending = listMeetings();
    await stillServing();
    const a = await pending;
    expectServiceError(a, 504, 'upstream_timeout');
    expect(a.body.error.message).toContain(`after ${TIMEOUT_CAP_MS} ms`);
    expect(calls()).toBe(1);
  });

  scenario('mcp', 'stall in the middle of the body: upstream_timeout, not a call held forever', async () => {
    up.plan([], mcp({ kind: 'stall', bytes: 1000 }));
    const pending = listMeetings();
    await stillServing();
    expectServiceError(await pending, 504, 'upstream_timeout');
    expect(calls()).toBe(1);
  });

  scenario('mcp', 'a server that drips one byte at a time: upstream_timeout, not a call held forever', async () => {
    up.plan([], mcp({ kind: 'dribble', everyMs: 100 }));
    const pending = listMeetings();
    await stillServing();
    expectServiceError(await pending, 504, 'upstream_timeout');
    expect(calls()).toBe(1);
  });

  scenario(
    'mcp',
    'connection reset, before the headers and mid-body: upstream_connection_reset, the call sent once',
    async () => {
      for (const call of [{ kind: 'reset' }, { kind: 'reset_mid_body', bytes: 1000 }] as const) {
        up.reset();
        up.plan([], mcp(call));
        expectServiceError(await held(listMeetings), 502, 'upstream_connection_reset');
        expect(calls()).toBe(1);
      }
    },
  );

  scenario('mcp', 'malformed JSON, or not HTTP at all: provider_malformed_response', async () => {
    for (const call of [{ kind: 'malformed_json' }, { kind: 'garbage' }] as const) {
      up.reset();
      up.plan([], mcp(call));
      expectServiceError(await held(listMeetings), 502, 'provider_malformed_response');
      expect(calls()).toBe(1);
    }
  });

  scenario('mcp', 'a 2 GB answer (sized, chunked, gzip): response_too_large, without reading it', async () => {
    for (const shape of [{ contentLength: true }, { contentLength: false }, { contentLength: false, gzip: true }]) {
      up.reset();
      up.plan([], mcp({ kind: 'huge', bytes: TOOL_OFFER_BYTES, ...shape }));
      const { result: a, growth } = await rssGrowth(listMeetings);
      expectServiceError(a, 502, 'response_too_large');
      expect(up.bytesWritten).toBeLessThan(256 * MB);
      expect(growth).toBeLessThan(256 * MB);
      details.mcp.push(
        `2 GB ${shape.gzip ? 'gzip' : shape.contentLength ? 'sized' : 'chunked'}: server produced ${(up.bytesWritten / MB).toFixed(1)} MB`,
      );
    }
  });
});

describe('the proxy against a faulty provider', () => {
  scenario('proxy', "provider statuses pass through as they are, never retried, marked as the provider's", async () => {
    for (const fault of [
      status(429, { 'retry-after': '1' }),
      status(429),
      status(500),
      status(502),
      status(503, { 'retry-after': '2' }),
    ]) {
      up.reset();
      up.plan([], fault);
      const s = (fault as { status: number }).status;
      const a = await held(() => proxy('GET', '/v2/tickets/42.json'));
      expect(a.status).toBe(s);
      expect(JSON.parse(a.body)).toEqual({ error: 'Boom', description: `provider said ${s}` });
      expect(a.headers['retry-after']).toBe((fault as { headers?: Record<string, string> }).headers?.['retry-after']);
      expect(a.headers['x-error-source']).toBe('provider');
      expect(up.count('GET')).toBe(1);
    }
  });

  scenario('proxy', 'a provider cannot pass its answer off as a service error', async () => {
    up.plan([], status(500, { 'x-error-source': 'service' }, { error: { code: 'not_found', message: 'fake' } }));
    const a = await held(() => proxy('GET', '/v2/tickets/42.json'));
    expect(a.status).toBe(500);
    expect(a.headers['x-error-source']).toBe('provider');
  });

  scenario(
    'proxy',
    'a provider 401 to a body-less POST through the client library: sent once, not replayed',
    async () => {
      up.plan([], status(401, undefined, { error: "Couldn't authenticate you" }));
      const a = await held(() =>
        h.client.request({
          connectionName: 'faulty',
          identifier: 'user-1',
          method: 'POST',
          path: '/v2/tickets/42/mark_as_spam.json',
        }),
      );
      expect(a.status).toBe(401);
      expect(a.headers.get('x-error-source')).toBe('provider');
      expect(up.count('POST')).toBe(1);
    },
  );

  scenario('proxy', 'timeout before the headers: 504 upstream_timeout, sent once', async () => {
    up.plan([], { kind: 'hang' });
    const pending = proxy('POST', '/v2/tickets.json');
    await stillServing();
    const a = await pending;
    expect(a.status).toBe(504);
    expect(a.headers['x-error-source']).toBe('service');
    expect(JSON.parse(a.body).error).toMatchObject({
      code: 'upstream_timeout',
      message: expect.stringContaining(`after ${TIMEOUT_CAP_MS} ms`),
    });
    expect(up.count('POST')).toBe(1);
  });

  scenario('proxy', 'connection reset before the headers: 502 upstream_connection_reset, sent once', async () => {
    up.plan([], { kind: 'reset' });
    const a = await held(() => proxy('GET', '/v2/tickets/42.json'));
    expect(a.status).toBe(502);
    expect(a.headers['x-error-source']).toBe('service');
    expect(JSON.parse(a.body).error.code).toBe('upstream_connection_reset');
    expect(up.count('GET')).toBe(1);
  });

  scenario('proxy', "stall in the middle of the body: the client's response is cut, never a clean end", async () => {
    up.plan([], { kind: 'stall', bytes: 1000 });
    const pending = proxy('GET', '/v2/tickets.json');
    await stillServing();
    const a = await pending;
    expect(a.status).toBe(200);
    expect(a.bytes).toBe(1000);
    expect(a.complete).toBe(false);
  });

  scenario('proxy', 'a download slower in all than the response timeout, never idle as long: every byte', async () => {
    // 6 chunks 400 ms apart: 2.4 s in all against the 1 s timeout, which counts idleness between bytes.
    up.plan([], { kind: 'paced', chunks: 6, chunkBytes: 1000, everyMs: 400 });
    const a = await proxy('GET', '/v2/attachments/slow.bin');
    expect(a.status).toBe(200);
    expect(a.complete).toBe(true);
    expect(a.bytes).toBe(6000);
  });

  scenario('proxy', 'a client that stops reading for longer than the response timeout: the answer waits', async () => {
    // The provider has the whole answer ready at once; the client reads a little, then nothing for 2.5 s. The
    // service pauses the provider's connection meanwhile, and a paused exchange waits on its client, not on the
    // provider: no clock runs.
    up.plan([], { kind: 'huge', bytes: 32 * MB, contentLength: true });
    const a = await new Promise<{ status: number; bytes: number; complete: boolean }>((resolve, reject) => {
      const req = proxyRequest('GET', '/v2/attachments/big.bin', (res) => {
        let bytes = 0;
        let paused = false;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (!paused) {
            paused = true;
            res.pause();
            setTimeout(() => res.resume(), 2.5 * TIMEOUT_CAP_MS);
          }
        });
        res.on('error', () => {});
        res.on('close', () => resolve({ status: res.statusCode ?? 0, bytes, complete: res.complete }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(a.status).toBe(200);
    expect(a.complete).toBe(true);
    expect(a.bytes).toBe(32 * MB);
  });

  /**
   * A POST whose body the client sends in `chunks` pieces `everyMs` apart. Resolves with the answer and the time
   * from the last piece to the answer's end.
   */
  function slowUpload(chunks: number, everyMs: number): Promise<ProxyAnswer & { afterUploadMs: number }> {
    return new Promise((resolve, reject) => {
      let uploaded = 0;
      const req = proxyRequest(
        'POST',
        '/v2/uploads.json',
        (res) => {
          const kept: Buffer[] = [];
          res.on('data', (c: Buffer) => kept.push(c));
          res.on('error', () => {});
          res.on('close', () => {
            const body = Buffer.concat(kept);
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              bytes: body.length,
              body: body.toString('utf8'),
              complete: res.complete,
              afterUploadMs: performance.now() - uploaded,
            });
          });
        },
        { 'content-type': 'application/octet-stream', 'content-length': String(chunks * 1000) },
      );
      req.on('error', reject);
      let sent = 0;
      const timer = setInterval(() => {
        req.write(Buffer.alloc(1000, 'u'));
        if (++sent === chunks) {
          clearInterval(timer);
          req.end();
          uploaded = performance.now();
        }
      }, everyMs);
    });
  }

  scenario('proxy', 'an upload slower than the response timeout: the wait for the answer starts after it', async () => {
    // 10 pieces 250 ms apart: 2.5 s of upload against the 1 s timeout. The provider reads it all, then answers.
    up.plan([], { kind: 'slow', ms: 300, body: { upload: { id: 7 } } });
    const a = await slowUpload(10, 250);
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({ upload: { id: 7 } });
    expect(up.received.at(-1)!.bodyBytes).toBe(10_000);
  });

  scenario(
    'proxy',
    'a provider that never answers a slow upload: 504 once the response timeout has passed',
    async () => {
      // After a 2 s upload the provider goes silent: the wait for its headers is still bounded by the timeout.
      up.plan([], { kind: 'hang' });
      const a = await slowUpload(8, 250);
      expect(a.status).toBe(504);
      expect(JSON.parse(a.body).error).toMatchObject({
        code: 'upstream_timeout',
        message: expect.stringContaining(`after ${TIMEOUT_CAP_MS} ms`),
      });
      expect(up.received.at(-1)!.bodyBytes).toBe(8000);
      expect(a.afterUploadMs).toBeGreaterThanOrEqual(TIMEOUT_CAP_MS - 50);
    },
  );

  scenario(
    'proxy',
    "connection reset in the middle of the body: the client's response is cut, never a clean end",
    async () => {
      up.plan([], { kind: 'reset_mid_body', bytes: 1000 });
      const a = await held(() => proxy('GET', '/v2/tickets.json'));
      expect(a.status).toBe(200);
      expect(a.bytes).toBe(1000);
      expect(a.complete).toBe(false);
    },
  );

  scenario('proxy', 'not HTTP at all: 502 provider_malformed_response, sent once', async () => {
    up.plan([], { kind: 'garbage' });
    const a = await held(() => proxy('POST', '/v2/tickets.json'));
    expect(a.status).toBe(502);
    expect(a.headers['x-error-source']).toBe('service');
    expect(JSON.parse(a.body).error.code).toBe('provider_malformed_response');
    expect(up.count('POST')).toBe(1);
  });

  scenario('proxy', 'a client that goes away mid-download: the service stops reading from the provider', async () => {
    up.plan([], { kind: 'huge', bytes: TOOL_OFFER_BYTES, contentLength: true });
    const inFlightBefore = up.inFlight;
    const got = await new Promise<number>((resolve, reject) => {
      const req = proxyRequest('GET', '/v2/attachments/big.bin', (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
          if (n >= 8 * MB) {
            req.destroy();
            resolve(n);
          }
        });
        res.on('error', () => {});
      });
      req.on('error', () => {});
      req.on('close', () => reject(new Error('closed before 8 MB')));
      req.end();
    });
    expect(got).toBeGreaterThanOrEqual(8 * MB);
    // The provider's answer is abandoned (its connection closed), not read to the end into nowhere.
    await until(() => up.inFlight === inFlightBefore, "the provider's answer to be abandoned");
    expect(up.bytesWritten).toBeLessThan(256 * MB);
    await stillServing();
    details.proxy.push(`client gone after 8 MB of 2 GB: provider wrote ${(up.bytesWritten / MB).toFixed(0)} MB`);
  });

  scenario('proxy', "a client that goes away before the answer: the provider's answer is abandoned", async () => {
    // The provider answers after the client has gone, then keeps sending: the service must drop the exchange
    // rather than hold it (and its connection) open, paused, waiting for a client that is no longer there.
    up.plan([], { kind: 'dribble', everyMs: 20, afterMs: 300 });
    const inFlightBefore = up.inFlight;
    await proxyThenLeave(inFlightBefore);
    await until(() => up.inFlight === inFlightBefore, "the provider's answer to be abandoned");
    await stillServing();
  });

  scenario(
    'proxy',
    'a client that goes away while the provider has not answered: the request is abandoned',
    async () => {
      // The provider never answers. The request to it must not wait out the proxy's response timeout (two minutes by
      // default, a second here) for a client that is gone: its connection is closed when the client's is.
      up.plan([], { kind: 'hang' });
      const inFlightBefore = up.inFlight;
      const logsBefore = h.logs.length;
      const logged = (code: string) =>
        h.logs.slice(logsBefore).some((l) => l.includes('proxied request failed') && l.includes(`"code":"${code}"`));
      await proxyThenLeave(inFlightBefore);
      await until(() => up.inFlight === inFlightBefore, 'the request to the provider to be abandoned');
      // Abandoned because the client left, not cut by the response timeout (UPSTREAM_TIMEOUT_MAX_MS here).
      await until(() => logged('client_gone'), 'the proxy to log the abandoned request as client_gone');
      expect(logged('upstream_timeout')).toBe(false);
      await stillServing();
    },
  );

  scenario('proxy', 'malformed JSON passes through byte for byte (the proxy does not parse)', async () => {
    up.plan([], { kind: 'malformed_json' });
    const a = await held(() => proxy('GET', '/v2/tickets/1.json'));
    expect(a.status).toBe(200);
    expect(a.body).toBe('{"ticket": {"id": 1, "subject": "cut here');
    expect(a.complete).toBe(true);
  });

  scenario('proxy', 'redirect to another host: handed to the client, nothing sent to the other host', async () => {
    up.plan([{ kind: 'redirect', location: `${other.url}/api/v2/tickets/42.json` }]);
    const a = await held(() => proxy('GET', '/v2/tickets/42.json'));
    expect(a.status).toBe(302);
    expect(a.headers.location).toBe(`${other.url}/api/v2/tickets/42.json`);
    expect(other.received).toHaveLength(0);
  });

  scenario(
    'proxy',
    `${PROXY_BYTES / MB} MB stream through, every byte, in bounded memory`,
    async () => {
      up.plan([], { kind: 'huge', bytes: PROXY_BYTES, contentLength: true });
      const pending = rssGrowth(() => proxy('GET', '/v2/attachments/big.bin'));
      await stillServing();
      const { result: a, growth } = await pending;
      expect(a.status).toBe(200);
      expect(a.complete).toBe(true);
      expect(a.bytes).toBe(PROXY_BYTES);
      expect(growth).toBeLessThan(192 * MB);
      details.proxy.push(
        `${PROXY_BYTES / MB} MB streamed${SOAK ? '' : ' (2 GB with RELIABILITY_SOAK=1)'}, RSS +${(growth / MB).toFixed(0)} MB`,
      );
    },
    SOAK ? 600_000 : 120_000,
  );
});

it('no credential in any log line the service wrote while the faults were injected', () => {
  const secrets = [API_TOKEN, BASIC.slice('Basic '.length), MCP_TOKEN];
  const leaking = h.logs.filter((line) => secrets.some((secret) => line.includes(secret)));
  record({
    category: 'secrets scanned',
    what: 'service log lines written during upstream faults',
    tried: h.logs.length,
    failed: leaking.length,
  });
  expect(h.logs.some((line) => line.includes('retrying upstream request'))).toBe(true);
  expect(leaking).toEqual([]);
});
