/**
 * URL-mode elicitation for a user who must connect (issues 38 and 39), with the official SDK's clients against the
 * fake authorization server and the fake Microsoft Graph:
 *
 * - 2025-11-25, the v1 client declaring `elicitation: {url: {}}`: the tool call answers -32042 with the link; the
 *   link is completed through the hosted flow; `notifications/elicitation/complete` arrives on the client's GET stream
 *   with the same elicitation id; the retried call succeeds.
 * - 2026-07-28, the v2 client pinned to it: an InputRequiredResult the client fulfils through its elicitation handler
 *   (which completes the link) and retries with the requestState; the call then succeeds. By hand: a tampered, expired
 *   or other user's requestState is refused; one issued for another tool call too.
 * - Clients that do not declare URL elicitation, in both eras: the tool result carries the link in text.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitationCompleteNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Writable } from 'node:stream';
import {
  followAuthorizationLink,
  oauthConnection,
  PG_URL,
  serviceEnv,
  serviceToken,
  startHarness,
  type Harness,
} from '../helpers/harness.ts';
import { loadConfig } from '../../runtime/config.ts';
import { startServer } from '../../runtime/server.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { startFakeGraph, type FakeGraph } from '../fakes/graph.ts';

const MODERN = '2026-07-28';
let h: Harness;
let graph: FakeGraph;
let token: string;
let serverId: string;
const closers: (() => Promise<unknown>)[] = [];

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};
const urlFor = async (identifier: string) =>
  (await api('POST', `/v1/mcp-servers/${serverId}/urls`, { identifier })).body.url as string;

beforeAll(async () => {
  h = await startHarness();
  graph = await startFakeGraph({ validateToken: (t) => !!h.oauth.validate(t) });
  await oauthConnection(h, 'mail', 'mail', graph.url);
  token = await serviceToken(h.url);
  serverId = (await api('POST', '/v1/mcp-servers', { name: 'mail-agent', connections: ['mail'] })).body.id;
});
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  await graph?.close();
  await h?.close();
});

const textOf = (r: Record<string, unknown>) => (r.content as { type: string; text: string }[])[0]!.text;
const LINK = /(https?:\/\/\S+\/sso\/v1\/oauth\/\S+)/;

describe('2025-11-25: the v1 client declaring URL elicitation', () => {
  it('gets -32042 with the link, then the completion notification once the account is ACTIVE, and the retry works', async () => {
    const url = await urlFor('erin');
    // The client's GET event stream: known open once its answer's headers arrive (the server registers it first).
    let streamOpen!: () => void;
    const opened = new Promise<void>((resolve) => (streamOpen = resolve));
    const sessions: (string | null)[] = [];
    const fetchSpy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if ((init?.method ?? 'GET') === 'GET' && res.status === 200) streamOpen();
      if (init?.method === 'POST') sessions.push(new Headers(init.headers).get('mcp-session-id'));
      return res;
    };
    const client = new ClientV1(
      { name: 'elicit-v1', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    const completed = new Promise<string>((resolve) =>
      client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => resolve(n.params.elicitationId)),
    );
    const transport = new TransportV1(new URL(url), { fetch: fetchSpy });
    await client.connect(transport);
    closers.push(() => client.close());
    expect(transport.sessionId).toMatch(/^e1\./);
    await opened;

    const refused = await client.callTool({ name: 'mail_list_messages', arguments: {} }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(McpError);
    const err = refused as McpError;
    expect(err.code).toBe(-32042);
    const elicitations = (err.data as { elicitations: Record<string, string>[] }).elicitations;
    expect(elicitations).toHaveLength(1);
    const [e] = elicitations;
    expect(e!.mode).toBe('url');
    expect(e!.url).toMatch(LINK);
    expect(e!.message).toContain('has not connected');
    expect(e!.elicitationId).toBeTruthy();
    // Every call after initialize carried the signed session id.
    expect(sessions.slice(1).every((s) => s === transport.sessionId)).toBe(true);

    // The user completes the link (the hosted flow at the fake provider); the notification names the elicitation.
    expect((await followAuthorizationLink(e!.url!, 'erin')).status).toBe(200);
    expect(await completed).toBe(e!.elicitationId);
    const after = await client.callTool({ name: 'mail_list_messages', arguments: {} });
    expect(after.isError).toBeFalsy();
    // The GET stream is still open; it is not a request in flight for the background work to wait for
    // (runtime/jobs/foreground.ts), and every answered request has been counted out.
    await new Promise((r) => setImmediate(r));
    expect(h.running.services.foreground.active).toBe(0);
  });

  it('refuses a forged session id (the GET stream answers 405; calls fall back to the link in text)', async () => {
    const url = await urlFor('frank');
    const forged = 'e1.AAAAAAAAAAAAAAAA.' + Date.now().toString(36) + '.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const get = await fetch(url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': forged, 'mcp-protocol-version': '2025-11-25' },
    });
    expect(get.status).toBe(405);
    // A session id issued for another user's URL is refused too.
    const client = new ClientV1(
      { name: 'elicit-v1', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    const transport = new TransportV1(new URL(await urlFor('grace')));
    await client.connect(transport);
    closers.push(() => client.close());
    const other = await fetch(url, {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': '2025-11-25',
      },
    });
    expect(other.status).toBe(405);
  });
});

describe('2026-07-28: the v2 client', () => {
  it('fulfils the InputRequiredResult through its elicitation handler and the retried call succeeds', async () => {
    const url = await urlFor('heidi');
    const asked: Record<string, unknown>[] = [];
    const client = new ClientV2(
      { name: 'elicit-v2', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: MODERN } } },
    );
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      const link = (request.params as { url: string }).url;
      expect((await followAuthorizationLink(link, 'heidi')).status).toBe(200);
      return { action: 'accept' };
    });
    const transport = new TransportV2(new URL(url));
    await client.connect(transport);
    closers.push(() => client.close());
    expect(transport.protocolVersion).toBe(MODERN);
    const result = await client.callTool({ name: 'mail_list_messages', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ mode: 'url' });
    expect(asked[0]!.url).toMatch(LINK);
  });

  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
  };
  const call = async (to: string, params: Record<string, unknown>) => {
    const res = await fetch(to, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': String(params.name),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { _meta: meta, ...params } }),
    });
    return (await res.json()) as { result?: Record<string, any>; error?: { code: number; message: string } };
  };

  it('refuses a tampered, expired, other-user or other-call requestState, and accepts its own', async () => {
    const url = await urlFor('ivan');
    const first = await call(url, { name: 'mail_list_messages', arguments: {} });
    expect(first.result!.resultType).toBe('input_required');
    const [request] = Object.values(first.result!.inputRequests as Record<string, any>);
    expect(request.method).toBe('elicitation/create');
    expect(request.params).toMatchObject({ mode: 'url' });
    const state = first.result!.requestState as string;
    expect(state).toMatch(/^v1\./);
    const retry = (s: string, to = url, name = 'mail_list_messages', args: Record<string, unknown> = {}) =>
      call(to, { name, arguments: args, requestState: s, inputResponses: {} });

    // Still not connected: a fresh input-required answer, not an error.
    expect((await retry(state)).result!.resultType).toBe('input_required');

    const body = state.slice(3, state.lastIndexOf('.'));
    const envelope = JSON.parse(Buffer.from(body, 'base64url').toString()) as { p: unknown; exp: number; b: string };
    const key = h.running.services.sealer.deriveKey('mcp-elicitation');
    const sign = (e: unknown) => {
      const b = Buffer.from(JSON.stringify(e)).toString('base64url');
      return `v1.${b}.${createHmac('sha256', key).update(`v1.${b}`).digest('base64url')}`;
    };
    // The same envelope re-signed is accepted (the test's signing is the codec's)…
    expect((await retry(sign(envelope))).result!.resultType).toBe('input_required');
    // …a changed payload without the key is not, nor an expired one, nor one for another user's URL.
    const tampered = `v1.${Buffer.from(JSON.stringify({ ...envelope, p: { t: 'mail_send_message', a: 'x', c: 'mail' } })).toString('base64url')}.${state.slice(state.lastIndexOf('.') + 1)}`;
    for (const bad of [tampered, sign({ ...envelope, exp: Math.floor(Date.now() / 1000) - 5 })]) {
      const answer = await retry(bad);
      expect(answer.error?.code).toBe(-32602);
      expect(answer.error?.message).toBe('Invalid or expired requestState');
    }
    const elsewhere = await retry(state, await urlFor('judy'));
    expect(elsewhere.error?.message).toBe('Invalid or expired requestState');
    // A state issued for this call, echoed on another call (other arguments), is refused by name.
    const otherCall = await retry(state, url, 'mail_list_messages', { top: 3 });
    expect(otherCall.error?.code).toBe(-32602);
    expect(otherCall.error?.message).toContain('issued for another tool call');

    // The user connects; the retry with the state then runs the tool.
    expect((await followAuthorizationLink(request.params.url, 'ivan')).status).toBe(200);
    const done = await retry(state);
    expect(done.result!.resultType).toBe('complete');
    expect(done.result!.isError).toBeFalsy();
  });
});

describe('clients that do not declare URL elicitation', () => {
  it.each(['v1', 'v2 modern'])('%s: the tool result carries the link in text', async (mode) => {
    const url = await urlFor(`kim-${mode.replace(' ', '-')}`);
    const client =
      mode === 'v1'
        ? new ClientV1({ name: 'plain', version: '1.0.0' })
        : new ClientV2({ name: 'plain', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    const transport = mode === 'v1' ? new TransportV1(new URL(url)) : new TransportV2(new URL(url));
    await (client as ClientV1).connect(transport);
    closers.push(() => client.close());
    if (mode === 'v1') expect(transport.sessionId).toBeUndefined();
    const missing = await (client as ClientV1).callTool({ name: 'mail_list_messages', arguments: {} });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(LINK);
    expect(textOf(missing)).toContain('has not connected');
  });
});

describe('two instances on one PostgreSQL database', () => {
  it('sends the completion on the stream one instance holds when the link is completed through the other', async () => {
    const pg = await startHarness({ store: 'postgres' });
    closers.push(() => pg.close());
    const schema = (pg.running.services.store as PostgresStore).schema!;
    const b = await startServer(loadConfig(serviceEnv(pg.dataDir)), {
      logDestination: new Writable({ write: (_c, _e, cb) => cb() }),
      store: new PostgresStore(PG_URL, schema),
    });
    closers.unshift(() => b.close());
    const pgGraph = await startFakeGraph({ validateToken: (t) => !!pg.oauth.validate(t) });
    closers.push(() => pgGraph.close());
    await oauthConnection(pg, 'mail', 'mail', pgGraph.url);
    const pgToken = await serviceToken(pg.url);
    const post = async (path: string, body: unknown) =>
      (await (
        await fetch(`${pg.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${pgToken}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as Record<string, string>;
    const server = await post('/v1/mcp-servers', { name: 'mail-agent', connections: ['mail'] });
    const onA = new URL((await post(`/v1/mcp-servers/${server.id}/urls`, { identifier: 'olga' })).url!);
    // The client talks to instance B (its stream is there); the link is completed through instance A.
    const onB = new URL(onA.pathname, b.url);
    let streamOpen!: () => void;
    const opened = new Promise<void>((resolve) => (streamOpen = resolve));
    const client = new ClientV1(
      { name: 'elicit-v1', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    const completed = new Promise<string>((resolve) =>
      client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => resolve(n.params.elicitationId)),
    );
    const transport = new TransportV1(onB, {
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if ((init?.method ?? 'GET') === 'GET' && res.status === 200) streamOpen();
        return res;
      },
    });
    await client.connect(transport);
    closers.unshift(() => client.close());
    await opened;
    const err = (await client
      .callTool({ name: 'mail_list_messages', arguments: {} })
      .catch((e: unknown) => e)) as McpError;
    expect(err.code).toBe(-32042);
    const [e] = (err.data as { elicitations: Record<string, string>[] }).elicitations;
    // B made the link at its own public URL; the user completes it at instance A (same path, same database).
    const link = new URL(e!.url!);
    expect(link.origin).toBe(new URL(b.url).origin);
    const viaA = new URL(`${link.pathname}${link.search}`, pg.url).toString();
    expect((await followAuthorizationLink(viaA, 'olga')).status).toBe(200);
    expect(b.services.store.changes.received).toBeGreaterThan(0);
    expect(await completed).toBe(e!.elicitationId);
    expect((await client.callTool({ name: 'mail_list_messages', arguments: {} })).isError).toBeFalsy();
  });
});
