/**
 * Hooks of the mail connector: Microsoft Graph change notifications for its push triggers (docs/triggers.md,
 * "Push triggers"). A subscription per instance (POST /subscriptions with the instance's notification and
 * lifecycle URL and its clientState), renewed by PATCH before it expires, deleted with the instance; Graph's
 * validation request answered with its token; lifecycle notifications mapped to what the engine does; the message
 * or event a notification names read to make the event's item; after `missed`, what changed since read again.
 */
import { ProviderError } from '../../core/errors.ts';
import type { TriggerPushContext, TriggerPushHook, TriggerPushItem } from '../../core/tool-types.ts';

type Json = Record<string, unknown>;

/** Outlook resources accept subscriptions of up to 10,080 minutes; three days are asked for. */
export const SUBSCRIPTION_MINUTES = 3 * 24 * 60;
/** Renewed when this share of the subscription's life has passed (Graph may grant less than asked). */
const RENEW_AT_SHARE = 0.8;
/** Graph's validation tokens are short opaque strings; a longer one is not echoed. */
const MAX_VALIDATION_TOKEN = 1024;
/** Pages of a catch-up read at most (50 items each). */
const CATCH_UP_PAGES = 5;

const MESSAGE_FIELDS =
  'id,subject,from,toRecipients,receivedDateTime,bodyPreview,hasAttachments,importance,isRead,conversationId,webLink';
const EVENT_FIELDS = 'id,subject,start,end,location,organizer,isCancelled,lastModifiedDateTime,webLink';

interface Watched {
  /** The subscribed resource. */
  resource: string;
  changeType: string;
  /** The item of a notification's resource id. */
  read(ctx: TriggerPushContext, id: string, changeType: string): Promise<TriggerPushItem | undefined>;
  /** Items changed since a time (a catch-up after missed notifications). */
  listSince(ctx: TriggerPushContext, since: string): { path: string; query: Record<string, string> };
  keyOf(item: Json, changeType: string): string;
}

const q = (query: Record<string, string>) =>
  Object.entries(query)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');

function renewable(ctx: TriggerPushContext, answer: unknown): { state: Json; renewAt: number } {
  const sub = answer as { id?: unknown; expirationDateTime?: unknown };
  if (typeof sub?.id !== 'string') throw new Error('Graph answered the subscription without an id');
  const expires = Date.parse(String(sub.expirationDateTime));
  if (!Number.isFinite(expires)) throw new Error('Graph answered the subscription without an expirationDateTime');
  return {
    state: { subscriptionId: sub.id, expiresAt: new Date(expires).toISOString() },
    renewAt: ctx.now + Math.max(1_000, Math.floor((expires - ctx.now) * RENEW_AT_SHARE)),
  };
}

const expiry = (now: number) => new Date(now + SUBSCRIPTION_MINUTES * 60_000).toISOString();

function graphHook(w: Watched): TriggerPushHook {
  const register = async (ctx: TriggerPushContext) =>
    renewable(
      ctx,
      await ctx.call({
        method: 'POST',
        url: `${ctx.base()}/v1.0/subscriptions`,
        headers: { 'content-type': 'application/json' },
        body: {
          changeType: w.changeType,
          notificationUrl: ctx.ingressUrl,
          lifecycleNotificationUrl: ctx.ingressUrl,
          resource: w.resource,
          expirationDateTime: expiry(ctx.now),
          clientState: ctx.secret,
          latestSupportedTlsVersion: 'v1_2',
        },
      }),
    );
  return {
    register,
    async renew(ctx) {
      const id = ctx.state.subscriptionId;
      if (typeof id !== 'string') return register(ctx);
      try {
        return renewable(
          ctx,
          await ctx.call({
            method: 'PATCH',
            url: `${ctx.base()}/v1.0/subscriptions/${encodeURIComponent(id)}`,
            headers: { 'content-type': 'application/json' },
            body: { expirationDateTime: expiry(ctx.now) },
          }),
        );
      } catch (e) {
        // Expired or removed meanwhile: a new one.
        if (e instanceof ProviderError && e.status === 404) return register(ctx);
        throw e;
      }
    },
    async unregister(ctx) {
      const id = ctx.state.subscriptionId;
      if (typeof id !== 'string') return;
      try {
        await ctx.call({
          method: 'DELETE',
          url: `${ctx.base()}/v1.0/subscriptions/${encodeURIComponent(id)}`,
          headers: {},
        });
      } catch (e) {
        if (!(e instanceof ProviderError && e.status === 404)) throw e;
      }
    },
    handshake(query) {
      const token = query.get('validationToken');
      if (token === null) return undefined;
      if (token.length > MAX_VALIDATION_TOKEN) return { status: 400, contentType: 'text/plain', body: '' };
      return { status: 200, contentType: 'text/plain; charset=utf-8', body: token };
    },
    lifecycle(n) {
      switch (n.lifecycleEvent) {
        case 'reauthorizationRequired':
          return 'renew';
        case 'subscriptionRemoved':
          return 'reregister';
        case 'missed':
          return 'resync';
        default:
          return undefined;
      }
    },
    async item(ctx, n) {
      // A notification of an older subscription of this instance (replaced since) is not used.
      if (n.subscriptionId !== ctx.state.subscriptionId) return undefined;
      const id = (n.resourceData as Json | undefined)?.id;
      const changeType = typeof n.changeType === 'string' ? n.changeType : '';
      if (typeof id !== 'string' || !id || !w.changeType.split(',').includes(changeType)) return undefined;
      return w.read(ctx, id, changeType);
    },
    async catchUp(ctx, since) {
      const out: TriggerPushItem[] = [];
      const first = w.listSince(ctx, new Date(since).toISOString());
      let next: string | undefined = `${ctx.base()}${first.path}?${q(first.query)}`;
      for (let page = 0; next && page < CATCH_UP_PAGES; page++) {
        const answer = (await ctx.call({ method: 'GET', url: next, headers: {} })) as {
          value?: Json[];
          '@odata.nextLink'?: string;
        };
        for (const item of answer.value ?? []) out.push({ key: w.keyOf(item, 'updated'), item });
        // Graph's next link is absolute; only the path and query are kept, sent to the account's own base.
        const link = answer['@odata.nextLink'];
        next = link ? `${ctx.base()}${new URL(link).pathname}${new URL(link).search}` : undefined;
      }
      return out;
    },
  };
}

export const mailMessagePush: TriggerPushHook = graphHook({
  resource: "me/mailFolders('Inbox')/messages",
  changeType: 'created',
  async read(ctx, id) {
    const item = (await ctx.call({
      method: 'GET',
      url: `${ctx.base()}/v1.0/me/messages/${encodeURIComponent(id)}?${q({ $select: MESSAGE_FIELDS })}`,
      headers: {},
    })) as Json;
    return { key: typeof item.id === 'string' ? item.id : id, item };
  },
  listSince: (_ctx, since) => ({
    path: "/v1.0/me/mailFolders('Inbox')/messages",
    query: {
      $filter: `receivedDateTime ge ${since}`,
      $orderby: 'receivedDateTime asc',
      $top: '50',
      $select: MESSAGE_FIELDS,
    },
  }),
  keyOf: (item) => String(item.id),
});

export const mailEventPush: TriggerPushHook = graphHook({
  resource: 'me/events',
  changeType: 'created,updated,deleted',
  async read(ctx, id, changeType) {
    if (changeType === 'deleted') return { key: `${id}\ndeleted`, item: { id, change_type: 'deleted' } };
    try {
      const event = (await ctx.call({
        method: 'GET',
        url: `${ctx.base()}/v1.0/me/events/${encodeURIComponent(id)}?${q({ $select: EVENT_FIELDS })}`,
        headers: {},
      })) as Json;
      const item = { ...event, change_type: changeType };
      return { key: keyOfEvent(item, changeType), item };
    } catch (e) {
      // Deleted before it could be read: nothing to send (its deletion comes as its own notification).
      if (e instanceof ProviderError && e.status === 404) return undefined;
      throw e;
    }
  },
  listSince: (_ctx, since) => ({
    path: '/v1.0/me/events',
    query: { $filter: `lastModifiedDateTime ge ${since}`, $top: '50', $select: EVENT_FIELDS },
  }),
  keyOf: (item, changeType) => keyOfEvent(item, changeType),
});

/** An event change: the same event, changed at the same time, is the same item (whatever notification said so). */
function keyOfEvent(item: Json, changeType: string): string {
  const modified = typeof item.lastModifiedDateTime === 'string' ? item.lastModifiedDateTime : '';
  return `${typeof item.id === 'string' ? item.id : ''}\n${changeType === 'deleted' ? 'deleted' : modified}`;
}
