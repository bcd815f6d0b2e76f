/**
 * Fakes of the providers behind the push triggers (docs/triggers.md, "Push triggers"), speaking their real
 * registration APIs and notification formats, and checking what they receive:
 *
 * - FakeGraphSubscriptions: Microsoft Graph change notifications. POST /v1.0/subscriptions is checked (resource,
 *   changeType, notificationUrl, lifecycleNotificationUrl, clientState of at most 128 characters, an
 *   expirationDateTime in the future within 10,080 minutes) and both URLs are validated as Graph does: a POST with
 *   `?validationToken=…` that must be answered 200, text/plain, with the token, within 10 s, else the subscription
 *   is refused (400). It may grant a shorter expiry than asked (`grantMs`), as Graph does. Notifications are
 *   `{"value":[{subscriptionId, clientState, changeType, resource, resourceData, …}]}`; lifecycle notifications
 *   carry `lifecycleEvent`. Messages and events are served by id (`$select`), and the Inbox by `$filter`.
 * - FakeZendeskWebhooks: POST /api/v2/webhooks, GET …/signing_secret, POST /api/v2/triggers (a
 *   notification_webhook action naming an existing webhook), deletions (a webhook a trigger still uses cannot be
 *   deleted). A ticket event renders the trigger's JSON body (its `{{ticket.*}}` placeholders) and posts it signed:
 *   X-Zendesk-Webhook-Signature = base64(HMAC-SHA256(timestamp + body)), X-Zendesk-Webhook-Signature-Timestamp.
 * - FakeApifyWebhooks: POST /v2/webhooks (event types, condition, requestUrl, headersTemplate as a JSON string),
 *   DELETE; a finished run posts the default payload {userId, createdAt, eventType, eventData, resource} with the
 *   template's headers.
 * - FakeHubSpotApp: GET /account-info/v3/details per token (the portal), and app webhook batches signed with v3:
 *   X-HubSpot-Signature-v3 = base64(HMAC-SHA256(client secret, method + uri + body + timestamp)),
 *   X-HubSpot-Request-Timestamp in milliseconds.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';

type Json = Record<string, unknown>;

export interface Posted {
  status: number;
  body: string;
  contentType: string;
  retryAfter: string | null;
}

/** Posts like a provider's webhook sender: the answer's status, body and type (no redirect followed). */
export async function post(url: string, body: string, headers: Record<string, string>): Promise<Posted> {
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers,
    redirect: 'manual',
    signal: AbortSignal.timeout(10_000),
  });
  return {
    status: res.status,
    body: await res.text(),
    contentType: res.headers.get('content-type') ?? '',
    retryAfter: res.headers.get('retry-after'),
  };
}

abstract class Fake {
  /** What was wrong with requests received (a test expects none). */
  readonly problems: string[] = [];
  readonly requests: Array<{ method: string; path: string; body: unknown }> = [];
  protected listening!: Listening;
  protected readonly app = express();

  get url(): string {
    return this.listening.url;
  }

  protected problem(res: Response, status: number, message: string, body?: unknown): void {
    this.problems.push(message);
    res.status(status).json(body ?? { error: message });
  }

  async start(): Promise<this> {
    this.listening = await listen(this.app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }
}

// Microsoft Graph.

export interface GraphSubscription {
  id: string;
  resource: string;
  changeType: string;
  notificationUrl: string;
  lifecycleNotificationUrl: string | null;
  clientState: string | null;
  expirationDateTime: string;
  /** PATCHes received. */
  renewals: number;
}

export interface GraphMessage {
  id: string;
  subject: string;
  receivedDateTime: string;
  from: { emailAddress: { name: string; address: string } };
  bodyPreview: string;
}

export interface GraphEvent {
  id: string;
  subject: string;
  lastModifiedDateTime: string;
  start: { dateTime: string; timeZone: string };
  end: { dateTime: string; timeZone: string };
}

const MAX_GRAPH_MINUTES = 10_080;
const TENANT = '84bd8158-6d4d-4958-8b9f-9d6445542f95';
const USER = '0b9a1c2e-3d4f-4a5b-8c6d-7e8f9a0b1c2d';

const graphError = (code: string, message: string) => ({
  error: { code, message, innerError: { 'request-id': randomUUID(), date: new Date().toISOString() } },
});

export class FakeGraphSubscriptions extends Fake {
  readonly subscriptions = new Map<string, GraphSubscription>();
  readonly deleted: string[] = [];
  readonly messages = new Map<string, GraphMessage>();
  readonly events = new Map<string, GraphEvent>();
  /** Validation requests made, and whether each was answered as Graph requires. */
  readonly validations: Array<{ url: string; ok: boolean }> = [];
  /** While set, reads of a message wait for it (a slow mailbox: notifications stay in the service's hands). */
  readsHeld: Promise<void> | undefined;
  /** Grants at most this long a subscription (Graph may grant less than asked); undefined: what was asked. */
  grantMs: number | undefined;

  constructor(private token: string) {
    super();
    this.app.use(express.json({ limit: '1mb' }));
    this.app.use((req, res, next) => {
      this.requests.push({ method: req.method, path: decodeURIComponent(req.path), body: req.body as unknown });
      if (req.headers.authorization !== `Bearer ${this.token}`) {
        res.status(401).json(graphError('InvalidAuthenticationToken', 'Access token is empty or invalid.'));
        return;
      }
      next();
    });
    this.app.post('/v1.0/subscriptions', (req, res) => void this.subscribe(req, res));
    this.app.patch('/v1.0/subscriptions/:id', (req, res) => this.renew(req, res));
    this.app.delete('/v1.0/subscriptions/:id', (req, res) => {
      if (!this.subscriptions.delete(String(req.params.id))) {
        res.status(404).json(graphError('ResourceNotFound', 'The object was not found.'));
        return;
      }
      this.deleted.push(String(req.params.id));
      res.status(204).end();
    });
    this.app.get('/v1.0/me/messages/:id', async (req, res) => {
      await this.readsHeld;
      const m = this.messages.get(String(req.params.id));
      if (!m)
        return void res
          .status(404)
          .json(graphError('ErrorItemNotFound', 'The specified object was not found in the store.'));
      res.json(select(m, req.query.$select));
    });
    this.app.get('/v1.0/me/events/:id', (req, res) => {
      const e = this.events.get(String(req.params.id));
      if (!e)
        return void res
          .status(404)
          .json(graphError('ErrorItemNotFound', 'The specified object was not found in the store.'));
      res.json(select(e, req.query.$select));
    });
    this.app.use((req, res, next) => {
      if (req.method !== 'GET' || decodeURIComponent(req.path) !== "/v1.0/me/mailFolders('Inbox')/messages")
        return next();
      const filter = typeof req.query.$filter === 'string' ? req.query.$filter : '';
      const m = /^receivedDateTime ge (\S+)$/.exec(filter);
      if (!m || !Number.isFinite(Date.parse(m[1]!))) {
        return this.problem(
          res,
          400,
          `unsupported $filter "${filter}"`,
          graphError('BadRequest', 'Invalid filter clause'),
        );
      }
      const since = Date.parse(m[1]!);
      const value = [...this.messages.values()]
        .filter((x) => Date.parse(x.receivedDateTime) >= since)
        .sort((a, b) => a.receivedDateTime.localeCompare(b.receivedDateTime))
        .map((x) => select(x, req.query.$select));
      res.json({
        '@odata.context': "https://graph.microsoft.com/v1.0/$metadata#users('me')/mailFolders('Inbox')/messages",
        value,
      });
    });
  }

  private async subscribe(req: Request, res: Response): Promise<void> {
    const b = (req.body ?? {}) as Json;
    const wrong: string[] = [];
    for (const f of ['changeType', 'notificationUrl', 'resource', 'expirationDateTime'] as const) {
      if (typeof b[f] !== 'string' || !b[f]) wrong.push(`${f} is required`);
    }
    if (typeof b.clientState === 'string' && b.clientState.length > 128)
      wrong.push('clientState is over 128 characters');
    if (typeof b.clientState !== 'string' || !b.clientState)
      wrong.push('clientState should be set (a secret per subscription)');
    const changeTypes = (typeof b.changeType === 'string' ? b.changeType : '').split(',');
    if (!changeTypes.every((c) => ['created', 'updated', 'deleted'].includes(c)))
      wrong.push(`changeType "${String(b.changeType)}"`);
    if (!['me/events', "me/mailFolders('Inbox')/messages", 'me/messages'].includes(String(b.resource))) {
      wrong.push(`resource "${String(b.resource)}" is not one this fake serves`);
    }
    const expires = Date.parse(String(b.expirationDateTime));
    if (!Number.isFinite(expires) || expires <= Date.now()) wrong.push('expirationDateTime must be in the future');
    else if (expires > Date.now() + MAX_GRAPH_MINUTES * 60_000)
      wrong.push('expirationDateTime is beyond 10080 minutes');
    for (const f of ['notificationUrl', 'lifecycleNotificationUrl'] as const) {
      if (b[f] !== undefined && !(typeof b[f] === 'string' && /^https?:\/\//.test(b[f])))
        wrong.push(`${f} must be an http(s) URL`);
    }
    if (wrong.length) {
      return this.problem(
        res,
        400,
        `subscription refused: ${wrong.join('; ')}`,
        graphError('InvalidRequest', wrong.join('; ')),
      );
    }
    // Graph validates each URL before the subscription exists.
    for (const u of [b.notificationUrl, b.lifecycleNotificationUrl].filter((x): x is string => typeof x === 'string')) {
      if (!(await this.validate(u))) {
        res
          .status(400)
          .json(
            graphError(
              'ValidationError',
              `Subscription validation request failed. Notification endpoint must respond with 200 OK to validation request.`,
            ),
          );
        return;
      }
    }
    const granted = this.grantMs === undefined ? expires : Math.min(expires, Date.now() + this.grantMs);
    const sub: GraphSubscription = {
      id: randomUUID(),
      resource: String(b.resource),
      changeType: String(b.changeType),
      notificationUrl: String(b.notificationUrl),
      lifecycleNotificationUrl: typeof b.lifecycleNotificationUrl === 'string' ? b.lifecycleNotificationUrl : null,
      clientState: String(b.clientState),
      expirationDateTime: new Date(granted).toISOString(),
      renewals: 0,
    };
    this.subscriptions.set(sub.id, sub);
    res.status(201).json({
      '@odata.context': 'https://graph.microsoft.com/v1.0/$metadata#subscriptions/$entity',
      id: sub.id,
      resource: sub.resource,
      applicationId: '24d3b144-21ae-4080-943f-7067b395b913',
      changeType: sub.changeType,
      clientState: sub.clientState,
      notificationUrl: sub.notificationUrl,
      lifecycleNotificationUrl: sub.lifecycleNotificationUrl,
      expirationDateTime: sub.expirationDateTime,
      creatorId: USER,
      latestSupportedTlsVersion: 'v1_2',
    });
  }

  /** Graph's validation request: POST with the token in the query, answered within 10 s with the token as text. */
  async validate(url: string): Promise<boolean> {
    const token = `Validation: Testing client application reachability for subscription Request-Id: ${randomUUID()}`;
    const target = `${url}${url.includes('?') ? '&' : '?'}validationToken=${encodeURIComponent(token)}`;
    let ok: boolean;
    try {
      const r = await post(target, '', { 'content-type': 'text/plain; charset=utf-8' });
      ok = r.status === 200 && r.contentType.startsWith('text/plain') && r.body === token;
    } catch {
      ok = false;
    }
    this.validations.push({ url, ok });
    return ok;
  }

  private renew(req: Request, res: Response): void {
    const sub = this.subscriptions.get(String(req.params.id));
    if (!sub) return void res.status(404).json(graphError('ResourceNotFound', 'The object was not found.'));
    const b = (req.body ?? {}) as Json;
    const keys = Object.keys(b);
    if (keys.length !== 1 || keys[0] !== 'expirationDateTime') {
      return this.problem(res, 400, `renewal body must be {expirationDateTime}, got ${JSON.stringify(b)}`);
    }
    const expires = Date.parse(String(b.expirationDateTime));
    if (!Number.isFinite(expires) || expires <= Date.now() || expires > Date.now() + MAX_GRAPH_MINUTES * 60_000) {
      return this.problem(res, 400, `renewal expirationDateTime "${String(b.expirationDateTime)}"`);
    }
    sub.expirationDateTime = new Date(
      this.grantMs === undefined ? expires : Math.min(expires, Date.now() + this.grantMs),
    ).toISOString();
    sub.renewals++;
    res.json({
      id: sub.id,
      resource: sub.resource,
      changeType: sub.changeType,
      expirationDateTime: sub.expirationDateTime,
    });
  }

  subscriptionFor(resource: string): GraphSubscription | undefined {
    return [...this.subscriptions.values()].find((s) => s.resource === resource);
  }

  /** A message arrives: stored, and each Inbox subscription notified (the answers returned). */
  async receive(m: GraphMessage, opts: { clientState?: string } = {}): Promise<Posted[]> {
    this.messages.set(m.id, m);
    const subs = [...this.subscriptions.values()].filter((s) => s.resource.includes('messages'));
    return Promise.all(
      subs.map((s) =>
        this.notify(s, 'created', `Users/${USER}/Messages/${m.id}`, m.id, '#Microsoft.Graph.Message', opts),
      ),
    );
  }

  /** An event is created, updated or deleted: each events subscription with that change type is notified. */
  async changeEvent(e: GraphEvent, changeType: 'created' | 'updated' | 'deleted'): Promise<Posted[]> {
    if (changeType === 'deleted') this.events.delete(e.id);
    else this.events.set(e.id, e);
    const subs = [...this.subscriptions.values()].filter(
      (s) => s.resource === 'me/events' && s.changeType.split(',').includes(changeType),
    );
    return Promise.all(
      subs.map((s) => this.notify(s, changeType, `Users/${USER}/Events/${e.id}`, e.id, '#Microsoft.Graph.Event')),
    );
  }

  /** A change notification as Graph posts it. */
  notify(
    s: GraphSubscription,
    changeType: string,
    resource: string,
    id: string,
    type: string,
    opts: { clientState?: string } = {},
  ): Promise<Posted> {
    const body = {
      value: [
        {
          id: randomUUID(),
          subscriptionId: s.id,
          subscriptionExpirationDateTime: s.expirationDateTime,
          clientState: opts.clientState ?? s.clientState,
          changeType,
          resource,
          tenantId: TENANT,
          resourceData: {
            '@odata.type': type,
            '@odata.id': resource,
            '@odata.etag': `W/"${randomBytes(6).toString('hex')}"`,
            id,
          },
        },
      ],
    };
    return post(s.notificationUrl, JSON.stringify(body), { 'content-type': 'application/json; charset=utf-8' });
  }

  /** A lifecycle notification to the subscription's lifecycleNotificationUrl. */
  lifecycle(
    s: GraphSubscription,
    lifecycleEvent: 'reauthorizationRequired' | 'subscriptionRemoved' | 'missed',
    opts: { clientState?: string } = {},
  ): Promise<Posted> {
    if (!s.lifecycleNotificationUrl) throw new Error('the subscription has no lifecycleNotificationUrl');
    if (lifecycleEvent === 'subscriptionRemoved') this.subscriptions.delete(s.id);
    const body = {
      value: [
        {
          subscriptionId: s.id,
          subscriptionExpirationDateTime: s.expirationDateTime,
          tenantId: TENANT,
          clientState: opts.clientState ?? s.clientState,
          lifecycleEvent,
        },
      ],
    };
    return post(s.lifecycleNotificationUrl, JSON.stringify(body), {
      'content-type': 'application/json; charset=utf-8',
    });
  }
}

function select(o: object, fields: unknown): Json {
  const wanted = typeof fields === 'string' ? fields.split(',') : undefined;
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) if (!wanted || wanted.includes(k)) out[k] = v;
  return out;
}

// Zendesk.

export interface DeskWebhook {
  id: string;
  name: string;
  endpoint: string;
  signingSecret: string;
}
export interface DeskTrigger {
  id: number;
  title: string;
  updateType: string;
  webhookId: string;
  bodyTemplate: string;
}
export interface DeskTicket {
  id: number;
  subject: string;
  status: string;
  priority: string;
  requesterId: number;
  createdAt: string;
  updatedAt: string;
}

export class FakeZendeskWebhooks extends Fake {
  readonly webhooks = new Map<string, DeskWebhook>();
  readonly triggers = new Map<number, DeskTrigger>();
  private nextTrigger = 360_000_001;

  constructor(
    readonly email: string,
    readonly apiToken: string,
  ) {
    super();
    this.app.use(express.json({ limit: '1mb' }));
    this.app.use((req, res, next) => {
      this.requests.push({ method: req.method, path: req.path, body: req.body as unknown });
      const expected = `Basic ${Buffer.from(`${this.email}/token:${this.apiToken}`).toString('base64')}`;
      if (req.headers.authorization !== expected)
        return void res.status(401).json({ error: "Couldn't authenticate you" });
      next();
    });
    this.app.post('/api/v2/webhooks', (req, res) => {
      const w = ((req.body ?? {}) as { webhook?: Json }).webhook ?? {};
      const wrong: string[] = [];
      if (typeof w.name !== 'string' || !w.name) wrong.push('name is required');
      if (typeof w.endpoint !== 'string' || !/^https?:\/\//.test(w.endpoint)) wrong.push('endpoint must be a URL');
      if (w.http_method !== 'POST') wrong.push('http_method must be POST');
      if (w.request_format !== 'json') wrong.push('request_format must be json');
      if (w.status !== 'active') wrong.push('status must be active');
      if (JSON.stringify(w.subscriptions) !== JSON.stringify(['conditional_ticket_events'])) {
        wrong.push('subscriptions must be ["conditional_ticket_events"] for a trigger-connected webhook');
      }
      if (wrong.length) {
        return this.problem(res, 400, `webhook refused: ${wrong.join('; ')}`, {
          errors: wrong.map((d) => ({ code: 'InvalidValue', title: 'Invalid value', detail: d })),
        });
      }
      const hook: DeskWebhook = {
        id: `01GS${randomBytes(11).toString('hex').toUpperCase()}`,
        name: w.name as string,
        endpoint: w.endpoint as string,
        signingSecret: randomBytes(32).toString('base64url'),
      };
      this.webhooks.set(hook.id, hook);
      res.status(201).json({
        webhook: {
          id: hook.id,
          name: hook.name,
          status: 'active',
          endpoint: hook.endpoint,
          http_method: 'POST',
          request_format: 'json',
          subscriptions: ['conditional_ticket_events'],
          created_at: new Date().toISOString(),
        },
      });
    });
    this.app.get('/api/v2/webhooks/:id/signing_secret', (req, res) => {
      const hook = this.webhooks.get(String(req.params.id));
      if (!hook)
        return void res.status(404).json({ errors: [{ code: 'WebhookNotFound', title: 'Webhook not found' }] });
      res.json({ signing_secret: { algorithm: 'SHA256', secret: hook.signingSecret } });
    });
    this.app.post('/api/v2/triggers', (req, res) => {
      const t = ((req.body ?? {}) as { trigger?: Json }).trigger ?? {};
      const all = ((t.conditions as Json | undefined)?.all ?? []) as Json[];
      const update = all.find((c) => c.field === 'update_type' && c.operator === 'is');
      const action = ((t.actions ?? []) as Json[]).find((a) => a.field === 'notification_webhook');
      const value = action?.value as unknown[] | undefined;
      const wrong: string[] = [];
      if (typeof t.title !== 'string' || !t.title) wrong.push('title is required');
      if (!update || !['Create', 'Change'].includes(String(update.value)))
        wrong.push('an update_type condition is expected');
      if (!Array.isArray(value) || value.length !== 2 || !this.webhooks.has(String(value[0]))) {
        wrong.push('the notification_webhook action must name an existing webhook and a body');
      } else {
        try {
          JSON.parse(String(value[1]));
        } catch {
          wrong.push('the notification_webhook body must be JSON');
        }
      }
      if (wrong.length)
        return this.problem(res, 422, `trigger refused: ${wrong.join('; ')}`, {
          error: 'RecordInvalid',
          description: wrong.join('; '),
        });
      const trigger: DeskTrigger = {
        id: this.nextTrigger++,
        title: t.title as string,
        updateType: String(update!.value),
        webhookId: String(value![0]),
        bodyTemplate: String(value![1]),
      };
      this.triggers.set(trigger.id, trigger);
      res.status(201).json({
        trigger: { id: trigger.id, title: trigger.title, active: true, conditions: t.conditions, actions: t.actions },
      });
    });
    this.app.delete('/api/v2/triggers/:id', (req, res) => {
      if (!this.triggers.delete(Number(req.params.id))) return void res.status(404).json({ error: 'RecordNotFound' });
      res.status(204).end();
    });
    this.app.delete('/api/v2/webhooks/:id', (req, res) => {
      const id = String(req.params.id);
      if ([...this.triggers.values()].some((t) => t.webhookId === id)) {
        return this.problem(res, 400, `webhook ${id} deleted while a trigger uses it`, {
          errors: [{ code: 'WebhookInUse', title: 'Webhook is in use by triggers or automations' }],
        });
      }
      if (!this.webhooks.delete(id)) return void res.status(404).json({ errors: [{ code: 'WebhookNotFound' }] });
      res.status(204).end();
    });
  }

  /** A ticket is created or changed: each trigger of that update type posts its rendered body to its webhook. */
  async ticketEvent(
    ticket: DeskTicket,
    updateType: 'Create' | 'Change',
    tamper: { timestamp?: string; secret?: string; body?: (b: string) => string } = {},
  ): Promise<Posted[]> {
    const out: Posted[] = [];
    for (const t of this.triggers.values()) {
      if (t.updateType !== updateType) continue;
      const hook = this.webhooks.get(t.webhookId)!;
      const fields: Record<string, string> = {
        'ticket.id': String(ticket.id),
        'ticket.title': ticket.subject,
        'ticket.status': ticket.status,
        'ticket.priority': ticket.priority,
        'ticket.requester.id': String(ticket.requesterId),
        'ticket.assignee.id': '',
        'ticket.group.id': '',
        'ticket.tags': '',
        'ticket.link': `acme.zendesk.com/agent/tickets/${ticket.id}`,
        'ticket.created_at_with_timestamp': ticket.createdAt,
        'ticket.updated_at_with_timestamp': ticket.updatedAt,
      };
      // Placeholders are filled in inside JSON strings, escaped as JSON.
      let body = t.bodyTemplate.replace(/\{\{([a-z_.]+)\}\}/g, (_m, k: string) =>
        JSON.stringify(fields[k] ?? '').slice(1, -1),
      );
      const timestamp = tamper.timestamp ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      const signature = createHmac('sha256', tamper.secret ?? hook.signingSecret)
        .update(timestamp + body)
        .digest('base64');
      if (tamper.body) body = tamper.body(body);
      out.push(
        await post(hook.endpoint, body, {
          'content-type': 'application/json',
          'x-zendesk-account-id': '12345678',
          'x-zendesk-webhook-id': hook.id,
          'x-zendesk-webhook-invocation-id': String(Date.now()),
          'x-zendesk-webhook-signature': signature,
          'x-zendesk-webhook-signature-timestamp': timestamp,
        }),
      );
    }
    return out;
  }
}

// Apify.

export interface ApifyWebhook {
  id: string;
  eventTypes: string[];
  actorId: string;
  requestUrl: string;
  headers: Record<string, string>;
}

const APIFY_EVENTS = [
  'ACTOR.RUN.CREATED',
  'ACTOR.RUN.SUCCEEDED',
  'ACTOR.RUN.FAILED',
  'ACTOR.RUN.ABORTED',
  'ACTOR.RUN.TIMED_OUT',
  'ACTOR.RUN.RESURRECTED',
];

export class FakeApifyWebhooks extends Fake {
  readonly webhooks = new Map<string, ApifyWebhook>();
  readonly userId = 'wRsJZtadYvn4mBZmm';

  constructor(private token: string) {
    super();
    this.app.use(express.json({ limit: '1mb' }));
    this.app.use((req, res, next) => {
      this.requests.push({ method: req.method, path: req.path, body: req.body as unknown });
      if (req.headers.authorization !== `Bearer ${this.token}`) {
        return void res
          .status(401)
          .json({ error: { type: 'token-not-valid', message: 'Authentication token is not valid.' } });
      }
      next();
    });
    this.app.post('/v2/webhooks', (req, res) => {
      const b = (req.body ?? {}) as Json;
      const wrong: string[] = [];
      const types = b.eventTypes;
      if (!Array.isArray(types) || !types.length || !types.every((t) => APIFY_EVENTS.includes(String(t))))
        wrong.push('eventTypes');
      const cond = (b.condition ?? {}) as Json;
      if (typeof cond.actorId !== 'string' && typeof cond.actorTaskId !== 'string')
        wrong.push('condition needs actorId or actorTaskId');
      if (typeof b.requestUrl !== 'string' || !/^https?:\/\//.test(b.requestUrl)) wrong.push('requestUrl');
      let headers: Record<string, string> = {};
      try {
        if (b.headersTemplate !== undefined) {
          if (typeof b.headersTemplate !== 'string') throw new Error('not a string');
          headers = JSON.parse(b.headersTemplate) as Record<string, string>;
        }
        if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) throw new Error('not an object');
      } catch {
        wrong.push('headersTemplate must be a JSON object in a string');
      }
      if (b.isAdHoc === true) wrong.push('a trigger webhook must not be ad hoc');
      if (wrong.length) {
        return this.problem(res, 400, `webhook refused: ${wrong.join('; ')}`, {
          error: { type: 'invalid-input', message: wrong.join('; ') },
        });
      }
      const hook: ApifyWebhook = {
        id: randomBytes(9).toString('base64url').replace(/[-_]/g, 'x').slice(0, 17),
        eventTypes: (types as string[]).map(String),
        actorId: String(cond.actorId),
        requestUrl: b.requestUrl as string,
        headers,
      };
      this.webhooks.set(hook.id, hook);
      res.status(201).json({
        data: {
          id: hook.id,
          createdAt: new Date().toISOString(),
          modifiedAt: new Date().toISOString(),
          userId: this.userId,
          isAdHoc: false,
          shouldInterpolateStrings: false,
          eventTypes: hook.eventTypes,
          condition: cond,
          ignoreSslErrors: false,
          doNotRetry: false,
          requestUrl: hook.requestUrl,
          payloadTemplate:
            '{\n    "userId": {{userId}},\n    "createdAt": {{createdAt}},\n    "eventType": {{eventType}},\n    "eventData": {{eventData}},\n    "resource": {{resource}}\n}',
          headersTemplate: b.headersTemplate ?? null,
          description: b.description ?? null,
        },
      });
    });
    this.app.delete('/v2/webhooks/:id', (req, res) => {
      if (!this.webhooks.delete(String(req.params.id))) {
        return void res.status(404).json({ error: { type: 'record-not-found', message: 'Webhook was not found' } });
      }
      res.status(204).end();
    });
  }

  /** A run of the Actor ends: each matching webhook gets the default payload, with its headers template applied. */
  async finishRun(
    actorId: string,
    status: 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'TIMED-OUT',
    opts: { runId?: string; headers?: Record<string, string> } = {},
  ): Promise<Posted[]> {
    const eventType = `ACTOR.RUN.${status.replace('-', '_')}`;
    const runId = opts.runId ?? randomBytes(9).toString('base64url').replace(/[-_]/g, 'y').slice(0, 17);
    const now = new Date().toISOString();
    const out: Posted[] = [];
    for (const w of this.webhooks.values()) {
      if (w.actorId !== actorId || !w.eventTypes.includes(eventType)) continue;
      const body = {
        userId: this.userId,
        createdAt: now,
        eventType,
        eventData: { actorId, actorRunId: runId },
        resource: {
          id: runId,
          actId: actorId,
          userId: this.userId,
          startedAt: new Date(Date.now() - 60_000).toISOString(),
          finishedAt: now,
          status,
          meta: { origin: 'API' },
          defaultDatasetId: 'd7b9MDYsbtX5L7XAj',
          defaultKeyValueStoreId: 'eJNzqsbPiopwJZgGQ',
        },
      };
      out.push(
        await post(w.requestUrl, JSON.stringify(body), {
          'content-type': 'application/json',
          ...w.headers,
          ...opts.headers,
        }),
      );
    }
    return out;
  }
}

// HubSpot.

export class FakeHubSpotApp extends Fake {
  /** Access token → portal id. */
  readonly portals = new Map<string, number>();

  constructor(readonly clientSecret: string) {
    super();
    this.app.use((req, res, next) => {
      this.requests.push({ method: req.method, path: req.path, body: undefined });
      next();
    });
    this.app.get('/account-info/v3/details', (req, res) => {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const portalId = token ? this.portals.get(token) : undefined;
      if (portalId === undefined) {
        return void res.status(401).json({
          status: 'error',
          message: 'Authentication credentials not found.',
          category: 'INVALID_AUTHENTICATION',
        });
      }
      res.json({
        portalId,
        accountType: 'STANDARD',
        timeZone: 'US/Eastern',
        companyCurrency: 'USD',
        additionalCurrencies: [],
        utcOffset: '-05:00',
        utcOffsetMilliseconds: -18000000,
        uiDomain: 'app.hubspot.com',
        dataHostingLocation: 'na1',
      });
    });
  }

  /** Posts a batch of app webhook events to the target URL, signed with v3 (or tampered with). */
  send(
    targetUrl: string,
    events: Json[],
    tamper: { timestamp?: number; secret?: string; body?: (b: string) => string } = {},
  ): Promise<Posted> {
    let body = JSON.stringify(events);
    const timestamp = String(tamper.timestamp ?? Date.now());
    const signature = createHmac('sha256', tamper.secret ?? this.clientSecret)
      .update(`POST${targetUrl}${body}${timestamp}`)
      .digest('base64');
    if (tamper.body) body = tamper.body(body);
    return post(targetUrl, body, {
      'content-type': 'application/json',
      'x-hubspot-signature-v3': signature,
      'x-hubspot-request-timestamp': timestamp,
      'user-agent': 'HubSpot Webhooks',
    });
  }

  static event(portalId: number, subscriptionType: string, objectId: number, extra: Json = {}): Json {
    return {
      eventId: Math.floor(Math.random() * 4_000_000_000),
      subscriptionId: 2_143_216,
      portalId,
      appId: 1_160_452,
      occurredAt: Date.now(),
      subscriptionType,
      attemptNumber: 0,
      objectId,
      changeFlag: subscriptionType.endsWith('creation') ? 'CREATED' : undefined,
      changeSource: 'CRM_UI',
      ...extra,
    };
  }
}
