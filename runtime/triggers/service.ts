/**
 * Trigger instances (docs/triggers.md): created on a connected account for one of its connector's triggers,
 * listed, paused, resumed and deleted. A polling instance is started at creation (a cursor feed's first cursor, or
 * the items listed now remembered), so that nothing that existed before it is sent.
 */
import { ServiceError, ProviderError } from '../../core/errors.ts';
import type { TriggerDefinition, UpstreamRequest } from '../../core/tool-types.ts';
import { triggers } from '../../generated/registry.ts';
import type { AccountService } from '../accounts/service.ts';
import { notActiveError } from '../accounts/service.ts';
import type { Config } from '../config.ts';
import { newSortableId } from '../ids.ts';
import { decodeCursor, encodeCursor, InvalidCursor } from '../store/cursor.ts';
import type { Store, TriggerInstance, TriggerStatus } from '../store/types.ts';
import type { ToolExecutor } from '../tools/executor.ts';
import { startFeed } from './feed.ts';
import type { LiveAccount } from '../accounts/service.ts';
import type { PushEngine } from './push.ts';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function triggerDefinition(name: string): TriggerDefinition {
  const def = triggers.get(name);
  if (!def) {
    throw new ServiceError(404, 'trigger_not_found', `No trigger named "${name}"`, [
      { field: 'trigger', message: `must be one of: ${[...triggers.keys()].join(', ')}` },
    ]);
  }
  return def;
}

/** Whether `type` is an event a webhook may subscribe to among the trigger events. */
export function isTriggerEventType(type: string): boolean {
  if (!type.startsWith('trigger.')) return false;
  const name = type.slice('trigger.'.length);
  return name === 'failing' || name === 'recovered' || triggers.has(name);
}

export interface CreateTrigger {
  trigger: string;
  connection_name: string;
  identifier: string;
  config?: Record<string, unknown> | null;
  interval_seconds?: number | null;
}

export interface TriggerQuery {
  trigger?: string;
  connection_name?: string;
  identifier?: string;
  status?: TriggerStatus;
  limit: number;
  cursor?: string;
}

/** Sends a request for the trigger engine: the parsed 2xx answer, or the provider's error (status and headers). */
export async function sendForTrigger(
  executor: ToolExecutor,
  live: LiveAccount,
  req: UpstreamRequest,
): Promise<unknown> {
  const res = await executor.sendOne(live, req);
  if (res.status >= 200 && res.status < 300) return res.body;
  const empty = req.emptyOn?.find((e) => e.status === res.status);
  if (empty) return empty.data;
  throw new ProviderError(res.status, res.body, res.headers);
}

export class TriggerService {
  /** Called when an instance becomes due sooner than the poller expects (created, resumed). */
  onDue: () => void = () => {};
  /** Push triggers' registrations with their providers (runtime/triggers/push.ts). */
  push?: PushEngine;

  constructor(
    private store: Store,
    private accounts: AccountService,
    private executor: ToolExecutor,
    private config: Config,
  ) {}

  intervalMs(def: TriggerDefinition, requested?: number | null): number {
    const min = this.config.triggers.minIntervalSeconds;
    const wanted = requested ?? def.poll?.intervalSeconds ?? 60;
    return Math.max(min, wanted) * 1000;
  }

  async create(req: CreateTrigger): Promise<TriggerInstance> {
    const def = triggerDefinition(req.trigger);
    const resolved = await this.accounts.resolve({ connectionName: req.connection_name, identifier: req.identifier });
    if (resolved.connector.name !== def.connector) {
      throw new ServiceError(
        400,
        'trigger_connector_mismatch',
        `Trigger ${def.name} belongs to the ${def.connector} connector, but connection "${req.connection_name}" uses ${resolved.connector.name}`,
        [{ field: 'trigger', message: `is not a trigger of the ${resolved.connector.name} connector` }],
      );
    }
    const config = structuredClone(req.config ?? {});
    if (!def.validateConfig(config)) {
      const errors = (def.validateConfig.errors ?? []).map((e) => ({
        field: `config${e.instancePath.replace(/\//g, '.')}`,
        message:
          e.keyword === 'additionalProperties'
            ? `has no setting "${String(e.params.additionalProperty)}"`
            : (e.message ?? e.keyword),
      }));
      throw new ServiceError(
        400,
        'invalid_input',
        `Invalid trigger config: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`,
        errors,
      );
    }
    if (def.kind === 'push' && def.push && this.push) {
      if (resolved.account.status !== 'ACTIVE') throw notActiveError(resolved.account);
      const now = Date.now();
      const id = newSortableId('trg');
      const t: TriggerInstance = {
        id,
        trigger: def.name,
        connector: def.connector,
        kind: 'push',
        connectionId: resolved.connection.id,
        accountId: resolved.account.id,
        config,
        status: 'active',
        intervalMs: this.config.triggers.minIntervalSeconds * 1000,
        state: {},
        secretSealed: this.push.sealSecret(id),
        nextRunAt: null,
        leaseOwner: null,
        leaseUntil: null,
        failures: 0,
        eventsSent: 0,
        lastEventAt: null,
        lastPollAt: null,
        lastError: null,
        lastErrorAt: null,
        createdAt: now,
        updatedAt: now,
      };
      await this.store.createTriggerInstance(t);
      // Registered with the provider now; a failure leaves the instance failing (or needs_reauth), retried later.
      const registered = await this.push.register(t, undefined, resolved);
      this.onDue();
      return registered;
    }
    if (def.kind !== 'polling' || !def.poll) {
      throw new ServiceError(
        501,
        'not_implemented',
        `Push trigger ${def.name} cannot be created by this version of the service`,
      );
    }
    if (resolved.account.status !== 'ACTIVE') throw notActiveError(resolved.account);
    const now = Date.now();
    const intervalMs = this.intervalMs(def, req.interval_seconds);
    const live = await this.accounts.live(resolved);
    const base = (host?: string) => this.accounts.baseUrlFor(resolved, host);
    const state = await startFeed(def.poll, config, now, base, (r) => sendForTrigger(this.executor, live, r));
    const t: TriggerInstance = {
      id: newSortableId('trg'),
      trigger: def.name,
      connector: def.connector,
      kind: def.kind,
      connectionId: resolved.connection.id,
      accountId: resolved.account.id,
      config,
      status: 'active',
      intervalMs,
      state: state as Record<string, unknown>,
      secretSealed: null,
      // The first poll an interval after the start, spread by up to a tenth of it (jitter).
      nextRunAt: now + intervalMs + Math.floor(Math.random() * intervalMs * 0.1),
      leaseOwner: null,
      leaseUntil: null,
      failures: 0,
      eventsSent: 0,
      lastEventAt: null,
      lastPollAt: now,
      lastError: null,
      lastErrorAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.createTriggerInstance(t);
    this.onDue();
    return t;
  }

  async get(id: string): Promise<TriggerInstance> {
    const t = await this.store.getTriggerInstance(id);
    if (!t) throw new ServiceError(404, 'trigger_instance_not_found', `No trigger instance with id "${id}"`);
    return t;
  }

  async list(q: TriggerQuery): Promise<{ instances: TriggerInstance[]; nextCursor: string | null }> {
    let connectionId: string | undefined;
    let accountId: string | undefined;
    if (q.connection_name !== undefined) {
      const c = await this.accounts.connectionByName(q.connection_name);
      connectionId = c.id;
      if (q.identifier !== undefined) {
        const a = await this.accounts.findAccount(c.id, q.identifier);
        if (!a) return { instances: [], nextCursor: null };
        accountId = a.id;
      }
    } else if (q.identifier !== undefined) {
      throw new ServiceError(400, 'invalid_input', 'Invalid query: identifier needs connection_name', [
        { field: 'identifier', message: 'is only accepted with connection_name' },
      ]);
    }
    try {
      decodeCursor(q.cursor);
    } catch (e) {
      if (e instanceof InvalidCursor) {
        throw new ServiceError(400, 'invalid_input', 'Invalid query: cursor is not one a page of instances gave', [
          { field: 'cursor', message: 'must be the next_cursor of a previous page' },
        ]);
      }
      throw e;
    }
    const page = await this.store.listTriggerInstances({
      connectionId,
      accountId,
      trigger: q.trigger,
      status: q.status,
      limit: q.limit + 1,
      after: q.cursor,
    });
    const more = page.length > q.limit;
    const instances = more ? page.slice(0, q.limit) : page;
    return { instances, nextCursor: more ? encodeCursor(instances[instances.length - 1]!) : null };
  }

  async pause(id: string): Promise<TriggerInstance> {
    const current = await this.get(id);
    // A push instance's registration is removed: the provider stops sending while it is paused.
    const unregistered =
      current.kind === 'push' && current.status !== 'paused' && this.push
        ? {
            state: {},
            ...((await this.push.removeRegistration(current)) ? {} : { lastError: 'unregistration failed' }),
          }
        : {};
    const t = await this.store.updateTriggerInstance(
      id,
      { status: 'paused', nextRunAt: null, ...unregistered },
      Date.now(),
    );
    if (!t) throw new ServiceError(404, 'trigger_instance_not_found', `No trigger instance with id "${id}"`);
    return t;
  }

  /** Active again, polled at once; the cursor is where it was, so what happened meanwhile is sent. */
  async resume(id: string): Promise<TriggerInstance> {
    const now = Date.now();
    const current = await this.get(id);
    // A failing instance stays failing until a poll succeeds (which sends trigger.recovered); a paused one is active.
    const status = current.status === 'paused' ? 'active' : current.status;
    // A push instance is not made due (the poller would renew what is not registered): it is registered here.
    const push = current.kind === 'push';
    const t = await this.store.updateTriggerInstance(id, { status, nextRunAt: push ? current.nextRunAt : now }, now);
    if (!t) throw new ServiceError(404, 'trigger_instance_not_found', `No trigger instance with id "${id}"`);
    // A paused push instance is registered with the provider again.
    if (t.kind === 'push' && current.status === 'paused' && this.push) return this.push.register(t);
    this.onDue();
    return t;
  }

  async delete(id: string): Promise<void> {
    const current = await this.store.getTriggerInstance(id);
    // The provider's registration goes first (with the credentials still there); a failure does not keep the instance.
    if (current?.kind === 'push' && this.push) await this.push.removeRegistration(current);
    if (!(await this.store.deleteTriggerInstance(id))) {
      throw new ServiceError(404, 'trigger_instance_not_found', `No trigger instance with id "${id}"`);
    }
  }

  /** The API's view of an instance (names looked up through the account caches). */
  async view(t: TriggerInstance) {
    const account = await this.accounts.accountById(t.accountId);
    const connection = await this.accounts.connectionById(t.connectionId);
    return {
      id: t.id,
      trigger: t.trigger,
      connector: t.connector,
      kind: t.kind,
      connection_name: connection?.name ?? null,
      identifier: account?.identifier ?? null,
      connected_account_id: t.accountId,
      config: t.config,
      status: t.status,
      interval_seconds: Math.round(t.intervalMs / 1000),
      events_sent: t.eventsSent,
      last_event_at: iso(t.lastEventAt),
      last_poll_at: iso(t.lastPollAt),
      next_poll_at: iso(t.nextRunAt),
      last_error: t.lastError,
      last_error_at: iso(t.lastErrorAt),
      created_at: iso(t.createdAt)!,
      updated_at: iso(t.updatedAt)!,
      ...(t.kind === 'push' && this.push ? { ingress_url: await this.push.ingressUrl(t.connectionId) } : {}),
    };
  }
}
