/**
 * Webhooks (issue 15 point 5), end to end: a receiver on loopback (allowed by WEBHOOK_ALLOWED_HOSTS) subscribes to
 * account lifecycle events. Every delivery it gets verifies with the `standardwebhooks` library's own verifier and
 * with the client library's `verifyWebhook`; a receiver that fails 3 times and then succeeds has the event
 * acknowledged exactly once (4 attempts in the delivery log, no later attempt); the payload never carries a
 * credential; redelivery sends the same `webhook-id` again; a rotated secret signs what follows; disconnect and
 * delete send their events; a URL at a private address is refused.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { ScalekitClient } from '@scalekit-sdk/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { record } from '../reliability/summary.ts';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { verifyWebhook, WebhookVerificationError } from '../../packages/client/src/index.ts';

const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-api-token-webhooks-7c1d';

interface Received {
  id: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  answered: number;
}

let h: Harness;
let desk: FakeDesk;
let receiver: http.Server;
let receiverUrl: string;
const received: Received[] = [];
/**
 * How the receiver answers the next deliveries of an event type, first to last (then 200). By type, not by arrival:
 * the deliveries of one round go out at once, so the order in which two events arrive is not fixed.
 */
const script = new Map<string, number[]>();
const typeOf = (body: string): string => {
  try {
    return String((JSON.parse(body) as { type?: unknown }).type);
  } catch {
    return '';
  }
};

let token: string;
async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (;;) {
    const v = await what();
    if (v !== undefined) return v;
    await sleep(25);
  }
}

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  event: { type: string; data: Record<string, unknown> };
}

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const answered = script.get(typeOf(body))?.shift() ?? 200;
      received.push({ id: String(req.headers['webhook-id']), headers: req.headers, body, answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  h = await startHarness({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '40' } });
  const t = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: 'acs_test_client', client_secret: 'acs_sk_test_secret_0123456789abcdef' }),
  });
  token = ((await t.json()) as { access_token: string }).access_token;
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
  await h.client.createConnection({
    connection_name: 'helpdesk',
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

describe('webhooks', () => {
  let secret: string;
  let webhookId: string;

  it('refuses a URL at a private address, and a bad event, naming the field', async () => {
    for (const url of [
      'http://10.1.2.3/hooks',
      'http://localhost:9/hooks',
      'http://[::1]:8080/x',
      'http://169.254.169.254/',
      // Issue 34, finding 8: the same names spelled with a trailing dot or in capitals were accepted.
      'http://localhost.:9/hooks',
      'http://LOCALHOST.:9/hooks',
      'http://hooks.localhost./x',
    ]) {
      const r = await api<{ error: { code: string; details: Array<{ field: string; message: string }> } }>(
        'POST',
        '/v1/webhooks',
        { url, events: ['connected_account.active'] },
      );
      expect(r.status, url).toBe(400);
      expect(r.body.error.details[0]!.field).toBe('url');
      const message = r.body.error.details[0]!.message;
      expect(message).toMatch(/public address/);
      // A name's addresses are never told (they would map the service's internal names).
      if (!/\/\/[\d[]/.test(url)) expect(message).not.toMatch(/127\.0\.0\.1|::1/);
    }
    record({
      category: 'host spellings',
      what: 'webhook URLs naming loopback with a trailing dot, in capitals or under .localhost, refused without addresses',
      tried: 3,
      failed: 0,
    });
    const bad = await api<{ error: { details: Array<{ field: string }> } }>('POST', '/v1/webhooks', {
      url: receiverUrl,
      events: ['connected_account.exploded'],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0]!.field).toMatch(/^events/);
    const none = await api<{ error: { details: Array<{ field: string; message: string }> } }>('POST', '/v1/webhooks', {
      url: receiverUrl,
      events: [],
    });
    expect(none.status).toBe(400);
    expect(none.body.error.details).toEqual([{ field: 'events', message: 'must have at least one item' }]);
  });

  it('creates an endpoint whose secret is shown once', async () => {
    const r = await api<{ id: string; secret: string; events: string[] }>('POST', '/v1/webhooks', {
      url: receiverUrl,
      events: [
        'connected_account.created',
        'connected_account.active',
        'connected_account.disconnected',
        'connected_account.deleted',
      ],
    });
    expect(r.status).toBe(201);
    expect(r.body.secret).toMatch(/^whsec_/);
    secret = r.body.secret;
    webhookId = r.body.id;
    const got = await api<Record<string, unknown>>('GET', `/v1/webhooks/${webhookId}`);
    expect(got.body).not.toHaveProperty('secret');
    expect(JSON.stringify((await api('GET', '/v1/webhooks')).body)).not.toContain(secret);
  });

  it('delivers signed events; a receiver failing 3 times then succeeding acknowledges the event exactly once', async () => {
    // created: 200 at once; active: 500, 500, 503, then 200.
    script.set('connected_account.active', [500, 500, 503]);
    await h.client.upsertConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'hooked-user',
      credentials: { domain: DOMAIN, email: EMAIL, api_token: API_TOKEN },
    });
    const deliveries = await until(async () => {
      const { body } = await api<{ deliveries: Delivery[] }>('GET', `/v1/webhooks/${webhookId}/deliveries`);
      const active = body.deliveries.find((d) => d.event_type === 'connected_account.active');
      return active?.status === 'succeeded' ? body.deliveries : undefined;
    });
    const active = deliveries.find((d) => d.event_type === 'connected_account.active')!;
    expect(active.attempts).toBe(4);
    expect(active.last_status_code).toBe(200);
    expect(active.event.data).toMatchObject({
      identifier: 'hooked-user',
      status: 'ACTIVE',
      connection_name: 'helpdesk',
    });
    // Nothing is attempted after the acknowledgement.
    await sleep(500);
    const forActive = received.filter((r) => r.id === active.event_id);
    expect(forActive.map((r) => r.answered)).toEqual([500, 500, 503, 200]);
    expect(received.filter((r) => r.id === active.event_id && r.answered === 200)).toHaveLength(1);

    const created = received.find(
      (r) => (JSON.parse(r.body) as { type: string }).type === 'connected_account.created',
    )!;
    expect(created.answered).toBe(200);
    for (const r of received) {
      // The library's own verifier, and the client library's wrapper of it.
      const headers = {
        'webhook-id': String(r.headers['webhook-id']),
        'webhook-timestamp': String(r.headers['webhook-timestamp']),
        'webhook-signature': String(r.headers['webhook-signature']),
      };
      expect(new Webhook(secret).verify(r.body, headers)).toEqual(JSON.parse(r.body));
      expect(verifyWebhook(r.body, r.headers as Record<string, string>, secret).data.identifier).toBe('hooked-user');
      expect(() => verifyWebhook(r.body.replace('hooked-user', 'other-user'), headers, secret)).toThrow(
        WebhookVerificationError,
      );
      expect(r.body).not.toContain(API_TOKEN);
      expect(r.headers['content-type']).toBe('application/json');
    }
  });

  it('redelivers with the same webhook-id, and signs with a rotated secret only', async () => {
    const { body } = await api<{ deliveries: Delivery[] }>('GET', `/v1/webhooks/${webhookId}/deliveries?limit=1`);
    const latest = body.deliveries[0]!;
    const before = received.length;
    const rotated = await api<{ secret: string }>('POST', `/v1/webhooks/${webhookId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(secret);
    const again = await api<{ delivery: Delivery }>(
      'POST',
      `/v1/webhooks/${webhookId}/deliveries/${latest.id}/redeliver`,
    );
    expect(again.status).toBe(200);
    const r = await until(() => received.slice(before).find((x) => x.id === latest.event_id));
    const headers = r.headers as Record<string, string>;
    expect(verifyWebhook(r.body, headers, rotated.body.secret).type).toBe(latest.event_type);
    expect(() => verifyWebhook(r.body, headers, secret)).toThrow(WebhookVerificationError);
    secret = rotated.body.secret;
    const missing = await api('POST', `/v1/webhooks/${webhookId}/deliveries/whd_nope/redeliver`);
    expect(missing.status).toBe(404);
  });

  it('sends disconnected and deleted events', async () => {
    const account = await h.client.getOrCreateConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'hooked-user',
    });
    await h.client.disconnectConnectedAccount(account.id);
    await h.client.deleteConnectedAccount(account.id);
    const types = await until(() => {
      const t = received.map((r) => (JSON.parse(r.body) as { type: string }).type);
      return t.includes('connected_account.deleted') ? t : undefined;
    });
    expect(types).toContain('connected_account.disconnected');
    const deleted = received.find((r) => r.body.includes('connected_account.deleted'))!;
    expect(verifyWebhook(deleted.body, deleted.headers as Record<string, string>, secret).data).toMatchObject({
      connected_account_id: account.id,
      status: 'DELETED',
    });
  });

  it('reports an account deleted through the Scalekit API as deleted', async () => {
    const account = await h.client.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'sk-gone' });
    const sk = new ScalekitClient(h.url, TEST_CLIENT_ID, TEST_CLIENT_SECRET);
    await sk.actions.deleteConnectedAccount({ connectionName: 'helpdesk', identifier: 'sk-gone' });
    const deleted = () =>
      received
        .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
        .filter((e) => e.type === 'connected_account.deleted' && e.data.connected_account_id === account.id);
    const events = await until(() => (deleted().length ? deleted() : undefined));
    expect(events[0]!.data).toMatchObject({ identifier: 'sk-gone', status: 'DELETED', connection_name: 'helpdesk' });
  });

  it('reports every account removed with its connection as deleted', async () => {
    await h.client.createConnection({
      connection_name: 'helpdesk-doomed',
      connector: 'helpdesk',
      api_base_url: desk.baseUrlTemplate,
    });
    const ids: string[] = [];
    for (const identifier of ['doomed-1', 'doomed-2', 'doomed-3']) {
      const a = await h.client.getOrCreateConnectedAccount({ connectionName: 'helpdesk-doomed', identifier });
      ids.push(a.id);
    }
    await h.client.deleteConnection('helpdesk-doomed');
    const deletedEvents = () =>
      received
        .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
        .filter((e) => e.type === 'connected_account.deleted' && e.data.connection_name === 'helpdesk-doomed');
    const events = await until(() => (deletedEvents().length >= 3 ? deletedEvents() : undefined));
    expect(events.map((e) => e.data.connected_account_id).sort()).toEqual([...ids].sort());
    for (const e of events) {
      expect(e.data).toMatchObject({ status: 'DELETED', reason: 'its connection was deleted', connector: 'helpdesk' });
    }
    // Exactly one event each.
    await sleep(300);
    expect(deletedEvents()).toHaveLength(3);
  });
});
