/**
 * kill -9 in the middle of a poll loses nothing (issue 41). The service runs as its own process on SQLite and polls
 * the fake Gong for `callintel_call_created`; six new calls span three pages. While the service waits for the
 * second page, the test kills it with SIGKILL (the fake holds that request until the process is gone). The first
 * page's calls were read but not committed: the cursor and the outbox rows go in one transaction. After a restart
 * on the same data directory, every call reaches the Standard Webhooks receiver, each under one webhook-id.
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
import { FakeGong, U_REP, WS_SALES } from '../fakes/gong.ts';

const KEY = 'QWERTY1234567890';
const SECRET = 'gong-secret-crash-7a8b9c';

let dataDir: string;
let child: ServiceProcess | undefined;
let receiver: http.Server;
let gong: FakeGong;
let secret = '';
const received: Array<{ id: string; callId: string }> = [];
const refused: string[] = [];

const env = (url?: string) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ...serviceEnv(dataDir, url),
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  WEBHOOK_RETRY_BASE_MS: '50',
  TRIGGER_MIN_INTERVAL_SECONDS: '1',
  TRIGGER_LEASE_SECONDS: '2',
});

async function tokenFor(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function addCall(n: number, started: Date): string {
  const id = `88${String(Date.now()).slice(-9)}${String(n).padStart(4, '0')}`;
  gong.calls.set(id, {
    id,
    workspaceId: WS_SALES,
    title: `Call ${n}`,
    started: started.toISOString(),
    duration: 60,
    direction: 'Inbound',
    primaryUserId: U_REP,
    parties: [],
    topics: [],
    trackers: [],
    transcript: [],
  });
  return id;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'acs-trigger-crash-'));
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      try {
        const event = new Webhook(secret).verify(body, req.headers as Record<string, string>) as {
          data: { item: { id: string } };
        };
        received.push({ id: String(req.headers['webhook-id']), callId: event.data.item.id });
        res.writeHead(204).end();
      } catch (e) {
        refused.push((e as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET }).start();
});

afterAll(async () => {
  gong.beforeAnswer = undefined;
  if (child && child.proc.exitCode === null) {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
  receiver?.closeAllConnections();
  receiver?.close();
  await gong?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('kill -9 during a poll', () => {
  it('loses no call: after the restart each one arrives, under one webhook-id', async () => {
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
      events: ['trigger.callintel_call_created'],
    });
    expect(hook.status).toBe(201);
    secret = hook.body.secret as string;
    expect(
      (
        await api('POST', '/v1/connections', {
          connection_name: 'gong',
          connector: 'callintel',
          auth_kind: 'api_key',
          api_base_url: gong.url,
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await api('PUT', '/v1/connected-accounts', {
          connection_name: 'gong',
          identifier: 'acme',
          credentials: { access_key: KEY, access_key_secret: SECRET },
        })
      ).status,
    ).toBe(200);
    const created = await api('POST', '/v1/triggers', {
      trigger: 'callintel_call_created',
      connection_name: 'gong',
      identifier: 'acme',
      interval_seconds: 1,
    });
    expect(created.status).toBe(201);

    // The next poll that asks for a second page finds the process killed before its answer.
    let killed = false;
    const dead = child;
    gong.beforeAnswer = async (entry) => {
      if (killed || entry.path !== '/v2/calls' || entry.query.cursor === undefined) return;
      killed = true;
      dead.proc.kill('SIGKILL');
      await dead.exited;
      throw new Error('the caller is gone');
    };
    const base = Date.now() + 1_000;
    const calls = Array.from({ length: 6 }, (_, i) => addCall(i, new Date(base + i)));
    await dead.exited;
    expect(killed).toBe(true);
    // Nothing of the batch in flight was committed, so nothing of it could be sent.
    expect(received).toEqual([]);

    gong.beforeAnswer = undefined;
    child = await spawnService(env(url));
    token = await tokenFor(url);
    while (new Set(received.map((r) => r.callId)).size < calls.length) await sleep(50);
    expect(refused).toEqual([]);
    expect([...new Set(received.map((r) => r.callId))].sort()).toEqual([...calls].sort());
    // One webhook-id per call, whatever was sent twice.
    const idsByCall = new Map<string, Set<string>>();
    for (const r of received) idsByCall.set(r.callId, (idsByCall.get(r.callId) ?? new Set()).add(r.id));
    expect([...idsByCall.values()].every((ids) => ids.size === 1)).toBe(true);
    const status = await api('GET', `/v1/triggers/${String(created.body.id)}`);
    expect(status.body.events_sent).toBe(6);
  });
});
