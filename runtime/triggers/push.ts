/**
 * Push triggers (docs/triggers.md, "Push triggers"): the provider notifies the service rather than being polled.
 * This engine names no connector: each trigger's YAML `push:` block declares how a notification is verified
 * (`hmac_sha256`, `shared_secret_header`, `client_state`), where its notifications are in a body, which
 * are this trigger's (`match`), how an app webhook finds its account (`route`), and what identifies an item; a hook
 * in the connector's own `specs/hooks/<connector>.ts` does what the provider needs beyond that (registering a
 * subscription or a webhook, renewing it, answering a validation handshake, reading the resource a change
 * notification names, lifecycle notifications).
 *
 * Each connection has one ingress URL, `/v1/ingress/<token>` (a random token, migration 016); an instance's own
 * URL adds its id. The route takes no API credential: before a notification is used it is verified, and an
 * unknown token, an unknown instance and a bad signature get the same answer, so nothing tells a caller which
 * instances exist. Bodies are bounded (TRIGGER_INGRESS_MAX_BYTES) before they are read.
 *
 * Registrations are made when an instance is created or resumed, renewed before they expire (the instance is
 * due at its renewal time and the poller's lease hands it here), and removed when it is paused or deleted, and
 * before its account or connection is deleted. A failure makes the instance `failing` (or `needs_reauth` on a
 * 401/403) and is retried with backoff.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LRUCache } from 'lru-cache';
import { ProviderError, ServiceError } from '../../core/errors.ts';
import type {
  TriggerDefinition,
  TriggerPush,
  TriggerPushContext,
  TriggerPushItem,
  TriggerPushRegistration,
} from '../../core/tool-types.ts';
import { triggers } from '../../generated/registry.ts';
import { notActiveError, type AccountService, type ResolvedAccount } from '../accounts/service.ts';
import type { Config } from '../config.ts';
import { aad } from '../crypto/aad.ts';
import type { Sealer } from '../crypto/sealer.ts';
import type { Logger } from '../log.ts';
import type { Store, TriggerInstance, TriggerInstancePatch, TriggerStatus } from '../store/types.ts';
import type { ToolExecutor } from '../tools/executor.ts';
import { healthEvent, itemEvents, type InstanceContext } from './events.ts';
import { backoffMs } from './poller.ts';
import { sendForTrigger } from './service.ts';

/** What the engine keeps in an instance's `state`: the hook's registration, and a step it still has to take. */
interface PushState {
  registration?: Record<string, unknown>;
  /** Due work: register (again), renew, catch up after missed notifications. */
  pending?: 'register' | 'renew' | 'resync';
}

/** Notifications one body may carry at most (Graph batches up to 1,000 per request). */
const MAX_NOTIFICATIONS = 1_000;
/** A renewal that fails is retried after this at first (doubling, at most an hour). */
const RETRY_BASE_MS = 30_000;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const INSTANCE_PATTERN = /^trg_[A-Za-z0-9_-]{1,64}$/;
const REAUTH_CODES = new Set([
  'account_not_authorized',
  'account_expired',
  'account_disconnected',
  'account_pending_verification',
  'credentials_unreadable',
]);

export interface PushCounters {
  /** Notifications verified and used. */
  accepted: number;
  /** Requests or notifications refused: bad or missing signature, stale timestamp, wrong clientState, unknown URL. */
  refused: number;
  /** Requests answered 503 because TRIGGER_INGRESS_MAX_PENDING notifications were still being read. */
  deferred: number;
  /** Verified notifications that were no item of any instance (another trigger's, a paused instance's). */
  ignored: number;
  events: number;
  registrations: number;
  renewals: number;
  unregistrations: number;
  handshakes: number;
  lifecycle: number;
}

/** The value at a path of a JSON value. */
function at(value: unknown, path: readonly string[] | undefined): unknown {
  let v = value;
  for (const key of path ?? []) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  // Compared in constant time; lengths differing say only that (the secret's length is not secret here).
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A timestamp header: epoch seconds or milliseconds, or an ISO 8601 date; undefined when it is none of these. */
export function timestampMs(raw: string | undefined): number | undefined {
  if (!raw) return undefined;
  const v = raw.trim();
  if (/^\d{1,16}$/.test(v)) {
    const n = Number(v);
    return n > 1e12 ? n : n * 1000;
  }
  if (v.length > 64) return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : undefined;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Checks a request's signature as the trigger's `verify` declares; the reason when it fails. */
export function checkSignature(
  verify: TriggerPush['verify'],
  secret: string,
  req: { method: string; url: string; headers: (name: string) => string | undefined },
  body: Buffer,
  now: number,
): string | undefined {
  if (verify.scheme === 'client_state') return undefined;
  const sent = verify.header ? req.headers(verify.header) : undefined;
  if (!sent) return `no ${verify.header} header`;
  if (verify.scheme === 'shared_secret_header') return sameText(sent, secret) ? undefined : 'the secret does not match';
  let signed: Buffer;
  if (verify.signed === 'timestamp_body' || verify.signed === 'method_url_body_timestamp') {
    const ts = verify.timestampHeader ? req.headers(verify.timestampHeader) : undefined;
    const when = timestampMs(ts);
    if (when === undefined) return `no valid ${verify.timestampHeader} header`;
    if (Math.abs(now - when) > verify.maxAgeSeconds * 1000) return 'the timestamp is outside the accepted window';
    signed =
      verify.signed === 'method_url_body_timestamp'
        ? Buffer.concat([Buffer.from(`${req.method}${req.url}`, 'utf8'), body, Buffer.from(ts!, 'utf8')])
        : Buffer.concat([Buffer.from(ts!, 'utf8'), body]);
  } else {
    signed = body;
  }
  const mac = createHmac('sha256', secret).update(signed).digest(verify.encoding);
  const given = verify.prefix && sent.startsWith(verify.prefix) ? sent.slice(verify.prefix.length) : sent;
  return sameText(given, mac) ? undefined : 'the signature does not match';
}

/** Reads a body of at most `limit` bytes; undefined when it is larger (the rest is not read). */
export function readBounded(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(over ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export class PushEngine {
  readonly counters: PushCounters = {
    accepted: 0,
    refused: 0,
    deferred: 0,
    ignored: 0,
    events: 0,
    registrations: 0,
    renewals: 0,
    unregistrations: 0,
    handshakes: 0,
    lifecycle: 0,
  };
  /** Ingress token → connection id (false: no such token), bounded. */
  private readonly tokens = new LRUCache<string, { connectionId: string | false }>({ max: 10_000 });
  /** Notifications being read after the answer was given (Graph: answered at once, the resource read after). */
  private readonly inFlight = new Set<Promise<void>>();
  /** Called when an instance is due now (a lifecycle notification asks for a renewal). */
  onDue: () => void = () => {};

  constructor(
    private store: Store,
    private accounts: AccountService,
    private executor: ToolExecutor,
    private sealer: Sealer,
    private config: Config,
    private log: Logger,
    private onEvents: () => void,
  ) {}

  /** Waits for the notifications being read (tests). */
  async idle(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** The connection's ingress URL (made with its first push instance). */
  async ingressUrl(connectionId: string): Promise<string> {
    const token = await this.store.triggerIngressToken(connectionId, randomBytes(32).toString('base64url'), Date.now());
    return `${this.config.publicUrl}/v1/ingress/${token}`;
  }

  /** A new instance's sealed secret (the clientState or header value registered with the provider). */
  sealSecret(instanceId: string, secret = randomBytes(32).toString('base64url')): string {
    return this.sealer.seal(secret, aad.triggerSecret(instanceId));
  }

  private secretOf(t: TriggerInstance): string {
    if (!t.secretSealed) return '';
    return this.sealer.open(t.secretSealed, aad.triggerSecret(t.id));
  }

  private async context(
    t: TriggerInstance,
    resolved?: ResolvedAccount,
  ): Promise<{ ctx: TriggerPushContext; resolved: ResolvedAccount }> {
    const r = resolved ?? (await this.accounts.resolve({ connectedAccountId: t.accountId }));
    const state = t.state as PushState;
    let live: Awaited<ReturnType<AccountService['live']>> | undefined;
    const ctx: TriggerPushContext = {
      instanceId: t.id,
      config: t.config,
      ingressUrl: `${await this.ingressUrl(t.connectionId)}/${t.id}`,
      secret: this.secretOf(t),
      state: state.registration ?? {},
      now: Date.now(),
      base: (host?: string) => this.accounts.baseUrlFor(r, host),
      call: async (req) => {
        if (r.account.status !== 'ACTIVE') throw notActiveError(r.account);
        live ??= await this.accounts.live(r);
        return sendForTrigger(this.executor, live, req);
      },
    };
    return { ctx, resolved: r };
  }

  private async names(t: TriggerInstance): Promise<InstanceContext> {
    const account = await this.accounts.accountById(t.accountId).catch(() => undefined);
    const connection = await this.accounts.connectionById(t.connectionId).catch(() => undefined);
    return { connectionName: connection?.name ?? '', identifier: account?.identifier ?? '' };
  }

  /**
   * Registers the instance with its provider (at creation, on resume, again after the provider removed it). The
   * outcome is written to the instance: registered and active, or failing / needs_reauth with a retry due.
   */
  async register(t: TriggerInstance, leaseOwner?: string, resolved?: ResolvedAccount): Promise<TriggerInstance> {
    return this.step(t, 'register', leaseOwner, resolved);
  }

  /** The instance's due step, under the poller's lease: a renewal, a registration retried, a catch-up. */
  async maintain(t: TriggerInstance, leaseOwner: string): Promise<void> {
    const pending = (t.state as PushState).pending ?? 'renew';
    await this.step(t, pending, leaseOwner);
  }

  private async step(
    t: TriggerInstance,
    step: NonNullable<PushState['pending']>,
    leaseOwner?: string,
    resolved?: ResolvedAccount,
  ): Promise<TriggerInstance> {
    const def = triggers.get(t.trigger);
    const now = Date.now();
    try {
      if (!def?.push) throw new ServiceError(500, 'trigger_unknown', `This service has no push trigger ${t.trigger}`);
      const hook = def.push.hook;
      const { ctx, resolved: r } = await this.context(t, resolved);
      let reg: TriggerPushRegistration = { state: ctx.state, renewAt: t.nextRunAt };
      let events: ReturnType<typeof itemEvents> = [];
      if (step === 'resync') {
        const since = t.lastEventAt ?? t.createdAt;
        const items = hook?.catchUp ? await hook.catchUp(ctx, since) : [];
        events = itemEvents(t, await this.names(t), items, now);
        reg = { state: ctx.state, renewAt: (t.state as PushState).registration ? t.nextRunAt : null };
        // A catch-up leaves the renewal where it was; one already overdue is done now.
        if (reg.renewAt !== null && reg.renewAt !== undefined && reg.renewAt <= now && hook?.renew) {
          reg = await hook.renew(ctx);
          this.counters.renewals++;
        }
      } else if (step === 'renew' && hook?.renew) {
        reg = await hook.renew(ctx);
        this.counters.renewals++;
      } else if (hook) {
        reg = await hook.register(ctx);
        this.counters.registrations++;
      } else {
        reg = { state: {}, renewAt: null };
      }
      const routeField = def.push.route?.accountField;
      const route = routeField ? (r.account.fields[routeField] ?? reg.route) : undefined;
      if (routeField && !route) {
        throw new ServiceError(
          400,
          'invalid_input',
          `Trigger ${def.name} needs the account's ${routeField} to route the provider's notifications to it`,
        );
      }
      const patch: TriggerInstancePatch = {
        state: { registration: reg.state } satisfies PushState,
        failures: 0,
        lastPollAt: now,
        nextRunAt: reg.renewAt ?? null,
        ...(reg.secret ? { secretSealed: this.sealSecret(t.id, reg.secret) } : {}),
        ...(events.length ? { lastEventAt: now, eventsSentDelta: events.length } : {}),
      };
      const updated = await this.store.transaction(async (tx) => {
        const current = await tx.getTriggerInstance(t.id);
        if (!current) return undefined;
        const paused = current.status === 'paused';
        const u = await tx.updateTriggerInstance(
          t.id,
          { ...patch, status: paused ? 'paused' : 'active', ...(paused ? { nextRunAt: null } : {}) },
          now,
          leaseOwner,
        );
        if (!u) return undefined;
        if (route !== undefined) await tx.setTriggerRouteKey(t.id, route);
        await tx.addWebhookEvents(events);
        if (current.status === 'failing' || current.status === 'needs_reauth') {
          await tx.addWebhookEvent(healthEvent('trigger.recovered', u, await this.names(u), now + events.length));
        }
        return u;
      });
      if (!updated) {
        // Deleted (or paused and given away) meanwhile: what was just registered must not outlive it.
        if (hook && step !== 'resync') await this.removeRegistration({ ...t, state: { registration: reg.state } });
        return t;
      }
      this.counters.events += events.length;
      this.onEvents();
      return updated;
    } catch (e) {
      return this.failed(t, e, leaseOwner, step);
    }
  }

  private async failed(
    t: TriggerInstance,
    e: unknown,
    leaseOwner: string | undefined,
    step: NonNullable<PushState['pending']>,
  ): Promise<TriggerInstance> {
    const now = Date.now();
    const message = describe(e);
    const reauth =
      (e instanceof ProviderError && (e.status === 401 || e.status === 403)) ||
      (e instanceof ServiceError && REAUTH_CODES.has(e.code));
    const failures = t.failures + 1;
    this.log.warn({ instance: t.id, trigger: t.trigger, step, failures, err: message }, 'push trigger step failed');
    const ctx = await this.names(t);
    const updated = await this.store.transaction(async (tx) => {
      const current = await tx.getTriggerInstance(t.id);
      if (!current) return undefined;
      const paused = current.status === 'paused';
      // Nothing is heard while a registration is missing: the instance is failing at once.
      const status: TriggerStatus = paused ? 'paused' : reauth ? 'needs_reauth' : 'failing';
      const u = await tx.updateTriggerInstance(
        t.id,
        {
          failures,
          status,
          lastError: message,
          lastErrorAt: now,
          lastPollAt: now,
          state: { ...(current.state as PushState), pending: step },
          nextRunAt: paused ? null : now + backoffMs(RETRY_BASE_MS, failures),
        },
        now,
        leaseOwner,
      );
      if (u && status !== current.status && (status === 'failing' || status === 'needs_reauth')) {
        await tx.addWebhookEvent(healthEvent('trigger.failing', u, ctx, now));
      }
      return u;
    });
    this.onEvents();
    return updated ?? t;
  }

  /** Removes the instance's registration with the provider (pause, delete); a failure is logged, not thrown. */
  async removeRegistration(t: TriggerInstance): Promise<boolean> {
    const hook = triggers.get(t.trigger)?.push?.hook;
    const registration = (t.state as PushState).registration;
    if (!hook || !registration || !Object.keys(registration).length) return true;
    try {
      const { ctx } = await this.context(t);
      await hook.unregister(ctx);
      this.counters.unregistrations++;
      return true;
    } catch (e) {
      this.log.warn({ instance: t.id, trigger: t.trigger, err: describe(e) }, 'push trigger unregistration failed');
      return false;
    }
  }

  /** Removes the registrations of an account's or a connection's push instances, before they are deleted. */
  async releaseAll(q: { accountId?: string; connectionId?: string }): Promise<void> {
    const page = await this.store.pushTriggerInstances(q, 10_000);
    for (const t of page) await this.removeRegistration(t);
  }

  // The ingress route.

  /** Serves POST /v1/ingress/{token}[/{instance_id}]. */
  async handle(req: IncomingMessage, res: ServerResponse, token: string, instanceId?: string): Promise<void> {
    const now = Date.now();
    if (this.inFlight.size >= this.config.triggers.ingressMaxPending) {
      // Notifications still being read fill the process's allowance: the provider retries later (Graph, Zendesk,
      // HubSpot and Apify all retry a 503), and memory stays bounded by TRIGGER_INGRESS_MAX_PENDING.
      this.counters.deferred++;
      req.resume();
      res.setHeader('retry-after', '5');
      return answer(res, 503, { error: 'busy' });
    }
    const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    const body = await readBounded(req, this.config.triggers.ingressBodyLimitBytes);
    if (body === undefined) {
      this.counters.refused++;
      return answer(res, 413, { error: 'payload_too_large' });
    }
    const connectionId = await this.connectionOf(token);
    const connection = connectionId ? await this.accounts.connectionById(connectionId) : undefined;
    const defs = connection ? [...triggers.values()].filter((d) => d.connector === connection.connector && d.push) : [];
    if (!connection || !defs.length) return this.refuse(res, undefined, 'unknown ingress token');
    // A provider's check of the URL (Graph's validation token) comes before any notification, and carries none.
    for (const d of defs) {
      const hs = d.push!.hook?.handshake?.(query);
      if (hs) {
        this.counters.handshakes++;
        res.writeHead(hs.status, {
          'content-type': hs.contentType,
          'x-content-type-options': 'nosniff',
          'cache-control': 'no-store',
        });
        return void res.end(hs.body);
      }
    }
    let instance: TriggerInstance | undefined;
    let def: TriggerDefinition | undefined = defs[0];
    if (instanceId !== undefined) {
      const t = INSTANCE_PATTERN.test(instanceId) ? await this.store.getTriggerInstance(instanceId) : undefined;
      // Another connection's instance, or none: answered as a failed verification would be.
      if (!t || t.connectionId !== connection.id || t.kind !== 'push' || !triggers.get(t.trigger)?.push) {
        return this.refuse(res, def, 'unknown instance');
      }
      instance = t;
      def = triggers.get(t.trigger)!;
    }
    const verify = def!.push!.verify;
    const headers = (name: string) => header(req, name);
    if (verify.scheme !== 'client_state') {
      const secret =
        verify.secret === 'connection_client_secret'
          ? connection.clientSecretSealed
            ? this.sealer.open(connection.clientSecretSealed, aad.clientSecret(connection.id))
            : ''
          : instance
            ? this.secretOf(instance)
            : '';
      const uri = `${this.config.publicUrl}${req.url ?? ''}`;
      const why = secret
        ? checkSignature(verify, secret, { method: req.method ?? 'POST', url: uri, headers }, body, now)
        : 'no secret to check against';
      if (why) return this.refuse(res, def, why);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      this.counters.refused++;
      return answer(res, 400, { error: 'invalid_json' });
    }
    const list = def!.push!.events ? at(parsed, def!.push!.events) : Array.isArray(parsed) ? parsed : [parsed];
    if (!Array.isArray(list) || list.length > MAX_NOTIFICATIONS) {
      this.counters.refused++;
      return answer(res, 400, { error: 'invalid_notifications' });
    }
    const notifications = list.filter((n): n is Record<string, unknown> => !!n && typeof n === 'object');
    const work = this.process(connection.id, defs, instance, notifications, now);
    if (defs.some((d) => !!d.push?.hook && 'item' in d.push.hook)) {
      // The provider wants a quick answer (Graph: 202 within seconds); the resources are read after it.
      const p: Promise<void> = work
        .catch((e: unknown) => this.log.error({ err: describe(e) }, 'push notifications could not be processed'))
        .finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
      return answer(res, 202, null);
    }
    await work;
    return answer(res, 200, { received: notifications.length });
  }

  private refuse(res: ServerResponse, def: TriggerDefinition | undefined, why: string): void {
    this.counters.refused++;
    this.log.info({ why }, 'push notification refused');
    // A per-notification check (clientState) answers as for an accepted body: the provider is not told.
    if (def?.push?.verify.scheme === 'client_state') return answer(res, 202, null);
    return answer(res, 401, { error: 'not_verified' });
  }

  private async connectionOf(token: string): Promise<string | undefined> {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const cached = this.tokens.get(token);
    if (cached) return cached.connectionId || undefined;
    const id = await this.store.triggerIngressConnection(token);
    // Unknown tokens are not remembered: one is made with the connection's first instance, at any time.
    if (id) this.tokens.set(token, { connectionId: id });
    return id;
  }

  private async process(
    connectionId: string,
    defs: TriggerDefinition[],
    instance: TriggerInstance | undefined,
    notifications: Record<string, unknown>[],
    now: number,
  ): Promise<void> {
    const found = new Map<string, { t: TriggerInstance; items: TriggerPushItem[] }>();
    const contexts = new Map<string, TriggerPushContext>();
    for (const n of notifications) {
      const candidates = instance ? [instance] : await this.routed(connectionId, defs, n);
      if (!candidates.length) {
        this.counters.ignored++;
        continue;
      }
      for (const t of candidates) {
        const def = triggers.get(t.trigger)!;
        const push = def.push!;
        if (push.verify.scheme === 'client_state') {
          const given = at(n, push.verify.clientStatePath);
          if (typeof given !== 'string' || !sameText(given, this.secretOf(t))) {
            this.counters.refused++;
            this.log.info({ instance: t.id }, 'push notification refused: the clientState does not match');
            continue;
          }
        }
        const action = push.hook?.lifecycle?.(n);
        if (action) {
          this.counters.lifecycle++;
          await this.lifecycle(t, action, now);
          continue;
        }
        if (push.match && !push.match.every((m) => at(n, m.path) === m.value)) {
          this.counters.ignored++;
          continue;
        }
        if (t.status === 'paused') {
          this.counters.ignored++;
          continue;
        }
        let item: TriggerPushItem | undefined;
        if (push.hook?.item) {
          let ctx = contexts.get(t.id);
          if (!ctx) contexts.set(t.id, (ctx = (await this.context(t)).ctx));
          item = await push.hook.item(ctx, n);
        } else {
          const ids = (push.id ?? []).map((p) => at(n, p));
          const value = push.item ? at(n, push.item) : n;
          if (ids.length && ids.every((v) => typeof v === 'string' || typeof v === 'number') && value) {
            item = { key: ids.join('\n'), item: value as Record<string, unknown> };
          }
        }
        if (!item) {
          this.counters.ignored++;
          continue;
        }
        this.counters.accepted++;
        const entry = found.get(t.id) ?? { t, items: [] };
        entry.items.push(item);
        found.set(t.id, entry);
      }
    }
    for (const { t, items } of found.values()) {
      const events = itemEvents(t, await this.names(t), items, now);
      await this.store.transaction(async (tx) => {
        await tx.addWebhookEvents(events);
        await tx.updateTriggerInstance(t.id, { lastEventAt: now, eventsSentDelta: events.length }, now);
      });
      this.counters.events += events.length;
    }
    if (found.size) this.onEvents();
  }

  /** The instances an app webhook's notification names by its route value (HubSpot's portalId). */
  private async routed(
    connectionId: string,
    defs: TriggerDefinition[],
    n: Record<string, unknown>,
  ): Promise<TriggerInstance[]> {
    const out: TriggerInstance[] = [];
    const seen = new Set<string>();
    for (const d of defs) {
      const route = d.push!.route;
      if (!route) continue;
      const key = at(n, route.path);
      if ((typeof key !== 'string' && typeof key !== 'number') || seen.has(String(key))) continue;
      seen.add(String(key));
      const all = await this.store.triggerInstancesByRoute(connectionId, String(key), 1_000);
      out.push(...all.filter((t) => triggers.get(t.trigger)?.push?.route));
    }
    return out;
  }

  private async lifecycle(t: TriggerInstance, action: string, now: number): Promise<void> {
    this.log.info({ instance: t.id, action }, 'push trigger lifecycle notification');
    const state = t.state as PushState;
    if (action === 'needs_reauth') {
      const u = await this.store.updateTriggerInstance(
        t.id,
        {
          status: 'needs_reauth',
          lastError: 'the provider asks for the account to be authorized again',
          lastErrorAt: now,
        },
        now,
      );
      if (u && t.status !== 'needs_reauth') {
        await this.store.addWebhookEvent(healthEvent('trigger.failing', u, await this.names(u), now));
        this.onEvents();
      }
      return;
    }
    const pending: PushState['pending'] =
      action === 'reregister' ? 'register' : action === 'resync' ? 'resync' : 'renew';
    await this.store.updateTriggerInstance(
      t.id,
      { state: { ...state, pending }, nextRunAt: t.status === 'paused' ? null : now },
      now,
    );
    this.onDue();
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(body === null ? '' : JSON.stringify(body));
}

function describe(e: unknown): string {
  if (e instanceof ProviderError) {
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? null);
    return `the provider answered HTTP ${e.status}: ${body.slice(0, 300)}`;
  }
  if (e instanceof ServiceError) return `${e.code}: ${e.message}`.slice(0, 500);
  return ((e as Error)?.message ?? String(e)).slice(0, 500);
}
