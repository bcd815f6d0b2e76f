/**
 * The webhook outbox survives a crash (issue 15 point 5). The service runs as its own process on SQLite; a webhook
 * endpoint is subscribed, an account upsert is acknowledged, and the service is killed with SIGKILL at once, while
 * the receiver still refuses every delivery (so the event cannot have been acknowledged before the kill). After a
 * restart on the same data directory, with the receiver now accepting, the event arrives, correctly signed, and is
 * acknowledged exactly once.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';
import { FakeDesk } from '../fakes/desk.ts';

const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-api-token-crash-hooks';

let dataDir: string;
let child: ServiceProcess | undefined;
let receiver: http.Server;
let desk: FakeDesk;
let accepting = false;
const received: Array<{ id: string; body: string; headers: http.IncomingHttpHeaders; answered: number }> = [];

const env = (url?: string) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ...serviceEnv(dataDir, url),
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  WEBHOOK_RETRY_BASE_MS: '50',
});

async function tokenFor(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'acs-hook-crash-'));
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const answered = accepting ? 204 : 503;
      received.push({ id: String(req.headers['webhook-id']), body, headers: req.headers, answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
});

afterAll(async () => {
  if (child && child.proc.exitCode === null) {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
  receiver?.closeAllConnections();
  receiver?.close();
  await desk?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('kill -9 between the status change and its delivery', () => {
  it('delivers the event after the restart, exactly once acknowledged', async () => {
    child = await spawnService(env());
    const url = child.url;
    let token = await tokenFor(url);
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const hook = await api('POST', '/v1/webhooks', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`,
      events: ['connected_account.active'],
    });
    expect(hook.status).toBe(201);
    const secret = hook.body.secret as string;
    expect(
      (
        await api('POST', '/v1/connections', {
          connection_name: 'helpdesk',
          connector: 'helpdesk',
          api_base_url: desk.baseUrlTemplate,
        })
      ).status,
    ).toBe(201);
    const upsert = await api('PUT', '/v1/connected-accounts', {
      connection_name: 'helpdesk',
      identifier: 'crash-user',
      credentials: { domain: DOMAIN, email: EMAIL, api_token: API_TOKEN },
    });
    expect(upsert.status).toBe(200);
    child.proc.kill('SIGKILL');
    await child.exited;
    expect(received.every((r) => r.answered !== 204)).toBe(true);

    accepting = true;
    child = await spawnService(env(url));
    token = await tokenFor(url);
    const acknowledged = await new Promise<(typeof received)[number]>((resolve) => {
      const poll = setInterval(() => {
        const hit = received.find((r) => r.answered === 204);
        if (hit) {
          clearInterval(poll);
          resolve(hit);
        }
      }, 25);
    });
    const event = new Webhook(secret).verify(acknowledged.body, {
      'webhook-id': String(acknowledged.headers['webhook-id']),
      'webhook-timestamp': String(acknowledged.headers['webhook-timestamp']),
      'webhook-signature': String(acknowledged.headers['webhook-signature']),
    }) as { type: string; data: { identifier: string; status: string } };
    expect(event.type).toBe('connected_account.active');
    expect(event.data).toMatchObject({ identifier: 'crash-user', status: 'ACTIVE' });
    // Give a duplicate every chance to show up: none may.
    await new Promise((r) => setTimeout(r, 1500));
    expect(received.filter((r) => r.answered === 204)).toHaveLength(1);
    const page = await api('GET', `/v1/webhooks/${hook.body.id as string}/deliveries`);
    const [delivery] = page.body.deliveries as Array<{ status: string; event_id: string }>;
    expect(delivery).toMatchObject({ status: 'succeeded', event_id: acknowledged.id });
  });
});
