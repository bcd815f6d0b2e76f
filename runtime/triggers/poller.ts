/**
 * The polling engine (docs/triggers.md, "Scheduling"). Instances wait in the store, indexed by when they are next
 * due; a tick leases the ones due now (FOR UPDATE SKIP LOCKED on PostgreSQL, so that several processes share the
 * population and none polls an instance another holds), up to the free places of a bounded pool, and never more
 * than a provider's share of it. A poll's new items and the feed position after them are written in one
 * transaction (the outbox rows and the cursor): killed mid-poll, the process loses nothing and the next poll repeats
 * at most the batch in flight, under the same webhook-ids. A failing provider backs the instance off (doubling,
 * jittered, at most an hour) with its cursor untouched; a 429 or 503 with Retry-After holds the instance, and the
 * whole provider in this process, until then.
 */
import { hostname } from 'node:os';
import { ProviderError, ServiceError } from '../../core/errors.ts';
import { triggers } from '../../generated/registry.ts';
import type { AccountService } from '../accounts/service.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { newId } from '../ids.ts';
import type { Store, TriggerInstance, TriggerInstancePatch, TriggerStatus } from '../store/types.ts';
import type { ToolExecutor } from '../tools/executor.ts';
import { pollFeed } from './feed.ts';
import { healthEvent, itemEvents } from './events.ts';
import { sendForTrigger } from './service.ts';
import type { PushEngine } from './push.ts';

/** Failed polls in a row after which an instance is `failing` (and `trigger.failing` is sent). */
export const FAILING_AFTER = 3;
const MAX_BACKOFF_MS = 3_600_000;

/** `base × 2^(failures−1)`, at most an hour, ±20 % jitter. */
export function backoffMs(baseMs: number, failures: number, random = Math.random): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
  return Math.round(exp * (0.8 + random() * 0.4));
}

/** The next poll after a good one: the interval, plus up to a tenth of it, so that instances made together spread. */
export function nextDue(now: number, intervalMs: number, random = Math.random): number {
  return now + intervalMs + Math.floor(random() * intervalMs * 0.1);
}

/** Seconds of a Retry-After header (seconds or an HTTP date), if any. */
export function retryAfterMs(
  headers: Record<string, string | string[] | undefined>,
  now = Date.now(),
): number | undefined {
  const raw = headers['retry-after'];
  const v = Array.isArray(raw) ? raw[0] : raw;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

export interface PollerCounters {
  polls: number;
  failures: number;
  events: number;
  lostLeases: number;
}

export class TriggerPoller {
  readonly owner = `${hostname()}:${process.pid}:${newId('poll')}`;
  readonly counters: PollerCounters = { polls: 0, failures: 0, events: 0, lostLeases: 0 };
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perConnector = new Map<string, number>();
  /** Providers that answered 429/503 with Retry-After: not polled by this process until then. */
  private readonly cooldown = new Map<string, number>();
  /** Push triggers' renewals, handed the instances due like polls are (set by runtime/services.ts). */
  push?: PushEngine;

  constructor(
    private store: Store,
    private accounts: AccountService,
    private executor: ToolExecutor,
    private config: Config,
    private log: Logger,
    private onEvents: () => void,
  ) {}

  start(tickMs = Math.min(1_000, this.config.triggers.minIntervalSeconds * 500)): void {
    this.timer = setInterval(() => this.poke(), tickMs);
    this.timer.unref();
    this.poke();
  }

  poke(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.tick()
      .catch((e: unknown) => this.log.error({ err: (e as Error).message }, 'trigger scheduling round failed'))
      .finally(() => {
        this.ticking = undefined;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Waits for the polls running now (tests and the bench). */
  async idle(): Promise<void> {
    await this.ticking;
    await Promise.allSettled([...this.inFlight]);
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    const free = this.config.triggers.concurrency - this.inFlight.size;
    if (free <= 0) return;
    const limit = this.config.triggers.perConnectorConcurrency;
    const skip = new Set<string>();
    for (const [c, n] of this.perConnector) if (n >= limit) skip.add(c);
    for (const [c, until] of this.cooldown) {
      if (until > now) skip.add(c);
      else this.cooldown.delete(c);
    }
    const claimed = await this.store.claimDueTriggerInstances(
      now,
      this.owner,
      now + this.config.triggers.leaseSeconds * 1000,
      free,
      [...skip],
    );
    for (const t of claimed) {
      const running = this.perConnector.get(t.connector) ?? 0;
      if (running >= limit || this.stopped) {
        // Over the provider's share: given back, due as it was, for the next tick.
        await this.store.updateTriggerInstance(t.id, {}, now, this.owner);
        continue;
      }
      this.perConnector.set(t.connector, running + 1);
      const p: Promise<void> = this.run(t)
        .catch((e: unknown) => this.log.error({ instance: t.id, err: (e as Error).message }, 'trigger poll failed'))
        .finally(() => {
          this.inFlight.delete(p);
          this.perConnector.set(t.connector, (this.perConnector.get(t.connector) ?? 1) - 1);
          this.poke();
        });
      this.inFlight.add(p);
    }
  }

  /** One poll of one leased instance, and its outcome written (events and cursor in one transaction). */
  async run(t: TriggerInstance): Promise<void> {
    const started = Date.now();
    const def = triggers.get(t.trigger);
    // A push instance is due for its registration's renewal (or a retry, a catch-up): runtime/triggers/push.ts.
    if (t.kind === 'push' && this.push) return this.push.maintain(t, this.owner);
    this.counters.polls++;
    try {
      if (!def?.poll)
        throw new ServiceError(500, 'trigger_unknown', `This service has no polling trigger ${t.trigger}`);
      const resolved = await this.accounts.resolve({ connectedAccountId: t.accountId });
      const live = await this.accounts.live(resolved);
      const base = (host?: string) => this.accounts.baseUrlFor(resolved, host);
      const result = await pollFeed(def.poll, t.config, t.state, t.createdAt, base, (r) =>
        sendForTrigger(this.executor, live, r),
      );
      const now = Date.now();
      const ctx = { connectionName: resolved.connection.name, identifier: resolved.account.identifier };
      const events = itemEvents(t, ctx, result.items, now);
      const kept = await this.store.transaction(async (tx) => {
        const current = await tx.getTriggerInstance(t.id);
        if (!current || current.leaseOwner !== this.owner) return false;
        const paused = current.status === 'paused';
        const patch: TriggerInstancePatch = {
          state: result.state as Record<string, unknown>,
          lastPollAt: now,
          failures: 0,
          status: paused ? 'paused' : 'active',
          nextRunAt: paused ? null : nextDue(now, t.intervalMs),
          ...(events.length ? { lastEventAt: now, eventsSentDelta: events.length } : {}),
        };
        const updated = await tx.updateTriggerInstance(t.id, patch, now, this.owner);
        if (!updated) return false;
        await tx.addWebhookEvents(events);
        if (current.status === 'failing' || current.status === 'needs_reauth') {
          await tx.addWebhookEvent(healthEvent('trigger.recovered', updated, ctx, now + events.length));
        }
        return true;
      });
      if (!kept) {
        this.counters.lostLeases++;
        return;
      }
      this.counters.events += events.length;
      if (events.length) this.onEvents();
    } catch (e) {
      await this.failed(t, e, started);
    }
  }

  private async failed(t: TriggerInstance, e: unknown, started: number): Promise<void> {
    const now = Date.now();
    this.counters.failures++;
    const message = describe(e);
    const wait =
      e instanceof ProviderError && (e.status === 429 || e.status === 503) ? retryAfterMs(e.headers, now) : undefined;
    if (wait !== undefined) this.cooldown.set(t.connector, Math.max(this.cooldown.get(t.connector) ?? 0, now + wait));
    const reauth =
      (e instanceof ProviderError && (e.status === 401 || e.status === 403)) ||
      (e instanceof ServiceError &&
        [
          'account_not_authorized',
          'account_expired',
          'account_disconnected',
          'account_pending_verification',
          'credentials_unreadable',
        ].includes(e.code));
    // Rate limited: held until Retry-After, not counted as a failure (nothing is wrong with the instance).
    const failures = wait !== undefined ? t.failures : t.failures + 1;
    const ctxName = async () => {
      const account = await this.accounts.accountById(t.accountId).catch(() => undefined);
      const connection = await this.accounts.connectionById(t.connectionId).catch(() => undefined);
      return { connectionName: connection?.name ?? '', identifier: account?.identifier ?? '' };
    };
    const ctx = await ctxName();
    this.log.warn(
      { instance: t.id, trigger: t.trigger, failures, ms: now - started, err: message },
      'trigger poll failed',
    );
    await this.store.transaction(async (tx) => {
      const current = await tx.getTriggerInstance(t.id);
      if (!current || current.leaseOwner !== this.owner) return;
      const paused = current.status === 'paused';
      let status: TriggerStatus = current.status;
      if (!paused) {
        if (reauth) status = 'needs_reauth';
        else if (failures >= FAILING_AFTER) status = 'failing';
      }
      const next = wait !== undefined ? now + Math.max(wait, 1_000) : now + backoffMs(t.intervalMs, failures);
      const updated = await tx.updateTriggerInstance(
        t.id,
        { failures, status, lastError: message, lastErrorAt: now, lastPollAt: now, nextRunAt: paused ? null : next },
        now,
        this.owner,
      );
      if (updated && status !== current.status && (status === 'failing' || status === 'needs_reauth')) {
        await tx.addWebhookEvent(healthEvent('trigger.failing', updated, ctx, now));
      }
    });
    this.onEvents();
  }
}

function describe(e: unknown): string {
  if (e instanceof ProviderError) {
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? null);
    return `the provider answered HTTP ${e.status}: ${body.slice(0, 300)}`;
  }
  if (e instanceof ServiceError) return `${e.code}: ${e.message}`.slice(0, 500);
  return ((e as Error)?.message ?? String(e)).slice(0, 500);
}
