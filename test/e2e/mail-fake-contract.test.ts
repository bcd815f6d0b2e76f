/**
 * Every example of every mail tool, planned exactly as the service would send it, is accepted by the fake
 * Microsoft Graph, which checks paths, query options and bodies against Graph's wire format. The golden test
 * proves each example produces the stated request; this one proves that request is one Graph accepts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connectors, tools } from '../../generated/registry.ts';
import type { ToolDefinition, ToolExample } from '../../core/tool-types.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';
import { planRequests, type PlannedRequest } from '../../runtime/tools/plan.ts';
import { startFakeGraph, type FakeGraph, type Json } from '../fakes/graph.ts';
import { seedFor } from '../fakes/graph-seed.ts';

const TOKEN = 'contract-test-token';
const connector = connectors.get('mail')!;
const auth = connector.auth[0]!;

let graph: FakeGraph | undefined;
afterEach(async () => {
  await graph?.close();
  graph = undefined;
});

async function send(req: PlannedRequest): Promise<{ status: number; body: Json | undefined; text: string }> {
  const res = await fetch(req.url, {
    method: req.method,
    headers: { ...req.headers, authorization: `Bearer ${TOKEN}` },
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? (JSON.parse(text) as Json) : undefined };
}

type Outcome = (fake: FakeGraph, responses: Array<Json | undefined>) => void;

/** What some examples must have done to the mailbox, beyond being accepted. */
const outcomes: Record<string, Outcome> = {
  'mail_create_calendar_event#0': (fake, [created]) => {
    const event = fake.state.events.get(created!.id as string)!;
    expect(event).toMatchObject({
      start: { dateTime: '2026-09-07T08:00:00.0000000', timeZone: 'UTC' },
      originalStartTimeZone: 'Europe/Berlin',
      type: 'seriesMaster',
      recurrence: {
        pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday'] },
        range: { type: 'endDate', startDate: '2026-09-07', endDate: '2026-12-31' },
      },
    });
    expect((event.attendees as Json[]).map((a) => [(a.emailAddress as Json).address, a.type])).toEqual([
      ['a@x.com', 'required'],
      ['b@x.com', 'required'],
      ['c@x.com', 'optional'],
      ['room4@x.com', 'resource'],
    ]);
    expect(fake.state.outbox.at(-1)).toMatchObject({ kind: 'invitation' });
  },
  'mail_create_calendar_event#2': (fake, [created]) => {
    expect(fake.state.events.get(created!.id as string)!.recurrence).toMatchObject({
      pattern: { type: 'absoluteMonthly', dayOfMonth: 15 },
      range: { type: 'numbered', startDate: '2026-09-15', numberOfOccurrences: 10 },
    });
  },
  'mail_update_calendar_event#0': (fake, [updated]) => {
    const event = fake.state.events.get(updated!.id as string)!;
    expect((event.attendees as Json[]).map((a) => (a.emailAddress as Json).address)).toEqual(['a@x.com', 'd@x.com']);
    expect(event.categories).toEqual(['Blue category', 'Project X']);
  },
  'mail_delete_calendar_event#0': (fake) => {
    expect(fake.state.events.size).toBe(1);
    expect(fake.state.outbox.at(-1)).toMatchObject({ kind: 'cancellation' });
  },
  'mail_list_attachments#0': (_fake, [list]) => {
    expect((list!.value as Json[]).length).toBe(1);
    for (const a of list!.value as Json[]) expect(a).not.toHaveProperty('contentBytes');
  },
  'mail_get_attachment#0': (_fake, [attachment]) => {
    expect(Buffer.from(String(attachment!.contentBytes), 'base64').toString()).toBe('seeded attachment');
  },
  'mail_search_messages#0': (_fake, [found]) => {
    expect((found!.value as Json[]).map((m) => m.subject)).toEqual(['Quarterly report']);
  },
  'mail_send_message#0': (fake) => {
    expect(fake.state.sentItems).toHaveLength(0);
    expect(fake.state.outbox.at(-1)).toMatchObject({
      kind: 'message',
      savedToSentItems: false,
      message: { ccRecipients: [{ emailAddress: { address: 'c@x.com' } }] },
    });
  },
  'mail_send_message#1': (fake) => {
    expect(fake.state.sentItems.map((m) => m.subject)).toEqual(['Lunch?']);
  },
  'mail_reply_to_message#0': (fake) => {
    expect(
      fake.state.sentItems.map((m) => [m.subject, ((m.toRecipients as Json[])[0]!.emailAddress as Json).address]),
    ).toEqual([['RE: Seeded message', 'sender@fabrikam.example']]);
  },
  'mail_mailbox_settings_update#0': (fake) => {
    expect(fake.state.mailboxSettings).toMatchObject({
      timeZone: 'Pacific Standard Time',
      automaticRepliesSetting: { status: 'scheduled' },
      language: { locale: 'en-US' },
    });
  },
  'mail_todo_tasks_create#0': (_fake, [task]) => {
    expect(task).toMatchObject({
      title: 'File taxes',
      isReminderOn: true,
      body: { content: 'Use the 2025 forms', contentType: 'text' },
      dueDateTime: { dateTime: '2026-04-15T00:00:00.0000000', timeZone: 'UTC' },
    });
  },
  'mail_todo_tasks_update#0': (_fake, [task]) => {
    expect(task).toMatchObject({ status: 'completed' });
  },
  'mail_todo_lists_delete#0': (fake) => {
    expect(fake.state.todoLists.has('AAMkADIyAAAhrbPWAAA=')).toBe(false);
  },
};

const cases: Array<[string, ToolDefinition, number, ToolExample]> = connector.toolNames.flatMap((name) => {
  const tool = tools.get(name)!;
  return tool.examples.map(
    (example, i) =>
      [`${name}#${i}${example.title ? ` (${example.title})` : ''}`, tool, i, example] as [
        string,
        ToolDefinition,
        number,
        ToolExample,
      ],
  );
});

describe('mail tool examples against the fake Graph', () => {
  it('cover every one of the 26 mail tools', () => {
    expect(connector.toolNames).toHaveLength(26);
    expect(new Set(cases.map(([, tool]) => tool.name)).size).toBe(26);
  });

  it.each(cases)('%s', async (_label, tool, index, example) => {
    graph = await startFakeGraph({ validateToken: (t) => t === TOKEN });
    const input = structuredClone(example.input);
    expect(validateToolInput(tool, input)).toEqual([]);
    seedFor(graph, input);
    const target = {
      connector,
      connection: { apiBaseUrl: graph.url, apiHosts: {}, authKind: auth.kind },
      fields: {},
      auth,
    };
    const planned = planRequests(tool, input, target);
    expect(planned).toHaveLength(example.requests.length);

    const responses: Array<Json | undefined> = [];
    for (const req of planned) {
      expect(req.url.startsWith(`${graph.url}/v1.0/me/`) || req.url === `${graph.url}/v1.0/me`).toBe(true);
      const res = await send(req);
      expect(res.status, `${req.method} ${req.url} -> ${res.status} ${res.text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${req.method} ${req.url} -> ${res.status} ${res.text}`).toBeLessThan(300);
      responses.push(res.body);
    }
    expect(graph.requests.map((r) => `${r.method} ${graph!.url}${r.path}`)).toEqual(
      planned.map((p) => `${p.method} ${p.url.split('?')[0]}`),
    );
    outcomes[`${tool.name}#${index}`]?.(graph, responses);
  });
});
