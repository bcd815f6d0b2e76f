/**
 * Polling triggers end to end (issue 41): the real service polls the fake Gong (which speaks Gong's call list,
 * paging and errors) for `callintel_call_created`, while the test adds calls. Every new call reaches a Standard
 * Webhooks receiver once, verified with the `standardwebhooks` library; calls older than the instance are not sent;
 * an outage marks the instance failing and back, without losing the calls of the outage; pause and resume; the
 * instance goes with its account.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeGong, U_REP, WS_SALES, type GongCall } from '../fakes/gong.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';

const KEY = 'QWERTY1234567890';
const SECRET = 'gong-secret-trigger-4d5e6f';
const ADMIN_PASSWORD = 'trigger-dashboard-admin-7f3e';
const who = { connection_name: 'callintel-key', identifier: 'acme' };

interface Received {
  id: string;
  type: string;
  data: { trigger_instance_id?: string; item?: { id?: string }; item_id?: string; status?: string };
}

let h: Harness;
let gong: FakeGong;
let receiver: { url: string; close(): void };
let secret: string;
const received: Received[] = [];
const refused: string[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (;;) {
    const v = await what();
    if (v !== undefined) return v;
    await sleep(25);
  }
}

let seq = 0;
function addCall(started: Date, title: string): string {
  const id = `77${String(Date.now()).slice(-9)}${String(seq++).padStart(4, '0')}`;
  const call: GongCall = {
    id,
    workspaceId: WS_SALES,
    title,
    started: started.toISOString(),
    duration: 600,
    direction: 'Outbound',
    primaryUserId: U_REP,
    parties: [],
    topics: [],
    trackers: [],
    transcript: [],
  };
  gong.calls.set(id, call);
  return id;
}

const listCalls = () => gong.requests.filter((r) => r.path === '/v2/calls').length;
const itemEvents = (instance: string) =>
  received.filter((r) => r.type === 'trigger.callintel_call_created' && r.data.trigger_instance_id === instance);

beforeAll(async () => {
  receiver = await startWebhookReceiver({ received, refused, secret: () => secret });
  const receiverUrl = receiver.url;
  gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET }).start();
  h = await startHarness({
    env: {
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_BASE_MS: '40',
      TRIGGER_MIN_INTERVAL_SECONDS: '1',
      ADMIN_PASSWORD,
    },
  });
  await h.client.createConnection({
    connection_name: who.connection_name,
    connector: 'callintel',
    auth_kind: 'api_key',
    api_base_url: gong.url,
  });
  await h.client.upsertConnectedAccount({
    connectionName: who.connection_name,
    identifier: who.identifier,
    credentials: { access_key: KEY, access_key_secret: SECRET },
  });
  const hook = await h.client.createWebhook({
    url: receiverUrl,
    events: ['trigger.callintel_call_created', 'trigger.failing', 'trigger.recovered'],
  });
  secret = hook.secret;
});
afterAll(async () => {
  await h?.close();
  await gong?.close();
  receiver?.close();
});

describe('polling triggers', () => {
  let instance: string;

  it('lists the trigger types with their config and event schemas', async () => {
    const types = await h.client.listTriggerTypes('callintel');
    const t = types.find((x) => x.name === 'callintel_call_created')!;
    expect(t.kind).toBe('polling');
    expect(t.event_type).toBe('trigger.callintel_call_created');
    expect(Object.keys((t.config_schema as { properties: object }).properties)).toEqual(['workspace_id']);
  });

  it('refuses a bad config, an unknown trigger, another connector’s trigger and an unknown event type', async () => {
    await expect(
      h.client.createTrigger({ trigger: 'callintel_call_created', ...who, config: { workspace_id: 'abc' } }),
    ).rejects.toMatchObject({ status: 400, code: 'invalid_input' });
    await expect(
      h.client.createTrigger({ trigger: 'callintel_call_created', ...who, config: { colour: 'red' } }),
    ).rejects.toThrow(/config has no setting "colour"/);
    await expect(h.client.createTrigger({ trigger: 'callintel_nothing', ...who })).rejects.toMatchObject({
      status: 404,
      code: 'trigger_not_found',
    });
    await expect(h.client.createTrigger({ trigger: 'drive_file_changed', ...who })).rejects.toMatchObject({
      status: 400,
      code: 'trigger_connector_mismatch',
    });
    await expect(
      h.client.createWebhook({ url: 'http://127.0.0.1:9/x', events: ['trigger.callintel_nothing'] }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('sends each call added while the service runs once, in order, and no call older than the instance', async () => {
    const before = new Date(Date.now() - 3_600_000);
    addCall(before, 'Before the instance');
    const created = await h.client.createTrigger({
      trigger: 'callintel_call_created',
      ...who,
      config: { workspace_id: WS_SALES },
      interval_seconds: 1,
    });
    instance = created.id;
    expect(created.status).toBe('active');
    expect(created.interval_seconds).toBe(1);

    const added: string[] = [];
    // Calls arrive while the service polls; Gong pages by 2, so a poll may read several pages.
    for (let i = 0; i < 5; i++) {
      added.push(addCall(new Date(Date.now() + 1000 + i), `New call ${i}`));
      // A call processed late, which started before the instance existed, is not new to it.
      if (i === 2) addCall(new Date(Date.now() - 600_000), 'Late but old');
      const polls = listCalls();
      await until(() => (listCalls() >= polls + 1 ? true : undefined));
    }
    await until(() => (itemEvents(instance).length >= added.length ? true : undefined));
    // A few more polls: nothing is sent again.
    const polls = listCalls();
    await until(() => (listCalls() >= polls + 3 ? true : undefined));
    const events = itemEvents(instance);
    expect(events.map((e) => e.data.item!.id)).toEqual(added);
    expect(new Set(events.map((e) => e.id)).size).toBe(added.length);
    expect(refused).toEqual([]);
    const got = await h.client.getTrigger(instance);
    expect(got.events_sent).toBe(5);
    expect(got.last_event_at).not.toBeNull();
    expect(got.last_poll_at).not.toBeNull();
    // Each poll asked Gong for calls since the instance began (less its look-back, never before the instance).
    const q = gong.requests.filter((r) => r.path === '/v2/calls').at(-1)!.query;
    expect(Date.parse(String(q.fromDateTime))).toBeGreaterThanOrEqual(Date.parse(created.created_at));
    expect(q.workspaceId).toBe(WS_SALES);
  });

  it('an outage makes the instance failing and then recovered; the calls of the outage are still sent', async () => {
    gong.outage = 1_000;
    await until(async () => ((await h.client.getTrigger(instance)).status === 'failing' ? true : undefined));
    const during = addCall(new Date(Date.now() + 1000), 'During the outage');
    const failing = await until(() => received.find((r) => r.type === 'trigger.failing'));
    expect(failing.data.trigger_instance_id).toBe(instance);
    const view = await h.client.getTrigger(instance);
    expect(view.last_error).toMatch(/HTTP 500/);
    // The dashboard lists it among the failing, with its last error.
    const dashboard = new DashboardClient(h.url);
    expect((await dashboard.signIn(ADMIN_PASSWORD)).status).toBe(303);
    const page = await dashboard.get('/dashboard/triggers?status=failing');
    expect(page.status).toBe(200);
    expect(page.html).toContain(instance);
    expect(page.html).toContain('HTTP 500');
    expect((await dashboard.get('/dashboard/triggers?status=paused')).html).not.toContain(instance);
    gong.outage = 0;
    // Back off doubles the interval; the resume below polls at once.
    await h.client.resumeTrigger(instance);
    await until(() => received.find((r) => r.type === 'trigger.recovered'));
    await until(() => itemEvents(instance).find((e) => e.data.item?.id === during));
    expect((await h.client.getTrigger(instance)).status).toBe('active');
  });

  it('a paused instance polls nothing; resumed, it sends what came meanwhile', async () => {
    const paused = await h.client.pauseTrigger(instance);
    expect(paused.status).toBe('paused');
    expect(paused.next_poll_at).toBeNull();
    await sleep(50);
    const polls = listCalls();
    const meanwhile = addCall(new Date(Date.now() + 1000), 'While paused');
    await sleep(2_500);
    expect(listCalls()).toBe(polls);
    expect((await h.client.listTriggers({ status: 'paused' })).triggers.map((t) => t.id)).toEqual([instance]);
    await h.client.resumeTrigger(instance);
    await until(() => itemEvents(instance).find((e) => e.data.item?.id === meanwhile));
  });

  it('lists by connection and identifier with a cursor, and removes an instance with its account', async () => {
    const second = await h.client.createTrigger({ trigger: 'callintel_call_created', ...who, interval_seconds: 60 });
    const page1 = await h.client.listTriggers({ ...who, limit: 1 });
    expect(page1.triggers.map((t) => t.id)).toEqual([instance]);
    const page2 = await h.client.listTriggers({ ...who, limit: 1, cursor: page1.next_cursor! });
    expect(page2.triggers.map((t) => t.id)).toEqual([second.id]);
    expect(page2.next_cursor).toBeNull();
    await h.client.deleteTrigger(second.id);
    await expect(h.client.getTrigger(second.id)).rejects.toMatchObject({ status: 404 });
    const account = await h.client.getOrCreateConnectedAccount({
      connectionName: who.connection_name,
      identifier: who.identifier,
    });
    await h.client.deleteConnectedAccount(account.id);
    await expect(h.client.getTrigger(instance)).rejects.toMatchObject({ status: 404 });
  });
});
