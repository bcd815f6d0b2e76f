/**
 * The mail connector end to end: an account connected through the real authorization flow (link, consent at
 * the fake authorization server, callback), then every mail tool executed through the client library and
 * the service against the fake Microsoft Graph, which accepts only the fake server's live access tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tools } from '../../generated/registry.ts';
import { authorize, oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, toolRunner } from '../helpers/tools.ts';
import { startFakeGraph, type FakeGraph } from '../fakes/graph.ts';
import { seedFor } from '../fakes/graph-seed.ts';
import { newsletter } from '../fakes/newsletter.ts';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

let h: Harness;
let graph: FakeGraph;
const who = { connectionName: 'mail', identifier: 'ada' };

// The provider's own answer (response_format detailed), each also checked against the tool's declared output
// (test/helpers/answer-check.ts).
const answers = new AnswerLog('mail', () => h);
const run = toolRunner<Record<string, any> | null>({ harness: () => h, who, responseFormat: 'detailed', answers });

beforeAll(async () => {
  h = await startHarness();
  graph = await startFakeGraph({ validateToken: (t) => !!h.oauth.validate(t) });
  await oauthConnection(h, 'mail', 'mail', graph.url);
  await authorize(h, 'mail', 'ada');
});
afterAll(async () => {
  answers.write();
  await graph?.close();
  await h?.close();
});

const mailTools = [...tools.values()].filter((t) => t.connector === 'mail');

describe('every mail tool, through the service', () => {
  it('has 26 tools', () => expect(mailTools).toHaveLength(26));

  it.each(mailTools.flatMap((t) => t.examples.map((e, i) => [`${t.name}#${i}`, t.name, e] as const)))(
    '%s',
    async (_label, toolName, example) => {
      seedFor(graph, example.input);
      const before = graph.requests.length;
      const data = await run(toolName, structuredClone(example.input));
      const sent = graph.requests.slice(before);
      // What reached the provider is what the example states: method, path and query.
      const want = example.requests.at(-1)!;
      const got = sent.at(-1)!;
      expect(`${got.method} ${got.path}`).toBe(`${want.method} ${new URL(want.url).pathname}`);
      expect(got.status).toBeLessThan(300);
      if (tools.get(toolName)!.readOnly) expect(data).not.toBeNull();
    },
  );
});

describe('what the tools do to the mailbox', () => {
  it('sends a message and saves it to Sent Items', async () => {
    const before = graph.state.outbox.length;
    const data = await run('mail_send_message', {
      toRecipients: ['grace@example.com'],
      subject: 'Notes',
      body: 'See attached',
      ccRecipients: ['alan@example.com'],
    });
    expect(data).toBeNull(); // Graph answers 202 with an empty body
    const sent = graph.state.outbox.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.savedToSentItems).toBe(true);
    expect(JSON.stringify(graph.state.sentItems)).toContain('Notes');
  });

  it('manages a task list and its tasks', async () => {
    const list = (await run('mail_todo_lists_create', { display_name: 'Groceries' }))!;
    const task = (await run('mail_todo_tasks_create', {
      list_id: list.id,
      title: 'Milk',
      due_date: '2026-12-01',
      importance: 'high',
    }))!;
    expect(task).toMatchObject({ title: 'Milk', importance: 'high', dueDateTime: { timeZone: 'UTC' } });
    await run('mail_todo_tasks_update', { list_id: list.id, task_id: task.id, status: 'completed' });
    expect((await run('mail_todo_tasks_get', { list_id: list.id, task_id: task.id }))!.status).toBe('completed');
    const listed = (await run('mail_todo_tasks_list', { list_id: list.id }))!;
    expect(listed.value.map((t: { title: string }) => t.title)).toEqual(['Milk']);
    await run('mail_todo_lists_delete', { list_id: list.id });
    const gone = await failure(run('mail_todo_lists_get', { list_id: list.id }));
    expect(gone.status).toBe(404);
    expect(gone.isProviderError).toBe(true);
  });

  it('updates mailbox settings and reads them back', async () => {
    await run('mail_mailbox_settings_update', { timeZone: 'Pacific Standard Time', language: { locale: 'en-GB' } });
    const settings = (await run('mail_mailbox_settings_get', {}))!;
    expect(settings).toMatchObject({ timeZone: 'Pacific Standard Time', language: { locale: 'en-GB' } });
  });

  it('creates a recurring event and finds it', async () => {
    const event = (await run('mail_create_calendar_event', {
      subject: 'Weekly sync',
      start_datetime: '2026-09-07T10:00:00',
      start_timezone: 'UTC',
      end_datetime: '2026-09-07T10:30:00',
      end_timezone: 'UTC',
      attendees_required: 'grace@example.com, alan@example.com',
      recurrence_type: 'weekly',
      recurrence_days_of_week: 'monday',
      recurrence_range_type: 'numbered',
      recurrence_occurrences: 5,
    }))!;
    expect(event.attendees).toHaveLength(2);
    expect(event.recurrence.range).toMatchObject({ type: 'numbered', numberOfOccurrences: 5 });
    const got = (await run('mail_get_calendar_event', { event_id: event.id }))!;
    expect(got.subject).toBe('Weekly sync');
  });
});

describe('what an agent reads of a mailbox', () => {
  it('ten HTML newsletters: the concise answer is their text with the links, the detailed one their HTML', async () => {
    for (let i = 1; i <= 10; i++) {
      graph.state.addMessage({
        subject: `Weekly news, issue ${i}`,
        from: 'news@news.example',
        body: newsletter(i),
        receivedDateTime: `2030-01-${String(i).padStart(2, '0')}T07:00:00Z`,
      });
    }
    const input = { $top: 10, $orderby: 'receivedDateTime desc', $select: 'subject,from,receivedDateTime,body' };
    // The provider's answer is over the budget as HTML: the detailed answer is cut at an item boundary.
    const detailed = (await run('mail_list_messages', input))!;
    const provider = answers.sizes.at(-1)!;
    expect(provider.before).toBeGreaterThan(8000);
    expect(detailed.truncated).toMatchObject({ budget_tokens: 8000, items_returned: detailed.value.length });
    const concise = (await h.client.executeTool({ toolName: 'mail_list_messages', toolInput: input, ...who })).data as {
      value: Array<{ subject: string; body: { content: string } }>;
    };
    // As text, more of the ten fit the budget than as HTML.
    expect(concise.value.length).toBeGreaterThan(detailed.value.length);
    expect(concise.value.map((m) => m.subject)).toEqual(
      Array.from({ length: concise.value.length }, (_, i) => `Weekly news, issue ${10 - i}`),
    );
    const text = concise.value[0]!.body.content;
    expect(text).toContain('Quarterly results beat expectations');
    expect(text).toMatch(/Read more \[https:\/\/click\.news\.example\/ls\/click\?upn=10x0/);
    expect(text).not.toMatch(/<[a-z]|track\.news\.example|font-family/);
    // The markup is most of the HTML: a message as text is under half its tokens as HTML (about a third here).
    expect((countTokens(JSON.stringify(concise)) / concise.value.length) * 2).toBeLessThan(provider.before / 10);
  });
});

describe('bad input is a 400 naming the field, before any upstream call', () => {
  it('enforces the recurrence rules and the $top bounds', async () => {
    const before = graph.requests.length;
    const e = await failure(
      run('mail_create_calendar_event', {
        subject: 's',
        start_datetime: '2026-09-07T10:00:00',
        start_timezone: 'UTC',
        end_datetime: '2026-09-07T11:00:00',
        end_timezone: 'UTC',
        recurrence_type: 'daily',
        recurrence_range_type: 'endDate',
      }),
    );
    expect(e.status).toBe(400);
    expect(e.details.map((d) => d.field)).toContain('recurrence_end_date');
    const top = await failure(run('mail_list_messages', { $top: 1001 }));
    expect(top.details[0]).toEqual({ field: '$top', message: 'must be at most 1000' });
    expect(graph.requests.length).toBe(before);
  });
});
