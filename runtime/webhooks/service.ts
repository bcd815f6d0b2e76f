/** Webhook endpoints and their deliveries, for the API and the dashboard. */
import { randomBytes } from 'node:crypto';
import { ServiceError } from '../../core/errors.ts';
import { aad } from '../crypto/aad.ts';
import type { Sealer } from '../crypto/sealer.ts';
import type { Config } from '../config.ts';
import { newId } from '../ids.ts';
import type { Store, WebhookDelivery, WebhookEndpoint } from '../store/types.ts';
import { checkWebhookUrl } from './targets.ts';
import type { WebhookWorker } from './worker.ts';
import type { WebhookEventType } from './events.ts';
import { isTriggerEventType } from '../triggers/service.ts';

/** Trigger event types must name a trigger this service has (the schema only checks their form). */
function checkEventTypes(events: readonly string[]): void {
  const unknown = events.filter((e) => e.startsWith('trigger.') && !isTriggerEventType(e));
  if (unknown.length) {
    throw new ServiceError(
      400,
      'invalid_input',
      `Invalid webhook: events name no trigger of this service: ${unknown.join(', ')}`,
      [{ field: 'events', message: `${unknown.join(', ')} names no trigger (see GET /v1/triggers/types)` }],
    );
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A new signing secret in the Standard Webhooks form: `whsec_` and 24 random bytes in base64. */
function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function webhookView(e: WebhookEndpoint) {
  return {
    id: e.id,
    url: e.url,
    events: e.events as WebhookEventType[],
    created_at: iso(e.createdAt)!,
    updated_at: iso(e.updatedAt)!,
  };
}

export function deliveryView(d: WebhookDelivery) {
  return {
    id: d.id,
    webhook_id: d.endpointId,
    event_id: d.eventId,
    event_type: d.eventType as WebhookEventType,
    event: JSON.parse(d.payload) as Record<string, unknown>,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    last_status_code: d.lastStatus,
    last_error: d.lastError,
    latency_ms: d.lastLatencyMs,
    created_at: iso(d.createdAt)!,
    delivered_at: iso(d.deliveredAt),
  };
}

export function encodeDeliveryCursor(d: WebhookDelivery): string {
  return Buffer.from(`${d.createdAt}:${d.id}`).toString('base64url');
}

function decodeDeliveryCursor(cursor: string): { createdAt: number; id: string } {
  const m = /^(\d+):(whd_[0-9a-z]+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) {
    throw new ServiceError(400, 'invalid_input', 'Invalid query: cursor is not one a page of deliveries gave', [
      { field: 'cursor', message: 'must be the next_cursor of a previous page' },
    ]);
  }
  return { createdAt: Number(m[1]), id: m[2]! };
}

export class WebhookService {
  constructor(
    private store: Store,
    private sealer: Sealer,
    private config: Config,
    readonly worker: WebhookWorker,
  ) {}

  async create(url: string, events: string[]): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    checkEventTypes(events);
    const checked = await checkWebhookUrl(url, this.config.webhookAllowedHosts);
    const id = newId('wh');
    const secret = newSecret();
    const now = Date.now();
    const endpoint: WebhookEndpoint = {
      id,
      url: checked,
      events: [...new Set(events)],
      secretSealed: this.sealer.seal(secret, aad.webhookSecret(id)),
      createdAt: now,
      updatedAt: now,
    };
    await this.store.createWebhookEndpoint(endpoint);
    return { endpoint, secret };
  }

  async get(id: string): Promise<WebhookEndpoint> {
    const e = await this.store.getWebhookEndpoint(id);
    if (!e) throw new ServiceError(404, 'webhook_not_found', `No webhook with id "${id}"`);
    return e;
  }

  async update(id: string, patch: { url?: string | null; events?: string[] | null }): Promise<WebhookEndpoint> {
    await this.get(id);
    if (patch.events) checkEventTypes(patch.events);
    const url = patch.url == null ? undefined : await checkWebhookUrl(patch.url, this.config.webhookAllowedHosts);
    const events = patch.events == null ? undefined : [...new Set(patch.events)];
    const updated = await this.store.updateWebhookEndpoint(id, { url, events }, Date.now());
    if (!updated) throw new ServiceError(404, 'webhook_not_found', `No webhook with id "${id}"`);
    return updated;
  }

  async delete(id: string): Promise<void> {
    if (!(await this.store.deleteWebhookEndpoint(id))) {
      throw new ServiceError(404, 'webhook_not_found', `No webhook with id "${id}"`);
    }
  }

  /** A new secret, shown once; deliveries from now on are signed with it only. */
  async rotateSecret(id: string): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    await this.get(id);
    const secret = newSecret();
    const endpoint = await this.store.updateWebhookEndpoint(
      id,
      { secretSealed: this.sealer.seal(secret, aad.webhookSecret(id)) },
      Date.now(),
    );
    if (!endpoint) throw new ServiceError(404, 'webhook_not_found', `No webhook with id "${id}"`);
    return { endpoint, secret };
  }

  async deliveries(id: string, limit: number, cursor?: string) {
    await this.get(id);
    const before = cursor ? decodeDeliveryCursor(cursor) : undefined;
    const page = await this.store.listWebhookDeliveries(id, limit + 1, before);
    const more = page.length > limit;
    const list = more ? page.slice(0, limit) : page;
    return { deliveries: list, nextCursor: more ? encodeDeliveryCursor(list[list.length - 1]!) : null };
  }

  async redeliver(id: string, deliveryId: string): Promise<WebhookDelivery> {
    await this.get(id);
    const existing = await this.store.getWebhookDelivery(deliveryId);
    if (!existing || existing.endpointId !== id) {
      throw new ServiceError(404, 'delivery_not_found', `No delivery "${deliveryId}" for webhook "${id}"`);
    }
    const d = (await this.store.redeliverWebhook(deliveryId, Date.now()))!;
    this.worker.poke();
    return d;
  }
}
