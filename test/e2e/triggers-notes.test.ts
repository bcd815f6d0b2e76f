/**
 * The `notes_note_created` polling trigger end to end (issue 41): the real service polls the fake Granola MCP server
 * (the MCP SDK's own server, OAuth 2.1 with discovery, registration and the resource indicator) by calling its
 * `list_meetings` tool, whose answer is Granola's XML-like text read by the connector's `meetingItems` hook, while
 * the test adds meetings. Each new meeting reaches a Standard Webhooks receiver once, verified with the
 * `standardwebhooks` library; meetings listed when the instance was made are not sent, however often they are
 * listed again.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { FakeNotesMcp, MEETINGS } from '../fakes/notes-mcp.ts';
import { followAuthorizationLink, startHarness, type Harness } from '../helpers/harness.ts';

const who = { connection_name: 'notes', identifier: 'ann' };
const TYPE = 'trigger.notes_note_created';
const [LAUNCH] = MEETINGS.map((m) => m.id) as [string];

interface Received {
  id: string;
  type: string;
  data: {
    trigger_instance_id?: string;
    item_id?: string;
    item?: { id?: string; title?: string; date?: string; participants?: string[] };
  };
}

let h: Harness;
let mcp: FakeNotesMcp;
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

const lists = () => mcp.toolCalls('list_meetings');
const itemEvents = (instance: string) =>
  received.filter((r) => r.type === TYPE && r.data.trigger_instance_id === instance);
async function polls(n: number): Promise<void> {
  const before = lists().length;
  await until(() => (lists().length >= before + n ? true : undefined));
}

let minute = 0;
/** A meeting of this week (the fake's "now" is Wednesday 2026-03-18 12:00 UTC), as Granola lists it once processed. */
function addMeeting(title: string): string {
  const id = randomUUID();
  mcp.meetings.push({
    id,
    title,
    date: new Date(Date.parse('2026-03-17T09:00:00Z') + minute++ * 60_000).toISOString(),
    participants: [
      { name: 'Ann Lee', email: 'ann@acme.com' },
      { name: 'Dana "D" Cho', email: 'dana@acme.com' },
    ],
    privateNotes: '',
    summary: `Notes of ${title}`,
    transcript: [],
  });
  return id;
}

beforeAll(async () => {
  receiver = await startWebhookReceiver({ received, refused, secret: () => secret });
  mcp = new FakeNotesMcp();
  await mcp.start();
  h = await startHarness({
    oauth: { discovery: true, requireResource: mcp.mcpUrl },
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '40', TRIGGER_MIN_INTERVAL_SECONDS: '1' },
  });
  mcp.authorizationServer = h.oauth;
  await h.client.createConnection({
    connection_name: who.connection_name,
    connector: 'notes',
    oauth: { resource: mcp.mcpUrl },
  });
  const { link } = await h.client.getAuthorizationLink({
    connectionName: who.connection_name,
    identifier: who.identifier,
  });
  const callback = await followAuthorizationLink(link, who.identifier);
  expect(callback.status).toBe(200);
  const hook = await h.client.createWebhook({
    url: receiver.url,
    events: [TYPE],
  });
  secret = hook.secret;
});
afterAll(async () => {
  await h?.close();
  await mcp?.close();
  receiver?.close();
});

describe('notes_note_created: the meeting list', () => {
  let instance: string;
  const added: string[] = [];

  it('lists the meetings when the instance is made; those are never sent', async () => {
    const earlier = addMeeting('Before the instance');
    const created = await h.client.createTrigger({ trigger: 'notes_note_created', ...who, interval_seconds: 1 });
    instance = created.id;
    expect(created.status).toBe('active');
    // The instance's start read the list once, through the MCP tool, with the YAML's arguments.
    expect(lists().map((m) => m.params?.arguments)).toEqual([{ time_range: 'this_week' }]);
    expect(lists()[0]!.authorization).toMatch(/^Bearer /);
    // Both this week's seeded meeting and the one added just before are in that first answer.
    expect(mcp.meetings.filter((m) => m.date >= '2026-03-16').map((m) => m.id)).toEqual([LAUNCH, earlier]);
    added.length = 0;
  });

  it('sends each meeting added while the service runs once, and nothing listed before', async () => {
    for (let i = 0; i < 4; i++) {
      added.push(addMeeting(`Standup ${i}`));
      await polls(1);
    }
    // Two at once, between polls.
    added.push(addMeeting('Design review'), addMeeting('1:1 <Ann & Raj>'));
    await until(() => (itemEvents(instance).length >= added.length ? true : undefined));
    // More polls, each listing all of this week's meetings again: nothing is sent twice.
    await polls(3);
    const events = itemEvents(instance);
    expect(events.map((e) => e.data.item!.id)).toEqual(added);
    expect(events.map((e) => e.data.item_id)).toEqual(added);
    expect(new Set(events.map((e) => e.id)).size).toBe(added.length);
    expect(refused).toEqual([]);
    // What the hook read from Granola's text: title (entities decoded), date and participants.
    const review = events.at(-1)!.data.item!;
    expect(review.title).toBe('1:1 <Ann & Raj>');
    expect(review.date).toBe(mcp.meetings.find((m) => m.id === added.at(-1))!.date);
    expect(review.participants).toEqual(['Ann Lee <ann@acme.com>', 'Dana "D" Cho <dana@acme.com>']);
    const view = await h.client.getTrigger(instance);
    expect(view.events_sent).toBe(added.length);
    expect(view.last_error).toBeNull();
    // Every poll was a tools/call of list_meetings with the same arguments, on an initialized MCP session.
    expect(lists().every((m) => m.params?.arguments?.time_range === 'this_week' && m.sessionId)).toBe(true);
  });

  it('a second instance made now starts from the list as it is: only later meetings are its events', async () => {
    const second = await h.client.createTrigger({ trigger: 'notes_note_created', ...who, interval_seconds: 1 });
    const later = addMeeting('After the second instance');
    await until(() => itemEvents(second.id).find((e) => e.data.item?.id === later));
    await until(() => itemEvents(instance).find((e) => e.data.item?.id === later));
    await polls(2);
    expect(itemEvents(second.id).map((e) => e.data.item!.id)).toEqual([later]);
    // The same meeting has a webhook-id of its own per instance.
    const first = itemEvents(instance).find((e) => e.data.item?.id === later)!;
    expect(first.id).not.toBe(itemEvents(second.id)[0]!.id);
    await h.client.deleteTrigger(second.id);
  });
});
