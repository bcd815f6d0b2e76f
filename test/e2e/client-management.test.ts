/**
 * The client library's MCP-server and webhook methods against the running service: each one reaches its endpoint,
 * returns the documented shape, and a refusal arrives as a ConnectorServiceError naming the field. A receiver on
 * loopback (allowed by WEBHOOK_ALLOWED_HOSTS) gets a real delivery, which the client's verifyWebhook accepts with
 * the secret createWebhook returned, and no longer with the old one after rotateWebhookSecret.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { ConnectorServiceError, verifyWebhook } from '../../packages/client/src/index.ts';

let h: Harness;
let desk: FakeDesk;
let receiver: http.Server;
let receiverUrl: string;
const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  h = await startHarness({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '40' } });
  desk = await new FakeDesk().start();
  desk.addTenant('acme.zendesk.com', 'agent@acme.com', 'zd-token-client-mgmt');
  await h.client.createConnection({
    connection_name: 'desk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
});
afterAll(async () => {
  await h?.close();
  await desk?.close();
  receiver?.closeAllConnections();
  receiver?.close();
});

const refusal = async (p: Promise<unknown>): Promise<ConnectorServiceError> => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectorServiceError);
  return e as ConnectorServiceError;
};

describe('client library: MCP servers', () => {
  it('creates, reads, updates, lists and deletes a server, and makes, lists and revokes its URLs', async () => {
    const created = await h.client.createMcpServer({ name: 'desk-agent', tools: ['helpdesk_ticket_get'] });
    expect(created).toMatchObject({ name: 'desk-agent', tools: ['helpdesk_ticket_get'] });
    expect(await h.client.getMcpServer(created.id)).toEqual(created);
    const updated = await h.client.updateMcpServer(created.id, { mode: 'search' });
    expect(updated.mode).toBe('search');
    expect((await h.client.listMcpServers()).map((s) => s.id)).toContain(created.id);

    const url = await h.client.createMcpUrl(created.id, { identifier: 'user-1', expires_in: 3600 });
    expect(url.url).toMatch(new RegExp(`^${h.url}/mcp/`));
    expect(url.identifier).toBe('user-1');
    const listed = await h.client.listMcpUrls(created.id);
    expect(listed.map((u) => u.id)).toEqual([url.id]);
    expect(JSON.stringify(listed)).not.toContain(url.url.split('/mcp/')[1]);
    expect(await h.client.revokeMcpUrl(created.id, url.id)).toEqual({ revoked: true, id: url.id });
    const gone = await fetch(url.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(gone.status).toBe(401);

    expect(await h.client.deleteMcpServer(created.id)).toEqual({ deleted: true, id: created.id });
    expect((await refusal(h.client.getMcpServer(created.id))).status).toBe(404);
  });

  it('brings a refusal back as a ConnectorServiceError naming the field', async () => {
    const e = await refusal(h.client.createMcpServer({ name: 'x', tools: ['helpdesk_no_such_tool'] }));
    expect(e.status).toBe(400);
    expect(e.details[0]!.field).toMatch(/^tools/);
  });
});

describe('client library: webhooks', () => {
  it('creates an endpoint, receives a verifiable delivery, lists and redelivers it, rotates, updates, deletes', async () => {
    const created = await h.client.createWebhook({ url: receiverUrl, events: ['connected_account.active'] });
    expect(created.secret).toMatch(/^whsec_/);
    expect(await h.client.getWebhook(created.id)).toMatchObject({ id: created.id, url: receiverUrl });
    expect((await h.client.listWebhooks()).map((w) => w.id)).toContain(created.id);

    await h.client.upsertConnectedAccount({
      connectionName: 'desk',
      identifier: 'user-1',
      credentials: { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-token-client-mgmt' },
    });
    while (received.length === 0) await new Promise((r) => setTimeout(r, 25));
    const first = received[0]!;
    const event = verifyWebhook(first.body, first.headers, created.secret);
    expect(event.type).toBe('connected_account.active');

    let page = await h.client.listWebhookDeliveries(created.id, { limit: 10 });
    while (page.deliveries[0]?.status !== 'succeeded') {
      await new Promise((r) => setTimeout(r, 25));
      page = await h.client.listWebhookDeliveries(created.id, { limit: 10 });
    }
    const again = await h.client.redeliverWebhook(created.id, page.deliveries[0].id);
    expect(again.id).toBe(page.deliveries[0].id);
    while (received.length < 2) await new Promise((r) => setTimeout(r, 25));
    expect(received[1]!.headers['webhook-id']).toBe(first.headers['webhook-id']);

    const rotated = await h.client.rotateWebhookSecret(created.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    await h.client.redeliverWebhook(created.id, page.deliveries[0].id);
    while (received.length < 3) await new Promise((r) => setTimeout(r, 25));
    expect(verifyWebhook(received[2]!.body, received[2]!.headers, rotated.secret).type).toBe(
      'connected_account.active',
    );
    expect(() => verifyWebhook(received[2]!.body, received[2]!.headers, created.secret)).toThrow();

    const updated = await h.client.updateWebhook(created.id, {
      events: ['connected_account.active', 'connected_account.deleted'],
    });
    expect(updated.events).toEqual(['connected_account.active', 'connected_account.deleted']);
    await h.client.deleteWebhook(created.id);
    expect((await refusal(h.client.getWebhook(created.id))).status).toBe(404);
  });

  it('refuses a private address naming the field', async () => {
    const e = await refusal(h.client.createWebhook({ url: 'http://10.0.0.1/x', events: ['connected_account.active'] }));
    expect(e.status).toBe(400);
    expect(e.details[0]!.field).toBe('url');
  });
});
