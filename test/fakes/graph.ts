/**
 * A fake Microsoft Graph v1.0 for tests and the offline demo: a small stateful server for everything the
 * `mail` connector's tools call under `/v1.0/me/...` (events, contacts, messages and attachments, sendMail,
 * reply, mailboxSettings, To Do lists and tasks), speaking Graph's wire format: `@odata.context` and
 * `@odata.nextLink` envelopes, 201/200/202/204 as Graph answers, `{"error":{"code","message","innerError"}}`
 * bodies, 429 with Retry-After on demand.
 *
 * It checks what it receives, so a wrong mapping fails a test: the bearer token (through `validateToken`),
 * the JSON content type, every body property against the Graph type it lands in (see graph-shapes.ts), and
 * every query option (see graph-odata.ts). It is stricter than Graph in one documented way: query options must
 * carry their `$`.
 *
 * Simplifications: one mailbox (`/me`); time zones are IANA names or the common Windows names; event times
 * are stored in UTC and answered in UTC unless `Prefer: outlook.timezone="<zone>"` asks otherwise; bodies are
 * returned in the content type they were written in.
 */
import express from 'express';
import { randomUUID } from 'node:crypto';
import { listen } from './listen.ts';
import { checkOptions, page, parseQuery, parseSearch, parseSelect, select, type Query } from './graph-odata.ts';
import {
  checkTimeZone,
  contactFields,
  eventChanges,
  GraphError,
  ianaZone,
  instantToLocal,
  localToInstant,
  mailboxSettingsChanges,
  messageFields,
  object,
  onlyKnown,
  todoListFields,
  todoTaskFields,
  bool,
  str,
  type Json,
} from './graph-shapes.ts';
import { asText } from '../helpers/text.ts';

export type { Json } from './graph-shapes.ts';

export interface ReceivedRequest {
  method: string;
  /** Path as received, percent-encoding included (`/v1.0/me/events/AAMk...%3D`). */
  path: string;
  /** Decoded query options. */
  query: Record<string, string>;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** Parsed JSON body, or undefined. */
  body: unknown;
  /** The status the fake answered with (set once the response is sent). */
  status?: number;
}

/** Something the mailbox sent: a message, a reply, or a meeting invitation or cancellation. */
export interface OutboxItem {
  kind: 'message' | 'reply' | 'invitation' | 'cancellation';
  message: Json;
  /** Whether a copy went to Sent Items. */
  savedToSentItems: boolean;
}

export interface SeedAttachment {
  id?: string;
  name: string;
  contentType: string;
  /** Base64 content of a file attachment. */
  contentBytes: string;
  isInline?: boolean;
}

export interface SeedMessage {
  id?: string;
  subject: string;
  from: string;
  to?: string[];
  cc?: string[];
  replyTo?: string[];
  body?: string;
  bodyType?: 'text' | 'html';
  receivedDateTime?: string;
  isRead?: boolean;
  importance?: 'low' | 'normal' | 'high';
  folder?: WellKnownFolder;
  attachments?: SeedAttachment[];
}

type WellKnownFolder = 'inbox' | 'sentitems' | 'drafts' | 'deleteditems';
const FOLDERS: WellKnownFolder[] = ['inbox', 'sentitems', 'drafts', 'deleteditems'];

const nowIso = () => new Date().toISOString();
const address = (a: string) => ({ emailAddress: { name: a, address: a } });
const stripTags = (html: string) =>
  html
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

/** A Graph-looking id (base64url with padding, so it can hold `-`, `_` and `=`). */
function graphId(prefix: string, seed: string): string {
  const b = Buffer.from(seed).toString('base64url');
  return `${prefix}${b}${'='.repeat((4 - (b.length % 4)) % 4)}`;
}

/**
 * Everything the fake mailbox holds, readable and writable by tests. Objects are stored as Graph returns them
 * (event times in UTC); `add*` helpers take the same shapes the API takes and fill in what Graph would.
 */
export class GraphState {
  readonly user = {
    id: '87d349ed-44d7-43e1-9a83-5f2406dee5bd',
    displayName: 'Megan Bowen',
    givenName: 'Megan',
    surname: 'Bowen',
    mail: 'megan@contoso.example',
    userPrincipalName: 'megan@contoso.example',
    jobTitle: 'Marketing Manager',
    businessPhones: ['+1 412 555 0109'],
    mobilePhone: null,
    officeLocation: '12/1110',
    preferredLanguage: 'en-US',
  };
  readonly folderIds: Record<WellKnownFolder, string> = Object.fromEntries(
    FOLDERS.map((f) => [f, graphId('AAMkAGI2AAEu', `folder-${f}`)]),
  ) as Record<WellKnownFolder, string>;
  readonly events = new Map<string, Json>();
  readonly contacts = new Map<string, Json>();
  readonly messages = new Map<string, Json>();
  /** File attachments by message id. */
  readonly attachments = new Map<string, Json[]>();
  readonly todoLists = new Map<string, Json>();
  /** Tasks by list id. */
  readonly tasks = new Map<string, Map<string, Json>>();
  mailboxSettings: Json = defaultMailboxSettings();
  /** Everything the mailbox sent, whether or not a copy was saved to Sent Items. */
  readonly outbox: OutboxItem[] = [];
  private counter = 0;

  nextId(prefix: string, kind: string): string {
    return graphId(prefix, `${kind}-${++this.counter}`);
  }

  etag(): string {
    return `W/"${Buffer.from(`v${++this.counter}`).toString('base64')}"`;
  }

  /** Messages in Sent Items, newest first. */
  get sentItems(): Json[] {
    return [...this.messages.values()].filter((m) => m.parentFolderId === this.folderIds.sentitems).reverse();
  }

  folderOf(name: string): string | undefined {
    const lower = name.toLowerCase() as WellKnownFolder;
    if (FOLDERS.includes(lower)) return this.folderIds[lower];
    return Object.values(this.folderIds).includes(name) ? name : undefined;
  }

  /** Adds an event given as a Graph request body (POST /me/events), with an optional fixed id. */
  addEvent(body: Json & { id?: string }): Json {
    const { id, ...rest } = body;
    const event = newEvent(this, id ?? this.nextId('AAMkAGI2TG', 'event'), eventChanges(rest, true));
    checkAllDay(event);
    this.events.set(event.id as string, event);
    return event;
  }

  /** Adds a contact given as a Graph request body (POST /me/contacts). */
  addContact(body: Json & { id?: string }): Json {
    const { id, ...rest } = body;
    const contact = newContact(this, id ?? this.nextId('AAMkAGI2Q0', 'contact'), contactFields(rest));
    this.contacts.set(contact.id as string, contact);
    return contact;
  }

  addMessage(seed: SeedMessage): Json {
    const id = seed.id ?? this.nextId('AAMkAGI2TH', 'message');
    const received = seed.receivedDateTime ?? nowIso();
    const content = seed.body ?? '';
    const message: Json = {
      '@odata.etag': this.etag(),
      id,
      createdDateTime: received,
      lastModifiedDateTime: received,
      changeKey: this.etag().slice(3, -1),
      categories: [],
      receivedDateTime: received,
      sentDateTime: received,
      hasAttachments: !!seed.attachments?.length,
      internetMessageId: `<${randomUUID()}@contoso.example>`,
      subject: seed.subject,
      bodyPreview: stripTags(content).slice(0, 255),
      importance: seed.importance ?? 'normal',
      parentFolderId: this.folderIds[seed.folder ?? 'inbox'],
      conversationId: graphId('AAQkAGI2', `conversation-${seed.subject.replace(/^(RE|FW): /i, '')}`),
      isDeliveryReceiptRequested: false,
      isReadReceiptRequested: false,
      isRead: seed.isRead ?? false,
      isDraft: false,
      webLink: `https://outlook.office365.com/owa/?ItemID=${encodeURIComponent(id)}`,
      inferenceClassification: 'focused',
      body: { contentType: seed.bodyType ?? 'html', content },
      sender: address(seed.from),
      from: address(seed.from),
      toRecipients: (seed.to ?? [this.user.mail]).map(address),
      ccRecipients: (seed.cc ?? []).map(address),
      bccRecipients: [],
      replyTo: (seed.replyTo ?? []).map(address),
      flag: { flagStatus: 'notFlagged' },
    };
    this.messages.set(id, message);
    this.attachments.set(
      id,
      (seed.attachments ?? []).map((a) => ({
        '@odata.type': '#microsoft.graph.fileAttachment',
        '@odata.mediaContentType': a.contentType,
        id: a.id ?? this.nextId('AAMkAGI2THAT', 'attachment'),
        lastModifiedDateTime: received,
        name: a.name,
        contentType: a.contentType,
        size: Buffer.from(a.contentBytes, 'base64').length,
        isInline: a.isInline ?? false,
        contentId: null,
        contentLocation: null,
        contentBytes: a.contentBytes,
      })),
    );
    return message;
  }

  addTodoList(body: {
    id?: string;
    displayName: string;
    wellknownListName?: 'none' | 'defaultList' | 'flaggedEmails';
  }): Json {
    const id = body.id ?? this.nextId('AAMkADIy', 'list');
    const list: Json = {
      '@odata.etag': this.etag(),
      displayName: body.displayName,
      isOwner: true,
      isShared: false,
      wellknownListName: body.wellknownListName ?? 'none',
      id,
    };
    this.todoLists.set(id, list);
    this.tasks.set(id, new Map());
    return list;
  }

  /** Adds a task given as a Graph request body (POST /me/todo/lists/{id}/tasks). */
  addTask(listId: string, body: Json & { id?: string }): Json {
    const tasks = this.tasks.get(listId);
    if (!tasks) throw new Error(`no task list ${listId}`);
    const { id, ...rest } = body;
    const created = nowIso();
    const task: Json = {
      '@odata.etag': this.etag(),
      importance: 'normal',
      isReminderOn: false,
      status: 'notStarted',
      title: '',
      createdDateTime: created,
      lastModifiedDateTime: created,
      hasAttachments: false,
      categories: [],
      id: id ?? this.nextId('AAkALgAAAAAAHYQDEapmEc2byACqAC-EWg0A', 'task'),
      body: { content: '', contentType: 'text' },
    };
    applyTaskChanges(task, todoTaskFields(rest));
    tasks.set(task.id as string, task);
    return task;
  }

  /** A small realistic mailbox: three messages (one with a PDF attachment), a contact, an event and a default task list. */
  seedSample(): SampleIds {
    const report = this.addMessage({
      subject: 'Quarterly report',
      from: 'alice@fabrikam.example',
      body: '<p>Hi Megan, the quarterly report is attached.</p>',
      receivedDateTime: '2026-09-02T08:15:00Z',
      attachments: [
        {
          name: 'report.pdf',
          contentType: 'application/pdf',
          contentBytes: Buffer.from('%PDF-1.4 quarterly report').toString('base64'),
        },
      ],
    });
    const budget = this.addMessage({
      subject: 'Budget review',
      from: 'bob@fabrikam.example',
      replyTo: ['finance@fabrikam.example'],
      body: '<p>Can we go over the budget on Thursday?</p>',
      receivedDateTime: '2026-09-03T10:00:00Z',
      importance: 'high',
    });
    const lunch = this.addMessage({
      subject: 'Lunch',
      from: 'carol@contoso.example',
      body: 'Noon at the usual place?',
      bodyType: 'text',
      receivedDateTime: '2026-09-04T11:30:00Z',
      isRead: true,
    });
    const contact = this.addContact({
      givenName: 'Ada',
      surname: 'Lovelace',
      emailAddresses: [{ address: 'ada@engines.example', name: 'Ada Lovelace' }],
    });
    const event = this.addEvent({
      subject: 'Planning',
      start: { dateTime: '2026-09-10T09:00:00', timeZone: 'UTC' },
      end: { dateTime: '2026-09-10T10:00:00', timeZone: 'UTC' },
    });
    const list = this.addTodoList({ displayName: 'Tasks', wellknownListName: 'defaultList' });
    const task = this.addTask(list.id as string, { title: 'Send the slides' });
    return {
      messageWithAttachment: report.id as string,
      attachment: this.attachments.get(report.id as string)![0]!.id as string,
      messageWithReplyTo: budget.id as string,
      plainTextMessage: lunch.id as string,
      contact: contact.id as string,
      event: event.id as string,
      defaultList: list.id as string,
      task: task.id as string,
    };
  }
}

export interface SampleIds {
  messageWithAttachment: string;
  attachment: string;
  messageWithReplyTo: string;
  plainTextMessage: string;
  contact: string;
  event: string;
  defaultList: string;
  task: string;
}

function defaultMailboxSettings(): Json {
  return {
    archiveFolder: graphId('AAMkAGI2AAEu', 'folder-archive'),
    timeZone: 'UTC',
    automaticRepliesSetting: {
      status: 'disabled',
      externalAudience: 'all',
      internalReplyMessage: '',
      externalReplyMessage: '',
      scheduledStartDateTime: { dateTime: '2026-01-01T00:00:00.0000000', timeZone: 'UTC' },
      scheduledEndDateTime: { dateTime: '2026-01-02T00:00:00.0000000', timeZone: 'UTC' },
    },
    dateFormat: 'M/d/yyyy',
    timeFormat: 'h:mm tt',
    userPurpose: 'user',
    delegateMeetingMessageDeliveryOptions: 'sendToDelegateOnly',
    language: { locale: 'en-US', displayName: 'English (United States)' },
    workingHours: {
      daysOfWeek: ['monday', 'tuesday', 'wednesday', 'thursday', 'friday'],
      startTime: '08:00:00.0000000',
      endTime: '17:00:00.0000000',
      timeZone: { name: 'Pacific Standard Time' },
    },
  };
}

function newEvent(state: GraphState, id: string, changes: Json): Json {
  const created = nowIso();
  const event: Json = {
    '@odata.etag': state.etag(),
    id,
    createdDateTime: created,
    lastModifiedDateTime: created,
    changeKey: state.etag().slice(3, -1),
    categories: [],
    transactionId: null,
    originalStartTimeZone: 'UTC',
    originalEndTimeZone: 'UTC',
    iCalUId: `040000008200E00074C5B7101A82E008${Buffer.from(id).toString('hex').slice(0, 32).toUpperCase()}`,
    reminderMinutesBeforeStart: 15,
    isReminderOn: true,
    hasAttachments: false,
    subject: '',
    bodyPreview: '',
    importance: 'normal',
    sensitivity: 'normal',
    isAllDay: false,
    isCancelled: false,
    isOrganizer: true,
    responseRequested: true,
    seriesMasterId: null,
    showAs: 'busy',
    type: 'singleInstance',
    webLink: `https://outlook.office365.com/owa/?itemid=${encodeURIComponent(id)}&exvsurl=1&path=/calendar/item`,
    onlineMeetingUrl: null,
    isOnlineMeeting: false,
    onlineMeetingProvider: 'unknown',
    allowNewTimeProposals: true,
    isDraft: false,
    hideAttendees: false,
    responseStatus: { response: 'organizer', time: '0001-01-01T00:00:00Z' },
    body: { contentType: 'html', content: '' },
    start: null,
    end: null,
    location: { displayName: '', locationType: 'default', uniqueIdType: 'unknown', address: {}, coordinates: {} },
    locations: [],
    recurrence: null,
    attendees: [],
    organizer: { emailAddress: { name: state.user.displayName, address: state.user.mail } },
    onlineMeeting: null,
  };
  applyEventChanges(event, changes);
  return event;
}

function applyEventChanges(event: Json, changes: Json): void {
  Object.assign(event, changes);
  if (changes.body) event.bodyPreview = stripTags(asText((changes.body as Json).content ?? '')).slice(0, 255);
  if ('location' in changes && !('locations' in changes))
    event.locations = (changes.location as Json).displayName ? [changes.location] : [];
  if ('locations' in changes && !('location' in changes)) {
    const first = (changes.locations as Json[])[0];
    event.location = first ?? {
      displayName: '',
      locationType: 'default',
      uniqueIdType: 'unknown',
      address: {},
      coordinates: {},
    };
  }
  event.type = event.recurrence ? 'seriesMaster' : 'singleInstance';
  event.onlineMeeting = event.isOnlineMeeting
    ? { joinUrl: `https://teams.microsoft.com/l/meetup-join/${encodeURIComponent(String(event.id))}` }
    : null;
  if (event.isOnlineMeeting && event.onlineMeetingProvider === 'unknown')
    event.onlineMeetingProvider = 'teamsForBusiness';
}

/** Graph only lets an all-day event start and end at midnight in its own time zone. */
function checkAllDay(event: Json): void {
  if (!event.isAllDay) return;
  for (const key of ['start', 'end'] as const) {
    const stored = event[key] as Json;
    const zone = ianaZone(String(event[key === 'start' ? 'originalStartTimeZone' : 'originalEndTimeZone']))!;
    const local = instantToLocal(localToInstant(String(stored.dateTime).slice(0, 19), 'UTC'), zone);
    if (!local.includes('T00:00:00')) {
      throw new GraphError(
        400,
        'ErrorInvalidProperty',
        `An all-day event's ${key} must be midnight in its time zone; got ${local.slice(0, 19)}.`,
      );
    }
  }
}

function newContact(state: GraphState, id: string, fields: Json): Json {
  const created = nowIso();
  const contact: Json = {
    '@odata.etag': state.etag(),
    id,
    createdDateTime: created,
    lastModifiedDateTime: created,
    changeKey: state.etag().slice(3, -1),
    categories: [],
    parentFolderId: graphId('AAMkAGI2AAEu', 'folder-contacts'),
    birthday: null,
    fileAs: '',
    displayName: '',
    givenName: null,
    initials: null,
    middleName: null,
    nickName: null,
    surname: null,
    title: null,
    generation: null,
    imAddresses: [],
    jobTitle: null,
    companyName: null,
    department: null,
    officeLocation: null,
    profession: null,
    businessHomePage: null,
    assistantName: null,
    manager: null,
    homePhones: [],
    mobilePhone: null,
    businessPhones: [],
    spouseName: null,
    personalNotes: '',
    children: [],
    emailAddresses: [],
    homeAddress: {},
    businessAddress: {},
    otherAddress: {},
    ...fields,
  };
  if (!fields.displayName) contact.displayName = [contact.givenName, contact.surname].filter(Boolean).join(' ');
  return contact;
}

function applyTaskChanges(task: Json, changes: Json): void {
  for (const key of ['dueDateTime', 'reminderDateTime', 'startDateTime', 'completedDateTime'] as const) {
    const d = changes[key] as Json | null | undefined;
    // To Do reports these in UTC, whatever zone they were written in.
    if (d)
      changes[key] = {
        dateTime: instantToLocal(localToInstant(String(d.dateTime).slice(0, 19), ianaZone(String(d.timeZone))!), 'UTC'),
        timeZone: 'UTC',
      };
  }
  Object.assign(task, changes);
  for (const key of ['dueDateTime', 'reminderDateTime', 'startDateTime', 'completedDateTime'] as const)
    if (task[key] === null) delete task[key];
  if (changes.status === 'completed' && !task.completedDateTime) {
    task.completedDateTime = { dateTime: instantToLocal(Date.now(), 'UTC'), timeZone: 'UTC' };
  }
  task.lastModifiedDateTime = nowIso();
}

// ------------------------------------------------------------------------------------------------------------
// Server
// ------------------------------------------------------------------------------------------------------------

export interface FakeGraphOptions {
  /** Decides whether a bearer token is valid (e.g. `(t) => !!oauth.validate(t)` with the fake OAuth server). */
  validateToken: (token: string) => boolean;
  /** Seed the sample mailbox (`GraphState.seedSample`); default true. */
  sample?: boolean;
}

export interface FakeGraph {
  /** Base URL to use as the connection's API base (`<url>/v1.0/me/...` is served). */
  url: string;
  state: GraphState;
  /** Ids of the sample mailbox's objects (empty when `sample: false`). */
  sample: Partial<SampleIds>;
  /** Every request received, in order. */
  requests: ReceivedRequest[];
  /** The next `count` requests get 429 (or 503) with `Retry-After: retryAfterSeconds` (default 1). */
  failNext(count?: number, opts?: { status?: 429 | 503; retryAfterSeconds?: number }): void;
  close(): Promise<void>;
}

const JSON_TYPE =
  'application/json; odata.metadata=minimal; odata.streaming=true; IEEE754Compatible=false; charset=utf-8';
const SINGLE = ['$select'];
const COLLECTION = ['$filter', '$orderby', '$select', '$skip', '$top', '$count'];

export async function startFakeGraph(opts: FakeGraphOptions): Promise<FakeGraph> {
  const state = new GraphState();
  const sample = opts.sample === false ? {} : state.seedSample();
  const requests: ReceivedRequest[] = [];
  const failures = { count: 0, status: 429 as 429 | 503, retryAfter: 1 };
  let base = '';
  const context = (what: string) => `${base}/v1.0/$metadata#users('${state.user.id}')/${what}`;

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.raw({ type: () => true, limit: '10mb' }));

  app.use((req, res, next) => {
    const requestId = randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('request-id', requestId);
    res.setHeader('client-request-id', String(req.headers['client-request-id'] ?? requestId));
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const entry: ReceivedRequest = {
      method: req.method,
      path: req.originalUrl.split('?')[0]!,
      query: Object.fromEntries(new URL(req.originalUrl, 'http://fake.invalid').searchParams),
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]),
      ),
      body: undefined,
    };
    requests.push(entry);
    res.on('finish', () => (entry.status = res.statusCode));
    try {
      if (failures.count > 0) {
        failures.count--;
        throw new GraphError(
          failures.status,
          failures.status === 429 ? 'TooManyRequests' : 'ServiceUnavailable',
          failures.status === 429
            ? 'Too many requests. Retry after the time in the Retry-After header.'
            : 'The service is temporarily unavailable.',
          { 'Retry-After': String(failures.retryAfter) },
        );
      }
      const auth = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
      if (!auth)
        throw new GraphError(401, 'InvalidAuthenticationToken', 'Access token is empty.', {
          'WWW-Authenticate': 'Bearer realm=""',
        });
      if (!opts.validateToken(auth[1]!.trim())) {
        throw new GraphError(
          401,
          'InvalidAuthenticationToken',
          'Access token validation failure. Invalid audience or expired token.',
          {
            'WWW-Authenticate': 'Bearer realm="", error="invalid_token"',
          },
        );
      }
      if (raw.length) {
        const type = String(req.headers['content-type'] ?? '').toLowerCase();
        if (!type.startsWith('application/json')) {
          throw new GraphError(
            415,
            'UnsupportedMediaType',
            `Content-Type '${type || '(none)'}' is not supported; send application/json.`,
          );
        }
        try {
          entry.body = JSON.parse(raw.toString('utf8'));
        } catch (e) {
          throw new GraphError(400, 'RequestBodyRead', `Invalid JSON. ${(e as Error).message}`);
        }
      }
      req.body = entry.body;
      res.locals.query = parseQuery(req.originalUrl);
      next();
    } catch (e) {
      sendError(res, e);
    }
  });

  const me = express.Router({ caseSensitive: false });
  app.use('/v1.0/me', me);

  type Handler = (req: express.Request, res: express.Response, query: Query) => void;
  const route = (
    method: 'get' | 'post' | 'patch' | 'delete',
    path: string,
    allowed: readonly string[],
    handler: Handler,
  ) => {
    me[method](path, (req, res) => {
      try {
        const query = res.locals.query as Query;
        checkOptions(query, allowed);
        if ((method === 'post' || method === 'patch') && req.body === undefined) {
          throw new GraphError(400, 'RequestBodyRead', 'Empty Payload. JSON content expected.');
        }
        handler(req, res, query);
      } catch (e) {
        sendError(res, e);
      }
    });
  };
  const json = (res: express.Response, status: number, body: Json) =>
    res.status(status).type(JSON_TYPE).send(JSON.stringify(body));
  const notFound = (what: string) =>
    new GraphError(404, 'ErrorItemNotFound', `The specified ${what} could not be found in the store.`);
  const param = (req: express.Request, name: string) => String(req.params[name]);
  const selfUrl = (req: express.Request) => `${base}${req.originalUrl.split('?')[0]}`;

  /** Event times in the zone `Prefer: outlook.timezone` names, else UTC. */
  const presentEvent = (req: express.Request, event: Json): Json => {
    const prefer = /outlook\.timezone="([^"]+)"/i.exec(String(req.headers.prefer ?? ''))?.[1];
    const zone = prefer ? ianaZone(prefer) : undefined;
    if (!zone || !prefer) return event;
    const shift = (d: Json | null) =>
      d
        ? { dateTime: instantToLocal(localToInstant(String(d.dateTime).slice(0, 19), 'UTC'), zone), timeZone: prefer }
        : d;
    return { ...event, start: shift(event.start as Json | null), end: shift(event.end as Json | null) };
  };

  // -- user -------------------------------------------------------------------------------------------------
  route('get', '/', SINGLE, (_req, res, q) =>
    json(res, 200, {
      '@odata.context': `${base}/v1.0/$metadata#users/$entity`,
      ...select(state.user, parseSelect(q.$select)),
    }),
  );

  // -- events -----------------------------------------------------------------------------------------------
  route('get', '/events', COLLECTION, (req, res, q) => {
    const all = [...state.events.values()].map((e) => presentEvent(req, e));
    json(res, 200, page(all, q, { context: context('events'), selfUrl: selfUrl(req) }));
  });
  route('post', '/events', [], (req, res) => {
    const event = newEvent(state, state.nextId('AAMkAGI2TG', 'event'), eventChanges(req.body, true));
    checkAllDay(event);
    state.events.set(event.id as string, event);
    const attendees = event.attendees as Json[];
    if (attendees.length)
      state.outbox.push({
        kind: 'invitation',
        message: {
          subject: event.subject,
          toRecipients: attendees.map((a) => ({ emailAddress: a.emailAddress })),
          event: event.id,
        },
        savedToSentItems: false,
      });
    json(res, 201, { '@odata.context': context('events/$entity'), ...presentEvent(req, event) });
  });
  route('get', '/events/:id', SINGLE, (req, res, q) => {
    const event = state.events.get(param(req, 'id'));
    if (!event) throw notFound('object');
    json(res, 200, {
      '@odata.context': context('events/$entity'),
      ...select(presentEvent(req, event), parseSelect(q.$select)),
    });
  });
  route('patch', '/events/:id', [], (req, res) => {
    const event = state.events.get(param(req, 'id'));
    if (!event) throw notFound('object');
    const next = structuredClone(event);
    applyEventChanges(next, eventChanges(req.body, false));
    checkAllDay(next);
    next['@odata.etag'] = state.etag();
    next.lastModifiedDateTime = nowIso();
    state.events.set(next.id as string, next);
    json(res, 200, { '@odata.context': context('events/$entity'), ...presentEvent(req, next) });
  });
  route('delete', '/events/:id', [], (req, res) => {
    const event = state.events.get(param(req, 'id'));
    if (!event) throw notFound('object');
    state.events.delete(event.id as string);
    const attendees = event.attendees as Json[];
    if (event.isOrganizer && attendees.length) {
      state.outbox.push({
        kind: 'cancellation',
        message: {
          subject: `Canceled: ${String(event.subject)}`,
          toRecipients: attendees.map((a) => ({ emailAddress: a.emailAddress })),
          event: event.id,
        },
        savedToSentItems: false,
      });
    }
    res.status(204).end();
  });

  // -- contacts ---------------------------------------------------------------------------------------------
  route('get', '/contacts', COLLECTION, (req, res, q) => {
    json(res, 200, page([...state.contacts.values()], q, { context: context('contacts'), selfUrl: selfUrl(req) }));
  });
  route('post', '/contacts', [], (req, res) => {
    const contact = newContact(state, state.nextId('AAMkAGI2Q0', 'contact'), contactFields(req.body));
    state.contacts.set(contact.id as string, contact);
    json(res, 201, { '@odata.context': context('contacts/$entity'), ...contact });
  });
  route('get', '/contacts/:id', SINGLE, (req, res, q) => {
    const contact = state.contacts.get(param(req, 'id'));
    if (!contact) throw notFound('object');
    json(res, 200, { '@odata.context': context('contacts/$entity'), ...select(contact, parseSelect(q.$select)) });
  });
  route('patch', '/contacts/:id', [], (req, res) => {
    const contact = state.contacts.get(param(req, 'id'));
    if (!contact) throw notFound('object');
    Object.assign(contact, contactFields(req.body), { '@odata.etag': state.etag(), lastModifiedDateTime: nowIso() });
    json(res, 200, { '@odata.context': context('contacts/$entity'), ...contact });
  });
  route('delete', '/contacts/:id', [], (req, res) => {
    if (!state.contacts.delete(param(req, 'id'))) throw notFound('object');
    res.status(204).end();
  });

  // -- messages ---------------------------------------------------------------------------------------------
  const listMessages = (req: express.Request, res: express.Response, q: Query, folderId?: string) => {
    let all = [...state.messages.values()];
    if (folderId) all = all.filter((m) => m.parentFolderId === folderId);
    if (q.$search !== undefined) {
      if (q.$filter !== undefined || q.$orderby !== undefined) {
        throw new GraphError(400, 'ErrorInvalidUrlQuery', '$search cannot be combined with $filter or $orderby.');
      }
      const matches = parseSearch(q.$search);
      all = all.filter((m) =>
        matches(
          m,
          (state.attachments.get(m.id as string) ?? []).map((a) => String(a.name)),
        ),
      );
    }
    const defaultOrder = [{ path: q.$search !== undefined ? 'sentDateTime' : 'receivedDateTime', desc: true }];
    json(
      res,
      200,
      page(all, q, {
        context: context('messages'),
        selfUrl: selfUrl(req),
        defaultOrder,
        strictOrderBy: true,
        maxTop: 1000,
      }),
    );
  };
  route('get', '/messages', [...COLLECTION, '$search'], (req, res, q) => listMessages(req, res, q));
  route('get', '/mailFolders/:folder/messages', [...COLLECTION, '$search'], (req, res, q) => {
    const folderId = state.folderOf(param(req, 'folder'));
    if (!folderId) throw notFound('folder');
    listMessages(req, res, q, folderId);
  });
  const message = (req: express.Request, name = 'id') => {
    const m = state.messages.get(param(req, name));
    if (!m) throw notFound('object');
    return m;
  };
  route('get', '/messages/:id', SINGLE, (req, res, q) => {
    json(res, 200, { '@odata.context': context('messages/$entity'), ...select(message(req), parseSelect(q.$select)) });
  });
  route('patch', '/messages/:id', [], (req, res) => {
    const m = message(req);
    Object.assign(m, messageFields(req.body, 'message'), {
      '@odata.etag': state.etag(),
      lastModifiedDateTime: nowIso(),
    });
    json(res, 200, { '@odata.context': context('messages/$entity'), ...m });
  });
  route('delete', '/messages/:id', [], (req, res) => {
    const m = message(req);
    state.messages.delete(m.id as string);
    state.attachments.delete(m.id as string);
    res.status(204).end();
  });
  route('get', '/messages/:id/attachments', COLLECTION, (req, res, q) => {
    const m = message(req);
    json(
      res,
      200,
      page(state.attachments.get(m.id as string) ?? [], q, {
        context: context(`messages('${String(m.id)}')/attachments`),
        selfUrl: selfUrl(req),
      }),
    );
  });
  route('get', '/messages/:id/attachments/:attachmentId', SINGLE, (req, res, q) => {
    const m = message(req);
    const a = (state.attachments.get(m.id as string) ?? []).find((x) => x.id === param(req, 'attachmentId'));
    if (!a) throw notFound('attachment');
    json(res, 200, {
      '@odata.context': context(`messages('${String(m.id)}')/attachments/$entity`),
      ...select(a, parseSelect(q.$select)),
    });
  });

  const send = (kind: OutboxItem['kind'], fields: Json, save: boolean) => {
    const now = nowIso();
    const sent: Json = {
      '@odata.etag': state.etag(),
      id: state.nextId('AAMkAGI2TH', 'message'),
      createdDateTime: now,
      lastModifiedDateTime: now,
      categories: [],
      receivedDateTime: now,
      sentDateTime: now,
      hasAttachments: false,
      subject: '',
      importance: 'normal',
      parentFolderId: state.folderIds.sentitems,
      isRead: true,
      isDraft: false,
      body: { contentType: 'text', content: '' },
      sender: address(state.user.mail),
      from: address(state.user.mail),
      toRecipients: [],
      ccRecipients: [],
      bccRecipients: [],
      replyTo: [],
      ...fields,
    };
    sent.bodyPreview = stripTags(asText((sent.body as Json).content ?? '')).slice(0, 255);
    if (save) state.messages.set(sent.id as string, sent);
    state.outbox.push({ kind, message: sent, savedToSentItems: save });
  };

  route('post', '/sendMail', [], (req, res) => {
    const body = object(req.body, 'sendMailRequest');
    onlyKnown(body, ['message', 'saveToSentItems'], 'sendMailRequest');
    if (body.message === undefined)
      throw new GraphError(400, 'ErrorInvalidProperty', 'The message parameter is required.');
    if (body.saveToSentItems !== undefined) bool(body.saveToSentItems, 'saveToSentItems');
    const fields = messageFields(body.message, 'message');
    const count = ['toRecipients', 'ccRecipients', 'bccRecipients'].reduce(
      (n, k) => n + ((fields[k] as unknown[] | undefined)?.length ?? 0),
      0,
    );
    if (!count)
      throw new GraphError(
        400,
        'ErrorInvalidRecipients',
        "At least one recipient is not valid., A message can't be sent because it contains no recipients.",
      );
    send('message', fields, body.saveToSentItems !== false);
    res.status(202).end();
  });
  route('post', '/messages/:id/reply', [], (req, res) => {
    const original = message(req);
    const body = object(req.body, 'replyRequest');
    onlyKnown(body, ['comment', 'message'], 'replyRequest');
    if (body.comment !== undefined) str(body.comment, 'comment');
    const extra = body.message !== undefined ? messageFields(body.message, 'message') : {};
    if (body.comment !== undefined && extra.body !== undefined) {
      throw new GraphError(
        400,
        'ErrorInvalidRequest',
        'Specify either comment or the body property of the message parameter, not both.',
      );
    }
    const replyTo = original.replyTo as Json[];
    const comment = asText(body.comment ?? '');
    send(
      'reply',
      {
        subject: `RE: ${String(original.subject)}`,
        conversationId: original.conversationId,
        toRecipients: replyTo.length ? replyTo : [original.from],
        body: {
          contentType: 'html',
          content: `<div>${comment}</div><hr><div>${String((original.body as Json).content)}</div>`,
        },
        ...extra,
      },
      true,
    );
    res.status(202).end();
  });

  // -- mailbox settings -------------------------------------------------------------------------------------
  route('get', '/mailboxSettings', SINGLE, (_req, res, q) => {
    json(res, 200, {
      '@odata.context': context('mailboxSettings'),
      ...select(state.mailboxSettings, parseSelect(q.$select)),
    });
  });
  route('patch', '/mailboxSettings', [], (req, res) => {
    const changes = mailboxSettingsChanges(req.body);
    const next = structuredClone(state.mailboxSettings);
    for (const [key, value] of Object.entries(changes)) {
      next[key] =
        value && typeof value === 'object' && !Array.isArray(value)
          ? { ...(next[key] as Json), ...(value as Json) }
          : value;
    }
    const replies = next.automaticRepliesSetting as Json;
    if (replies.status === 'scheduled') {
      const start = replies.scheduledStartDateTime as Json;
      const end = replies.scheduledEndDateTime as Json;
      const at = (d: Json) =>
        localToInstant(String(d.dateTime).slice(0, 19), checkTimeZone(d.timeZone, 'automaticRepliesSetting'));
      if (at(end) <= at(start))
        throw new GraphError(400, 'ErrorInvalidTimeSettings', 'The scheduled end time must be after the start time.');
    }
    state.mailboxSettings = next;
    json(res, 200, {
      '@odata.context': context('mailboxSettings'),
      ...Object.fromEntries(Object.keys(changes).map((k) => [k, next[k]])),
    });
  });

  // -- To Do ------------------------------------------------------------------------------------------------
  const list = (req: express.Request) => {
    const l = state.todoLists.get(param(req, 'listId'));
    if (!l) throw notFound('task list');
    return l;
  };
  const task = (req: express.Request) => {
    const t = state.tasks.get(list(req).id as string)!.get(param(req, 'taskId'));
    if (!t) throw notFound('task');
    return t;
  };
  route('get', '/todo/lists', COLLECTION, (req, res, q) => {
    json(res, 200, page([...state.todoLists.values()], q, { context: context('todo/lists'), selfUrl: selfUrl(req) }));
  });
  route('post', '/todo/lists', [], (req, res) => {
    const l = state.addTodoList({ displayName: String(todoListFields(req.body, true).displayName) });
    json(res, 201, { '@odata.context': context('todo/lists/$entity'), ...l });
  });
  route('get', '/todo/lists/:listId', SINGLE, (req, res, q) => {
    json(res, 200, { '@odata.context': context('todo/lists/$entity'), ...select(list(req), parseSelect(q.$select)) });
  });
  route('patch', '/todo/lists/:listId', [], (req, res) => {
    const l = list(req);
    Object.assign(l, todoListFields(req.body, false), { '@odata.etag': state.etag() });
    json(res, 200, { '@odata.context': context('todo/lists/$entity'), ...l });
  });
  route('delete', '/todo/lists/:listId', [], (req, res) => {
    const l = list(req);
    state.todoLists.delete(l.id as string);
    state.tasks.delete(l.id as string);
    res.status(204).end();
  });
  route('get', '/todo/lists/:listId/tasks', COLLECTION, (req, res, q) => {
    const l = list(req);
    json(
      res,
      200,
      page([...state.tasks.get(l.id as string)!.values()], q, {
        context: context(`todo/lists('${String(l.id)}')/tasks`),
        selfUrl: selfUrl(req),
      }),
    );
  });
  route('post', '/todo/lists/:listId/tasks', [], (req, res) => {
    const l = list(req);
    todoTaskFields(req.body);
    const t = state.addTask(l.id as string, req.body as Json);
    json(res, 201, { '@odata.context': context(`todo/lists('${String(l.id)}')/tasks/$entity`), ...t });
  });
  route('get', '/todo/lists/:listId/tasks/:taskId', SINGLE, (req, res, q) => {
    json(res, 200, {
      '@odata.context': context(`todo/lists('${param(req, 'listId')}')/tasks/$entity`),
      ...select(task(req), parseSelect(q.$select)),
    });
  });
  route('patch', '/todo/lists/:listId/tasks/:taskId', [], (req, res) => {
    const t = task(req);
    applyTaskChanges(t, todoTaskFields(req.body));
    t['@odata.etag'] = state.etag();
    json(res, 200, { '@odata.context': context(`todo/lists('${param(req, 'listId')}')/tasks/$entity`), ...t });
  });
  route('delete', '/todo/lists/:listId/tasks/:taskId', [], (req, res) => {
    const t = task(req);
    state.tasks.get(param(req, 'listId'))!.delete(t.id as string);
    res.status(204).end();
  });

  // Graph answers an unknown path with 400 naming the segment it could not resolve.
  app.use((req, res) => {
    const segment = req.path.split('/').filter(Boolean).at(-1) ?? '';
    sendError(
      res,
      new GraphError(400, 'BadRequest', `Resource not found for the segment '${decodeURIComponent(segment)}'.`),
    );
  });

  const listening = await listen(app);
  base = listening.url;
  return {
    url: listening.url,
    state,
    sample,
    requests,
    failNext(count = 1, o = {}) {
      failures.count = count;
      failures.status = o.status ?? 429;
      failures.retryAfter = o.retryAfterSeconds ?? 1;
    },
    close: () => listening.close(),
  };
}

function sendError(res: express.Response, e: unknown): void {
  const err =
    e instanceof GraphError ? e : new GraphError(500, 'generalException', (e as Error)?.message ?? 'Internal error');
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res
    .status(err.status)
    .type(JSON_TYPE)
    .send(
      JSON.stringify({
        error: {
          code: err.code,
          message: err.message,
          innerError: {
            date: new Date().toISOString().slice(0, 19),
            'request-id': res.locals.requestId,
            'client-request-id': res.getHeader('client-request-id'),
          },
        },
      }),
    );
}
