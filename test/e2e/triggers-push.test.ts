/**
 * Push triggers end to end (issue 41): the real service registers each instance with a fake provider that speaks
 * the provider's registration API and notification format and checks what it receives (test/fakes/push-providers.ts),
 * the fake notifies the instance's ingress URL, and the event reaches a Standard Webhooks receiver (verified with
 * the `standardwebhooks` library) once, under the same webhook-id for the same provider item. Refusals (bad
 * signature, stale timestamp, wrong clientState, unknown URL) produce no event; Graph subscriptions are renewed
 * before they expire and follow lifecycle notifications; pause, delete and account deletion unregister.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FakeApifyWebhooks,
  FakeGraphSubscriptions,
  FakeHubSpotApp,
  FakeZendeskWebhooks,
  post,
  type DeskTicket,
  type GraphMessage,
} from '../fakes/push-providers.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

const GRAPH_TOKEN = 'graph-access-token-5f1c';
const DESK_EMAIL = 'agent@acme.com';
const DESK_TOKEN = 'desk-api-token-8a7b6c';
const APIFY_TOKEN = 'apify_api_token_4d3e2f';
const HUBSPOT_SECRET = 'hubspot-app-client-secret-9e8d7c';
const ACTOR = 'moJRLRc85AitArpNN';

interface Received {
  id: string;
  type: string;
  data: { trigger_instance_id?: string; item?: Record<string, unknown>; item_id?: string; status?: string };
}

let h: Harness;
let graph: FakeGraphSubscriptions;
let desk: FakeZendeskWebhooks;
let apify: FakeApifyWebhooks;
let hubspot: FakeHubSpotApp;
let receiver: { url: string; close(): void };
let secret: string;
const received: Received[] = [];
const refused: string[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (;;) {
    const v = await what();
    if (v !== undefined && v !== false) return v;
    await sleep(25);
  }
}
const eventsOf = (instance: string) => received.filter((r) => r.data.trigger_instance_id === instance);
const itemEvent = (instance: string, pred: (item: Record<string, unknown>) => boolean) =>
  eventsOf(instance).find((r) => r.data.item && pred(r.data.item));

let seq = 0;
function message(subject: string): GraphMessage {
  const id = `AAMkAGI2TG93AAA=${seq++}`;
  return {
    id,
    subject,
    receivedDateTime: new Date().toISOString(),
    from: { emailAddress: { name: 'Ada', address: 'ada@example.com' } },
    bodyPreview: `About ${subject}`,
  };
}
function ticket(id: number, subject: string): DeskTicket {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { id, subject, status: 'new', priority: 'normal', requesterId: 9001, createdAt: now, updatedAt: now };
}

beforeAll(async () => {
  receiver = await startWebhookReceiver({ received, refused, secret: () => secret });
  const receiverUrl = receiver.url;
  graph = await new FakeGraphSubscriptions(GRAPH_TOKEN).start();
  desk = await new FakeZendeskWebhooks(DESK_EMAIL, DESK_TOKEN).start();
  apify = await new FakeApifyWebhooks(APIFY_TOKEN).start();
  hubspot = await new FakeHubSpotApp(HUBSPOT_SECRET).start();
  h = await startHarness({
    env: {
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_BASE_MS: '40',
      TRIGGER_MIN_INTERVAL_SECONDS: '1',
      TRIGGER_INGRESS_MAX_BYTES: '65536',
      TRIGGER_INGRESS_MAX_PENDING: '8',
    },
  });
  await h.client.createConnection({
    connection_name: 'mail',
    connector: 'mail',
    client_id: 'graph-app',
    client_secret: 'graph-app-secret-1a2b',
    api_base_url: graph.url,
  });
  await h.client.upsertConnectedAccount({
    connectionName: 'mail',
    identifier: 'ada',
    credentials: { access_token: GRAPH_TOKEN, expires_in: 3600 },
  });
  await h.client.createConnection({
    connection_name: 'desk',
    connector: 'helpdesk',
    auth_kind: 'api_key',
    api_base_url: `${desk.url}/api`,
  });
  await h.client.upsertConnectedAccount({
    connectionName: 'desk',
    identifier: 'acme',
    credentials: { domain: 'acme.zendesk.com', email: DESK_EMAIL, api_token: DESK_TOKEN },
  });
  await h.client.createConnection({ connection_name: 'apify', connector: 'scraper', api_base_url: apify.url });
  for (const identifier of ['runner', 'other']) {
    await h.client.upsertConnectedAccount({ connectionName: 'apify', identifier, credentials: { token: APIFY_TOKEN } });
  }
  await h.client.createConnection({
    connection_name: 'hubspot',
    connector: 'crm',
    client_id: 'hubspot-app',
    client_secret: HUBSPOT_SECRET,
    api_base_url: hubspot.url,
  });
  hubspot.portals.set('hs-token-portal-a', 1_110_001);
  hubspot.portals.set('hs-token-portal-b', 2_220_002);
  await h.client.upsertConnectedAccount({
    connectionName: 'hubspot',
    identifier: 'portal-a',
    credentials: { access_token: 'hs-token-portal-a', expires_in: 3600 },
  });
  await h.client.upsertConnectedAccount({
    connectionName: 'hubspot',
    identifier: 'portal-b',
    credentials: { access_token: 'hs-token-portal-b', expires_in: 3600 },
  });
  const hook = await h.client.createWebhook({
    url: receiverUrl,
    events: [
      'trigger.mail_message_received',
      'trigger.mail_event_changed',
      'trigger.helpdesk_ticket_created',
      'trigger.helpdesk_ticket_updated',
      'trigger.scraper_run_finished',
      'trigger.crm_contact_created',
      'trigger.crm_deal_updated',
      'trigger.failing',
      'trigger.recovered',
    ],
  });
  secret = hook.secret;
});
afterAll(async () => {
  await h?.close();
  await Promise.all([graph?.close(), desk?.close(), apify?.close(), hubspot?.close()]);
  receiver?.close();
});

describe('mail: Graph change notifications', () => {
  let instance: string;
  let url: string;

  it('creating the instance subscribes, after answering both validation requests', async () => {
    const t = await h.client.createTrigger({
      trigger: 'mail_message_received',
      connection_name: 'mail',
      identifier: 'ada',
    });
    instance = t.id;
    expect(t.status).toBe('active');
    expect(t.kind).toBe('push');
    const sub = graph.subscriptionFor("me/mailFolders('Inbox')/messages")!;
    expect(sub.changeType).toBe('created');
    url = sub.notificationUrl;
    expect(url.startsWith(`${t.ingress_url}/`)).toBe(true);
    expect(url.endsWith(`/${instance}`)).toBe(true);
    expect(sub.lifecycleNotificationUrl).toBe(url);
    expect(sub.clientState!.length).toBeGreaterThanOrEqual(32);
    expect(graph.validations).toEqual([
      { url, ok: true },
      { url, ok: true },
    ]);
    expect(graph.problems).toEqual([]);
  });

  it('a notification is answered 202 and its message, read from Graph, reaches the receiver once', async () => {
    const m = message('Quarterly numbers');
    expect((await graph.receive(m)).map((r) => r.status)).toEqual([202]);
    const got = await until(() => itemEvent(instance, (i) => i.id === m.id));
    expect(got.type).toBe('trigger.mail_message_received');
    expect(got.data.item).toMatchObject({
      id: m.id,
      subject: 'Quarterly numbers',
      bodyPreview: 'About Quarterly numbers',
    });
    // The same notification again (Graph retries): the same webhook-id.
    await graph.receive(m);
    const marker = message('marker one');
    await graph.receive(marker);
    await until(() => itemEvent(instance, (i) => i.id === marker.id));
    const copies = eventsOf(instance).filter((r) => r.data.item!.id === m.id);
    expect(new Set(copies.map((c) => c.id)).size).toBe(1);
  });

  it('a wrong clientState is answered alike, counted, and sends nothing', async () => {
    const before = h.running.services.push.counters.refused;
    const forged = message('Forged');
    expect((await graph.receive(forged, { clientState: 'not-the-secret' })).map((r) => r.status)).toEqual([202]);
    const marker = message('marker two');
    await graph.receive(marker);
    await until(() => itemEvent(instance, (i) => i.id === marker.id));
    expect(itemEvent(instance, (i) => i.id === forged.id)).toBeUndefined();
    expect(h.running.services.push.counters.refused).toBe(before + 1);
  });

  it('beyond TRIGGER_INGRESS_MAX_PENDING notifications still being read, 503 with Retry-After; none is lost', async () => {
    let release!: () => void;
    graph.readsHeld = new Promise<void>((r) => (release = r));
    const before = { deferred: h.running.services.push.counters.deferred, received: eventsOf(instance).length };
    const held = Array.from({ length: 8 }, (_, i) => message(`held ${i}`));
    for (const m of held) expect((await graph.receive(m)).map((r) => r.status)).toEqual([202]);
    const over = message('over the limit');
    const [busy] = await graph.receive(over);
    expect(busy).toMatchObject({ status: 503, retryAfter: '5' });
    expect(JSON.parse(busy!.body)).toEqual({ error: 'busy' });
    expect(h.running.services.push.counters.deferred).toBe(before.deferred + 1);
    const scraped = await (await fetch(`${h.url}/metrics`)).text();
    expect(scraped).toContain(`acs_trigger_push_total{what="deferred"} ${before.deferred + 1}`);
    graph.readsHeld = undefined;
    release();
    // Every held notification is delivered; the provider's retry of the refused one is accepted.
    await until(() => held.every((m) => itemEvent(instance, (i) => i.id === m.id)));
    expect((await graph.receive(over)).map((r) => r.status)).toEqual([202]);
    await until(() => itemEvent(instance, (i) => i.id === over.id));
    expect(eventsOf(instance).length).toBe(before.received + 9);
  });

  it('an unknown instance under the same ingress is answered as a refused clientState is', async () => {
    const base = url.slice(0, url.lastIndexOf('/'));
    const body = JSON.stringify({ value: [{ subscriptionId: 'x', clientState: 'y', changeType: 'created' }] });
    const unknown = await post(`${base}/trg_0000000000000000000000`, body, { 'content-type': 'application/json' });
    const wrong = await post(url, body, { 'content-type': 'application/json' });
    expect(unknown).toEqual(wrong);
    expect(unknown.status).toBe(202);
  });

  it('reauthorizationRequired renews the subscription; subscriptionRemoved makes a new one', async () => {
    const sub = graph.subscriptionFor("me/mailFolders('Inbox')/messages")!;
    const renewals = sub.renewals;
    expect((await graph.lifecycle(sub, 'reauthorizationRequired')).status).toBe(202);
    await until(() => sub.renewals > renewals);
    // A lifecycle notification with a wrong clientState changes nothing.
    await graph.lifecycle(sub, 'subscriptionRemoved', { clientState: 'forged' });
    graph.subscriptions.set(sub.id, sub);
    await sleep(50);
    expect(graph.subscriptions.size).toBe(1);
    await graph.lifecycle(sub, 'subscriptionRemoved');
    const fresh = await until(() => {
      const s = graph.subscriptionFor("me/mailFolders('Inbox')/messages");
      return s && s.id !== sub.id ? s : undefined;
    });
    expect(fresh.notificationUrl).toBe(url);
    const m = message('After resubscribing');
    await graph.receive(m);
    await until(() => itemEvent(instance, (i) => i.id === m.id));
    expect(graph.problems).toEqual([]);
  });

  it('missed: what arrived meanwhile is read from the Inbox and sent', async () => {
    const lost = message('Never notified');
    graph.messages.set(lost.id, lost);
    const sub = graph.subscriptionFor("me/mailFolders('Inbox')/messages")!;
    await graph.lifecycle(sub, 'missed');
    const got = await until(() => itemEvent(instance, (i) => i.id === lost.id));
    expect(got.data.item!.subject).toBe('Never notified');
    expect(graph.requests.some((r) => r.method === 'GET' && r.path === "/v1.0/me/mailFolders('Inbox')/messages")).toBe(
      true,
    );
  });

  it('a subscription granted for less than asked is renewed before it expires', async () => {
    graph.grantMs = 3_000;
    const t = await h.client.createTrigger({
      trigger: 'mail_event_changed',
      connection_name: 'mail',
      identifier: 'ada',
    });
    const sub = graph.subscriptionFor('me/events')!;
    expect(sub.changeType).toBe('created,updated,deleted');
    const firstExpiry = Date.parse(sub.expirationDateTime);
    await until(() => sub.renewals >= 1);
    expect(Date.parse(sub.expirationDateTime)).toBeGreaterThan(firstExpiry);
    graph.grantMs = undefined;
    const ev = {
      id: 'AAMkAGVmMDEzMTM4LTZmYWUtNDdkNC1hMDZiLTU1OGY5OTZhYmY4OABGAAA=',
      subject: 'Planning',
      lastModifiedDateTime: new Date().toISOString(),
      start: { dateTime: '2026-12-01T10:00:00.0000000', timeZone: 'UTC' },
      end: { dateTime: '2026-12-01T11:00:00.0000000', timeZone: 'UTC' },
    };
    await graph.changeEvent(ev, 'created');
    const created = await until(() => itemEvent(t.id, (i) => i.id === ev.id && i.change_type === 'created'));
    expect(created.data.item!.subject).toBe('Planning');
    await graph.changeEvent(ev, 'deleted');
    const deleted = await until(() => itemEvent(t.id, (i) => i.id === ev.id && i.change_type === 'deleted'));
    expect(deleted.data.item).toEqual({ id: ev.id, change_type: 'deleted' });
    await h.client.deleteTrigger(t.id);
    expect(graph.deleted).toContain(sub.id);
  });

  it('pause removes the subscription, resume subscribes again, delete unsubscribes', async () => {
    const before = graph.subscriptionFor("me/mailFolders('Inbox')/messages")!;
    const paused = await h.client.pauseTrigger(instance);
    expect(paused.status).toBe('paused');
    expect(graph.deleted).toContain(before.id);
    expect(graph.subscriptionFor("me/mailFolders('Inbox')/messages")).toBeUndefined();
    const resumed = await h.client.resumeTrigger(instance);
    expect(resumed.status).toBe('active');
    const again = graph.subscriptionFor("me/mailFolders('Inbox')/messages")!;
    expect(again.id).not.toBe(before.id);
    await h.client.deleteTrigger(instance);
    expect(graph.deleted).toContain(again.id);
    expect(graph.subscriptions.size).toBe(0);
    expect(graph.problems).toEqual([]);
  });
});

describe('helpdesk: Zendesk webhook and trigger', () => {
  let created: string;
  let updated: string;

  it('creating instances makes a webhook and a trigger notifying it, per instance', async () => {
    created = (
      await h.client.createTrigger({ trigger: 'helpdesk_ticket_created', connection_name: 'desk', identifier: 'acme' })
    ).id;
    updated = (
      await h.client.createTrigger({ trigger: 'helpdesk_ticket_updated', connection_name: 'desk', identifier: 'acme' })
    ).id;
    expect(desk.webhooks.size).toBe(2);
    expect([...desk.triggers.values()].map((t) => t.updateType).sort()).toEqual(['Change', 'Create']);
    expect([...desk.webhooks.values()].map((w) => w.endpoint.split('/').pop()).sort()).toEqual(
      [created, updated].sort(),
    );
    expect(desk.problems).toEqual([]);
  });

  it('a signed notification reaches the receiver once; the update trigger sends each update', async () => {
    const t = ticket(4401, 'Printer on fire');
    expect((await desk.ticketEvent(t, 'Create')).map((r) => r.status)).toEqual([200]);
    const got = await until(() => itemEvent(created, (i) => i.id === '4401'));
    expect(got.type).toBe('trigger.helpdesk_ticket_created');
    expect(got.data.item).toMatchObject({
      id: '4401',
      subject: 'Printer on fire',
      status: 'new',
      requester_id: '9001',
    });
    await desk.ticketEvent(t, 'Create');
    t.updatedAt = new Date(Date.now() + 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    t.status = 'open';
    await desk.ticketEvent(t, 'Change');
    await until(() => itemEvent(updated, (i) => i.id === '4401' && i.status === 'open'));
    expect(
      new Set(
        eventsOf(created)
          .filter((r) => r.data.item!.id === '4401')
          .map((r) => r.id),
      ).size,
    ).toBe(1);
  });

  it('a bad signature, a stale timestamp or a changed body is refused (401) and sends nothing', async () => {
    const before = h.running.services.push.counters.refused;
    const answers = [
      ...(await desk.ticketEvent(ticket(4402, 'bad secret'), 'Create', { secret: 'guessed' })),
      ...(await desk.ticketEvent(ticket(4403, 'stale'), 'Create', {
        timestamp: new Date(Date.now() - 10 * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      })),
      ...(await desk.ticketEvent(ticket(4404, 'tampered'), 'Create', {
        body: (b) => b.replace('tampered', 'Tampered'),
      })),
    ];
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401]);
    expect(h.running.services.push.counters.refused).toBe(before + 3);
    await desk.ticketEvent(ticket(4405, 'marker'), 'Create');
    await until(() => itemEvent(created, (i) => i.id === '4405'));
    for (const id of ['4402', '4403', '4404']) expect(itemEvent(created, (i) => i.id === id)).toBeUndefined();
  });

  it('an unknown token or instance is answered exactly as a bad signature is', async () => {
    const hookUrl = [...desk.webhooks.values()][0]!.endpoint;
    const base = hookUrl.slice(0, hookUrl.lastIndexOf('/'));
    const headers = {
      'content-type': 'application/json',
      'x-zendesk-webhook-signature': 'AAAA',
      'x-zendesk-webhook-signature-timestamp': new Date().toISOString(),
    };
    const bad = await post(hookUrl, '{}', headers);
    const noInstance = await post(`${base}/trg_0000000000000000000000`, '{}', headers);
    const noToken = await post(`${h.url}/v1/ingress/${'A'.repeat(43)}/${created}`, '{}', headers);
    expect(bad.status).toBe(401);
    expect(noInstance).toEqual(bad);
    expect(noToken).toEqual(bad);
  });

  it('a body over TRIGGER_INGRESS_MAX_BYTES is refused before it is read', async () => {
    const hookUrl = [...desk.webhooks.values()][0]!.endpoint;
    const r = await post(hookUrl, JSON.stringify({ pad: 'x'.repeat(70_000) }), { 'content-type': 'application/json' });
    expect(r.status).toBe(413);
  });

  it('delete removes the trigger, then the webhook', async () => {
    await h.client.deleteTrigger(created);
    await h.client.deleteTrigger(updated);
    expect(desk.triggers.size).toBe(0);
    expect(desk.webhooks.size).toBe(0);
    expect(desk.problems).toEqual([]);
  });
});

describe('scraper: Apify run webhooks', () => {
  let instance: string;

  it('creating the instance makes a webhook for the four terminal run events, with a secret header', async () => {
    instance = (
      await h.client.createTrigger({
        trigger: 'scraper_run_finished',
        connection_name: 'apify',
        identifier: 'runner',
        config: { actor_id: ACTOR },
      })
    ).id;
    const w = [...apify.webhooks.values()][0]!;
    expect(w.eventTypes.sort()).toEqual(
      ['ACTOR.RUN.ABORTED', 'ACTOR.RUN.FAILED', 'ACTOR.RUN.SUCCEEDED', 'ACTOR.RUN.TIMED_OUT'].sort(),
    );
    expect(w.actorId).toBe(ACTOR);
    expect(w.requestUrl.endsWith(`/${instance}`)).toBe(true);
    expect(Object.keys(w.headers)).toEqual(['X-Agent-Connector-Secret']);
    expect(apify.problems).toEqual([]);
  });

  it('each finished run is sent once; a request without the secret is refused', async () => {
    const [ok] = await apify.finishRun(ACTOR, 'SUCCEEDED', { runId: 'HG7ML7M8z78YcAPEB' });
    expect(ok!.status).toBe(200);
    const got = await until(() =>
      itemEvent(instance, (i) => (i.eventData as { actorRunId?: string }).actorRunId === 'HG7ML7M8z78YcAPEB'),
    );
    expect(got.data.item_id).toBe('HG7ML7M8z78YcAPEB');
    expect(got.data.item!.eventType).toBe('ACTOR.RUN.SUCCEEDED');
    const [forged] = await apify.finishRun(ACTOR, 'FAILED', {
      runId: 'Forged00000000000',
      headers: { 'X-Agent-Connector-Secret': 'guess' },
    });
    expect(forged!.status).toBe(401);
    await apify.finishRun(ACTOR, 'TIMED-OUT', { runId: 'TimedOut000000000' });
    const late = await until(() => itemEvent(instance, (i) => i.eventType === 'ACTOR.RUN.TIMED_OUT'));
    expect(late.data.item_id).toBe('TimedOut000000000');
    expect(eventsOf(instance).some((r) => r.data.item_id === 'Forged00000000000')).toBe(false);
  });

  it('a registration the provider refuses leaves the instance needs_reauth, with trigger.failing sent', async () => {
    await h.client.upsertConnectedAccount({
      connectionName: 'apify',
      identifier: 'revoked',
      credentials: { token: 'apify_api_token_revoked' },
    });
    const t = await h.client.createTrigger({
      trigger: 'scraper_run_finished',
      connection_name: 'apify',
      identifier: 'revoked',
      config: { actor_id: ACTOR },
    });
    expect(t.status).toBe('needs_reauth');
    expect(t.last_error).toMatch(/HTTP 401/);
    expect(t.next_poll_at).not.toBeNull();
    const failing = await until(() =>
      received.find((r) => r.type === 'trigger.failing' && r.data.trigger_instance_id === t.id),
    );
    expect(failing.data.status).toBe('needs_reauth');
    expect(apify.webhooks.size).toBe(1);
    await h.client.deleteTrigger(t.id);
  });

  it('deleting the account removes its instances\u2019 webhooks first', async () => {
    await h.client.createTrigger({
      trigger: 'scraper_run_finished',
      connection_name: 'apify',
      identifier: 'other',
      config: { actor_id: 'OtherActor0000001' },
    });
    expect(apify.webhooks.size).toBe(2);
    const accounts = await h.client.listConnectedAccounts({ connectionName: 'apify', identifier: 'other' });
    await h.client.deleteConnectedAccount(accounts.connected_accounts[0]!.id);
    expect([...apify.webhooks.values()].map((w) => w.actorId)).toEqual([ACTOR]);
    await h.client.deleteTrigger(instance);
    expect(apify.webhooks.size).toBe(0);
    expect(apify.problems).toEqual([]);
  });
});

describe('crm: HubSpot app webhooks routed by portalId', () => {
  let contactsA: string;
  let dealsA: string;
  let contactsB: string;
  let target: string;

  it('each instance reads its portal id; the connection has one ingress URL for the app', async () => {
    const a = await h.client.createTrigger({
      trigger: 'crm_contact_created',
      connection_name: 'hubspot',
      identifier: 'portal-a',
    });
    contactsA = a.id;
    dealsA = (
      await h.client.createTrigger({ trigger: 'crm_deal_updated', connection_name: 'hubspot', identifier: 'portal-a' })
    ).id;
    contactsB = (
      await h.client.createTrigger({
        trigger: 'crm_contact_created',
        connection_name: 'hubspot',
        identifier: 'portal-b',
      })
    ).id;
    target = a.ingress_url!;
    expect(target).toMatch(/\/v1\/ingress\/[A-Za-z0-9_-]{43}$/);
    expect(hubspot.requests.filter((r) => r.path === '/account-info/v3/details')).toHaveLength(3);
  });

  it('a batch is verified (v3) and each event goes to the instances of its portal and type', async () => {
    const batch = [
      FakeHubSpotApp.event(1_110_001, 'contact.creation', 501),
      FakeHubSpotApp.event(2_220_002, 'contact.creation', 502),
      FakeHubSpotApp.event(1_110_001, 'deal.propertyChange', 9001, {
        propertyName: 'dealstage',
        propertyValue: 'closedwon',
      }),
      FakeHubSpotApp.event(3_330_003, 'contact.creation', 503),
    ];
    expect((await hubspot.send(target, batch)).status).toBe(200);
    await until(() => itemEvent(contactsA, (i) => i.objectId === 501));
    await until(() => itemEvent(contactsB, (i) => i.objectId === 502));
    const deal = await until(() => itemEvent(dealsA, (i) => i.objectId === 9001));
    expect(deal.data.item).toMatchObject({ propertyName: 'dealstage', propertyValue: 'closedwon' });
    expect(eventsOf(contactsA).map((r) => r.data.item!.objectId)).toEqual([501]);
    expect(eventsOf(contactsB).map((r) => r.data.item!.objectId)).toEqual([502]);
    expect(eventsOf(dealsA)).toHaveLength(1);
  });

  it('a bad signature or a timestamp over 5 minutes old is refused and sends nothing', async () => {
    const bad = await hubspot.send(target, [FakeHubSpotApp.event(1_110_001, 'contact.creation', 601)], {
      secret: 'nope',
    });
    const stale = await hubspot.send(target, [FakeHubSpotApp.event(1_110_001, 'contact.creation', 602)], {
      timestamp: Date.now() - 6 * 60_000,
    });
    const changed = await hubspot.send(target, [FakeHubSpotApp.event(1_110_001, 'contact.creation', 603)], {
      body: (b) => b.replace('603', '604'),
    });
    expect([bad.status, stale.status, changed.status]).toEqual([401, 401, 401]);
    await hubspot.send(target, [FakeHubSpotApp.event(1_110_001, 'contact.creation', 605)]);
    await until(() => itemEvent(contactsA, (i) => i.objectId === 605));
    expect(eventsOf(contactsA).map((r) => r.data.item!.objectId)).toEqual([501, 605]);
  });
});
