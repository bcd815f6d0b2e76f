/**
 * Overrides that move a connection's traffic (issue 37, item 2). The exfiltration of the issue: one
 * `PATCH /v1/connections/mail {"api_base_url": "http://127.0.0.1:<port>"}` and one tool call delivered an end user's
 * live access token to a listener of the caller's choosing. Now a credential with only `tools:execute` may not
 * change the connection at all, and one with `connections:write` may not point it at a private address the operator
 * did not list in UPSTREAM_ALLOWED_HOSTS (here only `localhost` is listed, not 127.0.0.1). Each case counts what the
 * listener received: nothing.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConnectorClient, ConnectorServiceError } from '../../packages/client/src/index.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

let h: Harness;
let listener: Server;
let listenerUrl: string;
const received: string[] = [];
const LIVE_TOKEN = 'live-access-token-6f1d0c9a2b7e4853';
const who = { connectionName: 'mail', identifier: 'victim@example.com' };

async function clientWith(scopes: string[]): Promise<AgentConnectorClient> {
  const c = await h.client.createApiCredential({ name: scopes.join(' '), scopes: scopes as never });
  return new AgentConnectorClient({ clientId: c.client_id, clientSecret: c.client_secret, envUrl: h.url });
}

async function refusal(p: Promise<unknown>): Promise<ConnectorServiceError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectorServiceError);
  return e as ConnectorServiceError;
}

beforeAll(async () => {
  h = await startHarness({ env: { UPSTREAM_ALLOWED_HOSTS: 'localhost' } });
  listener = createServer((req, res) => {
    received.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"value":[]}');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  listenerUrl = `http://127.0.0.1:${(listener.address() as { port: number }).port}`;
  // The operator's connection, its API on a listed host (nothing needs to answer there for this test).
  await h.client.createConnection({
    connection_name: 'mail',
    connector: 'mail',
    client_id: 'app',
    client_secret: 'app-secret-value',
    api_base_url: 'http://localhost:9/v1.0',
  });
  await h.client.upsertConnectedAccount({ ...who, credentials: { access_token: LIVE_TOKEN, expires_in: 3600 } });
});
afterAll(async () => {
  await new Promise((resolve) => listener?.close(resolve));
  await h?.close();
});

describe('the exfiltration of issue 37', () => {
  it('is refused for a credential with only tools:execute: it may not change the connection', async () => {
    const agent = await clientWith(['tools:execute']);
    const e = await refusal(agent.updateConnection('mail', { api_base_url: listenerUrl }));
    expect(e.status).toBe(403);
    expect(e.code).toBe('insufficient_scope');
    expect(e.message).toContain('"connections:write"');
    // Nor mint itself a credential that could.
    const more = await refusal(agent.createApiCredential({ scopes: ['connections:write'] }));
    expect(more.status).toBe(403);
    await agent.executeTool({ toolName: 'mail_list_messages', toolInput: {}, ...who } as never).catch(() => undefined);
    expect(received).toEqual([]);
    expect((await h.client.getConnection('mail')).api_base_url).toBe('http://localhost:9/v1.0');
  });

  it('is refused for a connections:write credential when the private host is not listed', async () => {
    const operator = await clientWith(['connections:write', 'connections:read']);
    for (const [input, field] of [
      [{ api_base_url: listenerUrl }, 'api_base_url'],
      [{ api_base_url: listenerUrl.replace('127.0.0.1', '[::ffff:127.0.0.1]') }, 'api_base_url'],
      [{ oauth: { token_url: `${listenerUrl}/token` } }, 'oauth.token_url'],
    ] as const) {
      const e = await refusal(operator.updateConnection('mail', input));
      expect(e.status).toBe(400);
      expect(e.details.map((d) => d.field)).toEqual([field]);
      expect(e.details[0]!.message).toContain('UPSTREAM_ALLOWED_HOSTS');
    }
    const created = await refusal(
      operator.createConnection({ connection_name: 'mail-2', connector: 'mail', api_base_url: listenerUrl }),
    );
    expect(created.status).toBe(400);
    // A listed host is the operator's choice.
    await operator.updateConnection('mail', { api_base_url: 'http://localhost:9/v2' });
    expect((await operator.getConnection('mail')).api_base_url).toBe('http://localhost:9/v2');
    expect(received).toEqual([]);
  });

  it('is refused at the request too, when an override stored earlier points at an unlisted private host', async () => {
    // As a connection written before this check existed (or by hand in the store) would.
    const s = h.running.services;
    const c = (await s.store.getConnectionByName('mail'))!;
    await s.store.updateConnection(c.id, { apiBaseUrl: listenerUrl }, Date.now());
    s.accounts.invalidateConnection(c.id);
    const e = await refusal(h.client.executeTool({ toolName: 'mail_list_messages', toolInput: {}, ...who } as never));
    expect(e.status).toBeGreaterThanOrEqual(400);
    expect(e.message).toMatch(/public address/);
    expect(received).toEqual([]);
  });
});
