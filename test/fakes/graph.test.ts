/**
 * The fake Microsoft Graph speaks Graph's wire format and refuses what Graph refuses; if it accepted wrong
 * shapes, the mail contract test that runs every tool example against it would prove nothing.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeGraph, type FakeGraph, type Json } from './graph.ts';
import { FakeOAuthServer } from './oauth-server.ts';

const TOKEN = 'good-token';
let graph: FakeGraph;

beforeEach(async () => {
  graph = await startFakeGraph({ validateToken: (t) => t === TOKEN });
});
afterEach(() => graph.close());

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: Json;
}

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; token?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? TOKEN}`;
  if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(path.startsWith('http') ? path : `${graph.url}${path}`, {
    method,
    headers,
    body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? (JSON.parse(text) as Json) : {} };
}

const code = (a: Answer) => (a.json.error as Json | undefined)?.code;
const values = (a: Answer) => a.json.value as Json[];
const event = (extra: Json = {}) => ({
  subject: 'Sync',
  start: { dateTime: '2026-09-07T10:00:00', timeZone: 'Europe/Berlin' },
  end: { dateTime: '2026-09-07T10:30:00', timeZone: 'Europe/Berlin' },
  ...extra,
});

describe('authentication', () => {
  it('answers 401 InvalidAuthenticationToken without a bearer token or with a token the validator refuses', async () => {
    for (const token of [null, 'wrong-token']) {
      const a = await call('GET', '/v1.0/me/messages', { token });
      expect(a.status).toBe(401);
      expect(code(a)).toBe('InvalidAuthenticationToken');
      expect(a.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((a.json.error as Json).innerError).toMatchObject({ 'request-id': expect.any(String) });
    }
    expect((await call('GET', '/v1.0/me')).json).toMatchObject({ mail: 'megan@contoso.example' });
  });

  it('accepts access tokens the fake OAuth server issued, until they expire', async () => {
    const oauth = await new FakeOAuthServer().start();
    const withOAuth = await startFakeGraph({ validateToken: (t) => !!oauth.validate(t) });
    try {
      oauth.addClient({
        client_id: 'app',
        client_secret: 'secret',
        redirect_uris: ['http://127.0.0.1/cb'],
        auth: 'client_secret_post',
      });
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URL(oauth.authorizeUrl);
      Object.entries({
        response_type: 'code',
        client_id: 'app',
        redirect_uri: 'http://127.0.0.1/cb',
        state: 'xyz',
        scope: 'offline_access Mail.Read',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).forEach(([k, v]) => authorize.searchParams.set(k, v));
      const redirect = await fetch(authorize, { redirect: 'manual' });
      const authCode = new URL(redirect.headers.get('location')!).searchParams.get('code')!;
      const tokenRes = await fetch(oauth.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: authCode,
          redirect_uri: 'http://127.0.0.1/cb',
          client_id: 'app',
          client_secret: 'secret',
          code_verifier: verifier,
        }),
      });
      const { access_token } = (await tokenRes.json()) as { access_token: string };
      const get = () =>
        fetch(`${withOAuth.url}/v1.0/me/mailboxSettings`, { headers: { authorization: `Bearer ${access_token}` } });
      expect((await get()).status).toBe(200);
      oauth.expireAccessTokens();
      expect((await get()).status).toBe(401);
    } finally {
      await withOAuth.close();
      await oauth.close();
    }
  });
});

describe('transport', () => {
  it('refuses a body that is not JSON, malformed JSON and unknown paths, the way Graph does', async () => {
    const form = await call('POST', '/v1.0/me/todo/lists', {
      body: 'displayName=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    const broken = await call('POST', '/v1.0/me/todo/lists', { body: '{"displayName":' });
    expect([broken.status, code(broken)]).toEqual([400, 'RequestBodyRead']);
    const unknown = await call('GET', '/v1.0/me/calendars2');
    expect([unknown.status, code(unknown)]).toEqual([400, 'BadRequest']);
    expect((unknown.json.error as Json).message).toContain("'calendars2'");
  });

  it('injects 429 with Retry-After on demand and logs every request with its status', async () => {
    graph.failNext(1, { retryAfterSeconds: 7 });
    const throttled = await call('GET', '/v1.0/me/messages?$top=1');
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('7');
    expect(code(throttled)).toBe('TooManyRequests');
    expect((await call('GET', '/v1.0/me/messages?$top=1')).status).toBe(200);
    expect(graph.requests.map((r) => [r.method, r.path, r.query.$top, r.status])).toEqual([
      ['GET', '/v1.0/me/messages', '1', 429],
      ['GET', '/v1.0/me/messages', '1', 200],
    ]);
  });
});

describe('events', () => {
  it('creates (201), reads, updates (200) and deletes (204) an event; times are stored and answered in UTC', async () => {
    const created = await call('POST', '/v1.0/me/events', {
      body: event({ attendees: [{ emailAddress: { address: 'a@x.com' }, type: 'required' }] }),
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      '@odata.context': expect.stringContaining('/events/$entity'),
      subject: 'Sync',
      start: { dateTime: '2026-09-07T08:00:00.0000000', timeZone: 'UTC' },
      originalStartTimeZone: 'Europe/Berlin',
      type: 'singleInstance',
    });
    const id = created.json.id as string;
    expect(graph.state.outbox.at(-1)).toMatchObject({ kind: 'invitation' });

    const local = await call('GET', `/v1.0/me/events/${encodeURIComponent(id)}`, {
      headers: { prefer: 'outlook.timezone="Pacific Standard Time"' },
    });
    expect(local.json.start).toEqual({ dateTime: '2026-09-07T01:00:00.0000000', timeZone: 'Pacific Standard Time' });

    const patched = await call('PATCH', `/v1.0/me/events/${encodeURIComponent(id)}`, {
      body: { attendees: [{ emailAddress: { address: 'b@x.com' }, type: 'optional' }], categories: ['Red'] },
    });
    expect(patched.status).toBe(200);
    expect((patched.json.attendees as Json[]).map((a) => (a.emailAddress as Json).address)).toEqual(['b@x.com']);

    const deleted = await call('DELETE', `/v1.0/me/events/${encodeURIComponent(id)}`);
    expect([deleted.status, deleted.text]).toEqual([204, '']);
    expect(graph.state.outbox.at(-1)).toMatchObject({ kind: 'cancellation' });
    const gone = await call('GET', `/v1.0/me/events/${encodeURIComponent(id)}`);
    expect([gone.status, code(gone)]).toEqual([404, 'ErrorItemNotFound']);
  });

  it.each([
    [
      'a dateTime with an offset',
      event({ start: { dateTime: '2026-09-07T10:00:00+02:00', timeZone: 'Europe/Berlin' } }),
      'ErrorInvalidProperty',
    ],
    ['a start without timeZone', event({ start: { dateTime: '2026-09-07T10:00:00' } }), 'ErrorInvalidProperty'],
    ['no end', { subject: 'x', start: event().start }, 'ErrorInvalidProperty'],
    [
      'an unknown time zone',
      event({ end: { dateTime: '2026-09-07T10:30:00', timeZone: 'Mars/Olympus' } }),
      'TimeZoneNotSupportedException',
    ],
    ['an unknown enum value', event({ showAs: 'away' }), 'RequestBodyRead'],
    ['an unknown property', event({ attendeesRequired: 'a@x.com' }), 'RequestBodyRead'],
    ['an attendee without emailAddress', event({ attendees: [{ address: 'a@x.com' }] }), 'RequestBodyRead'],
    [
      'a weekly pattern without days',
      event({
        recurrence: { pattern: { type: 'weekly', interval: 1 }, range: { type: 'noEnd', startDate: '2026-09-07' } },
      }),
      'ErrorInvalidProperty',
    ],
    [
      'a pattern property the type does not use',
      event({
        recurrence: {
          pattern: { type: 'daily', interval: 1, dayOfMonth: 7 },
          range: { type: 'noEnd', startDate: '2026-09-07' },
        },
      }),
      'ErrorInvalidProperty',
    ],
    [
      'an endDate range without endDate',
      event({
        recurrence: { pattern: { type: 'daily', interval: 1 }, range: { type: 'endDate', startDate: '2026-09-07' } },
      }),
      'ErrorInvalidProperty',
    ],
    [
      'a range without startDate',
      event({
        recurrence: { pattern: { type: 'daily', interval: 1 }, range: { type: 'numbered', numberOfOccurrences: 3 } },
      }),
      'ErrorInvalidProperty',
    ],
    ['an all-day event not at midnight', event({ isAllDay: true }), 'ErrorInvalidProperty'],
    ['locations that is not an array', event({ locations: '[{"displayName":"Room"}]' }), 'RequestBodyRead'],
  ])('refuses an event with %s', async (_what, body, errorCode) => {
    const a = await call('POST', '/v1.0/me/events', { body });
    expect(a.status).toBe(400);
    expect(code(a)).toBe(errorCode);
  });

  it('accepts every recurrence pattern type with the properties it uses', async () => {
    const patterns: Json[] = [
      { type: 'daily', interval: 2 },
      { type: 'weekly', interval: 1, daysOfWeek: ['monday', 'thursday'] },
      { type: 'absoluteMonthly', interval: 1, dayOfMonth: 7 },
      { type: 'relativeMonthly', interval: 1, daysOfWeek: ['monday'] },
      { type: 'absoluteYearly', interval: 1, dayOfMonth: 7, month: 9 },
      { type: 'relativeYearly', interval: 1, daysOfWeek: ['monday'], month: 9 },
    ];
    for (const pattern of patterns) {
      const a = await call('POST', '/v1.0/me/events', {
        body: event({
          recurrence: { pattern, range: { type: 'numbered', startDate: '2026-09-07', numberOfOccurrences: 3 } },
        }),
      });
      expect(a.status, JSON.stringify(a.json)).toBe(201);
      expect(a.json.type).toBe('seriesMaster');
    }
  });

  it('lists with $filter, $orderby, $select, $top and $skip, and pages with an absolute @odata.nextLink', async () => {
    for (const day of ['12', '11', '13'])
      await call('POST', '/v1.0/me/events', {
        body: event({
          subject: `Day ${day}`,
          start: { dateTime: `2026-09-${day}T09:00:00`, timeZone: 'UTC' },
          end: { dateTime: `2026-09-${day}T10:00:00`, timeZone: 'UTC' },
        }),
      });
    const first = await call(
      'GET',
      "/v1.0/me/events?$filter=start/dateTime%20ge%20'2026-09-11T00:00:00'&$orderby=start/dateTime&$select=subject,start&$top=2",
    );
    expect(first.status).toBe(200);
    expect(values(first).map((e) => e.subject)).toEqual(['Day 11', 'Day 12']);
    expect(Object.keys(values(first)[0]!).sort()).toEqual(['@odata.etag', 'id', 'start', 'subject']);
    const next = first.json['@odata.nextLink'] as string;
    expect(next).toMatch(new RegExp(`^${graph.url}/v1.0/me/events\\?.*\\$skip=2`));
    const second = await call('GET', next);
    expect(values(second).map((e) => e.subject)).toEqual(['Day 13']);
    expect(second.json['@odata.nextLink']).toBeUndefined();
  });
});

describe('query options', () => {
  it.each([
    ['$top=0', 'ErrorInvalidProperty'],
    ['$top=1001', 'ErrorInvalidProperty'],
    ['$skip=-1', 'BadRequest'],
    ['top=5', 'BadRequest'],
    ['filter=isRead%20eq%20false', 'BadRequest'],
    ['$expand=attachments', 'BadRequest'],
    ['$filter=isRead%20eq%20false&$filter=isRead%20eq%20true', 'BadRequest'],
    ['$filter=subject%20sounds%20like%20x', 'BadRequest'],
    ['$filter=isRead%20eq%20false&$orderby=receivedDateTime%20desc', 'InefficientFilter'],
    ['$search=budget', 'BadRequest'],
    ['$search=%22budget%22&$orderby=subject', 'ErrorInvalidUrlQuery'],
  ])('refuses messages?%s with 400 %s', async (query, errorCode) => {
    const a = await call('GET', `/v1.0/me/messages?${query}`);
    expect(a.status).toBe(400);
    expect(code(a)).toBe(errorCode);
  });

  it('filters and sorts messages the way Graph allows, newest first by default', async () => {
    expect(values(await call('GET', '/v1.0/me/messages')).map((m) => m.subject)).toEqual([
      'Lunch',
      'Budget review',
      'Quarterly report',
    ]);
    const unread = await call('GET', '/v1.0/me/messages?$filter=isRead%20eq%20false&$select=subject');
    expect(values(unread).map((m) => m.subject)).toEqual(['Budget review', 'Quarterly report']);
    const since = await call(
      'GET',
      '/v1.0/me/messages?$filter=receivedDateTime%20ge%202026-09-03T00:00:00Z&$orderby=receivedDateTime%20asc',
    );
    expect(values(since).map((m) => m.subject)).toEqual(['Budget review', 'Lunch']);
    const contacts = await call(
      'GET',
      "/v1.0/me/contacts?$filter=emailAddresses/any(a:a/address%20eq%20'ada@engines.example')",
    );
    expect(values(contacts).map((c) => c.displayName)).toEqual(['Ada Lovelace']);
  });

  it('searches from, subject and body with bare terms, recipients only through to:', async () => {
    const subjects = async (q: string) =>
      values(await call('GET', `/v1.0/me/messages?$search=${encodeURIComponent(q)}`)).map((m) => m.subject);
    expect(await subjects('"from:alice subject:report"')).toEqual(['Quarterly report']);
    expect(await subjects('"budget"')).toEqual(['Budget review']);
    expect(await subjects('"megan"')).toEqual(['Quarterly report']);
    expect(await subjects('"to:megan@contoso.example"')).toHaveLength(3);
    expect(await subjects('"attachment:report.pdf"')).toEqual(['Quarterly report']);
  });
});

describe('messages', () => {
  it('lists attachment metadata, with contentBytes only when no $select asks otherwise, and downloads one', async () => {
    const id = encodeURIComponent(graph.sample.messageWithAttachment!);
    const full = await call('GET', `/v1.0/me/messages/${id}/attachments`);
    expect(values(full)[0]).toMatchObject({
      '@odata.type': '#microsoft.graph.fileAttachment',
      name: 'report.pdf',
      contentBytes: expect.any(String),
    });
    const meta = await call('GET', `/v1.0/me/messages/${id}/attachments?$select=id,name,size,contentType,isInline`);
    expect(values(meta)[0]).not.toHaveProperty('contentBytes');
    expect(values(meta)[0]).toMatchObject({
      name: 'report.pdf',
      contentType: 'application/pdf',
      size: Buffer.byteLength('%PDF-1.4 quarterly report'),
      isInline: false,
    });
    const one = await call(
      'GET',
      `/v1.0/me/messages/${id}/attachments/${encodeURIComponent(graph.sample.attachment!)}`,
    );
    expect(Buffer.from(String(one.json.contentBytes), 'base64').toString()).toBe('%PDF-1.4 quarterly report');
    expect((await call('GET', `/v1.0/me/messages/${id}/attachments/nope`)).status).toBe(404);
  });

  it('sends mail with 202 and an empty body, saving to Sent Items unless saveToSentItems is false', async () => {
    const message = {
      subject: 'Hi',
      body: { contentType: 'HTML', content: '<b>Hello</b>' },
      toRecipients: [{ emailAddress: { address: 'a@x.com' } }],
    };
    const saved = await call('POST', '/v1.0/me/sendMail', { body: { message } });
    expect([saved.status, saved.text]).toEqual([202, '']);
    expect(graph.state.sentItems.map((m) => [m.subject, (m.body as Json).contentType])).toEqual([['Hi', 'html']]);
    const unsaved = await call('POST', '/v1.0/me/sendMail', {
      body: { message: { ...message, subject: 'Quiet' }, saveToSentItems: false },
    });
    expect(unsaved.status).toBe(202);
    expect(graph.state.sentItems).toHaveLength(1);
    expect(graph.state.outbox.map((o) => [o.kind, o.message.subject, o.savedToSentItems])).toEqual([
      ['message', 'Hi', true],
      ['message', 'Quiet', false],
    ]);
    const listed = await call('GET', '/v1.0/me/mailFolders/sentitems/messages');
    expect(values(listed).map((m) => m.subject)).toEqual(['Hi']);
  });

  it.each([
    ['no message', { saveToSentItems: true }, 'ErrorInvalidProperty'],
    ['no recipients', { message: { subject: 'x', body: { content: 'y' } } }, 'ErrorInvalidRecipients'],
    [
      'a recipient without an address',
      { message: { subject: 'x', toRecipients: [{ emailAddress: { name: 'A' } }] } },
      'ErrorInvalidRecipients',
    ],
    ['bare strings as recipients', { message: { subject: 'x', toRecipients: ['a@x.com'] } }, 'RequestBodyRead'],
    [
      'saveToSentItems inside the message',
      { message: { subject: 'x', toRecipients: [{ emailAddress: { address: 'a@x.com' } }], saveToSentItems: false } },
      'RequestBodyRead',
    ],
    [
      'an unknown body type',
      {
        message: {
          subject: 'x',
          body: { contentType: 'markdown', content: 'y' },
          toRecipients: [{ emailAddress: { address: 'a@x.com' } }],
        },
      },
      'RequestBodyRead',
    ],
  ])('refuses sendMail with %s', async (_what, body, errorCode) => {
    const a = await call('POST', '/v1.0/me/sendMail', { body });
    expect(a.status).toBe(400);
    expect(code(a)).toBe(errorCode);
  });

  it('replies with 202 to replyTo when the message has one, else to the sender, and saves the reply', async () => {
    const toBudget = await call(
      'POST',
      `/v1.0/me/messages/${encodeURIComponent(graph.sample.messageWithReplyTo!)}/reply`,
      { body: { comment: 'Thursday works.' } },
    );
    expect([toBudget.status, toBudget.text]).toEqual([202, '']);
    await call('POST', `/v1.0/me/messages/${encodeURIComponent(graph.sample.plainTextMessage!)}/reply`, {
      body: { comment: 'Yes!' },
    });
    expect(
      graph.state.sentItems.map((m) => [m.subject, ((m.toRecipients as Json[])[0]!.emailAddress as Json).address]),
    ).toEqual([
      ['RE: Lunch', 'carol@contoso.example'],
      ['RE: Budget review', 'finance@fabrikam.example'],
    ]);
    const both = await call('POST', `/v1.0/me/messages/${encodeURIComponent(graph.sample.plainTextMessage!)}/reply`, {
      body: { comment: 'a', message: { body: { content: 'b' } } },
    });
    expect(both.status).toBe(400);
    expect((await call('POST', '/v1.0/me/messages/missing/reply', { body: { comment: 'a' } })).status).toBe(404);
  });
});

describe('mailbox settings', () => {
  it('reads and merges updates, answering with the updated properties', async () => {
    const before = await call('GET', '/v1.0/me/mailboxSettings');
    expect(before.json).toMatchObject({
      timeZone: 'UTC',
      language: { locale: 'en-US' },
      workingHours: { timeZone: { name: 'Pacific Standard Time' } },
    });
    const patched = await call('PATCH', '/v1.0/me/mailboxSettings', {
      body: {
        automaticRepliesSetting: { status: 'alwaysEnabled', externalReplyMessage: 'Away' },
        timeZone: 'Europe/Berlin',
      },
    });
    expect(patched.status).toBe(200);
    expect(Object.keys(patched.json).sort()).toEqual(['@odata.context', 'automaticRepliesSetting', 'timeZone']);
    expect(patched.json.automaticRepliesSetting).toMatchObject({
      status: 'alwaysEnabled',
      externalAudience: 'all',
      externalReplyMessage: 'Away',
    });
    expect(graph.state.mailboxSettings.timeZone).toBe('Europe/Berlin');
  });

  it.each([
    ['a malformed time of day', { workingHours: { startTime: '8am' } }, 'RequestBodyRead'],
    ['an unknown status', { automaticRepliesSetting: { status: 'on' } }, 'RequestBodyRead'],
    ['an unknown time zone', { timeZone: 'Nowhere Standard Time' }, 'TimeZoneNotSupportedException'],
    ['a read-only property', { userPurpose: 'shared' }, 'RequestBodyRead'],
    [
      'a scheduled window that ends before it starts',
      {
        automaticRepliesSetting: {
          status: 'scheduled',
          scheduledStartDateTime: { dateTime: '2026-09-05T00:00:00', timeZone: 'UTC' },
          scheduledEndDateTime: { dateTime: '2026-09-01T00:00:00', timeZone: 'UTC' },
        },
      },
      'ErrorInvalidTimeSettings',
    ],
  ])('refuses %s', async (_what, body, errorCode) => {
    const a = await call('PATCH', '/v1.0/me/mailboxSettings', { body });
    expect(a.status).toBe(400);
    expect(code(a)).toBe(errorCode);
  });
});

describe('To Do', () => {
  it('creates, renames, lists and deletes task lists; deleting a list deletes its tasks', async () => {
    const created = await call('POST', '/v1.0/me/todo/lists', { body: { displayName: 'Groceries' } });
    expect(created.status).toBe(201);
    const id = encodeURIComponent(created.json.id as string);
    expect((await call('PATCH', `/v1.0/me/todo/lists/${id}`, { body: { displayName: 'Food' } })).json.displayName).toBe(
      'Food',
    );
    expect(values(await call('GET', '/v1.0/me/todo/lists')).map((l) => l.displayName)).toEqual(['Tasks', 'Food']);
    await call('POST', `/v1.0/me/todo/lists/${id}/tasks`, { body: { title: 'Milk' } });
    expect((await call('DELETE', `/v1.0/me/todo/lists/${id}`)).status).toBe(204);
    expect(graph.state.tasks.has(created.json.id as string)).toBe(false);
    expect(code(await call('GET', `/v1.0/me/todo/lists/${id}`))).toBe('ErrorItemNotFound');
    expect((await call('POST', '/v1.0/me/todo/lists', { body: {} })).status).toBe(400);
  });

  it('creates, updates, filters and deletes tasks; due dates come back in UTC', async () => {
    const list = encodeURIComponent(graph.sample.defaultList!);
    const created = await call('POST', `/v1.0/me/todo/lists/${list}/tasks`, {
      body: {
        title: 'Call the bank',
        body: { content: 'IBAN', contentType: 'text' },
        dueDateTime: { dateTime: '2026-05-04T00:00:00', timeZone: 'Europe/Paris' },
        isReminderOn: true,
        reminderDateTime: { dateTime: '2026-05-04T08:30:00', timeZone: 'Europe/Paris' },
      },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      status: 'notStarted',
      importance: 'normal',
      dueDateTime: { dateTime: '2026-05-03T22:00:00.0000000', timeZone: 'UTC' },
    });
    const task = encodeURIComponent(created.json.id as string);
    const done = await call('PATCH', `/v1.0/me/todo/lists/${list}/tasks/${task}`, { body: { status: 'completed' } });
    expect(done.json).toMatchObject({ status: 'completed', completedDateTime: { timeZone: 'UTC' } });
    const open = await call('GET', `/v1.0/me/todo/lists/${list}/tasks?$filter=status%20eq%20'notStarted'`);
    expect(values(open).map((t) => t.title)).toEqual(['Send the slides']);
    expect((await call('DELETE', `/v1.0/me/todo/lists/${list}/tasks/${task}`)).status).toBe(204);
    expect((await call('GET', `/v1.0/me/todo/lists/${list}/tasks/${task}`)).status).toBe(404);
  });

  it.each([
    ['an unknown status', { title: 't', status: 'done' }],
    ['a due date without time zone', { title: 't', dueDateTime: { dateTime: '2026-05-04T00:00:00' } }],
    ['a body that is a string', { title: 't', body: 'notes' }],
    ['an id', { id: 'mine', title: 't' }],
  ])('refuses a task with %s', async (_what, body) => {
    const a = await call('POST', `/v1.0/me/todo/lists/${encodeURIComponent(graph.sample.defaultList!)}/tasks`, {
      body,
    });
    expect(a.status).toBe(400);
  });
});
