/**
 * Trigger events (docs/triggers.md): `trigger.<trigger name>` for each new provider item, `trigger.failing` and
 * `trigger.recovered` when an instance's health changes. An item's event id (its `webhook-id`) is derived from the
 * instance and the item's key, so the same provider item always has the same id: written twice (a poll repeated
 * after a crash), it is one outbox row, and a receiver that saw it drops it.
 */
import { createHash } from 'node:crypto';
import { newSortableId } from '../ids.ts';
import type { TriggerInstance, WebhookEvent } from '../store/types.ts';

export interface InstanceContext {
  connectionName: string;
  identifier: string;
}

export function itemEventId(instanceId: string, key: string): string {
  return `msg_${createHash('sha256').update(`${instanceId}\n${key}`).digest('base64url').slice(0, 32)}`;
}

function envelope(t: TriggerInstance, ctx: InstanceContext) {
  return {
    trigger_instance_id: t.id,
    trigger: t.trigger,
    connector: t.connector,
    connection_name: ctx.connectionName,
    connected_account_id: t.accountId,
    identifier: ctx.identifier,
  };
}

/** The events of a poll's new items, in order: ascending creation times keep them in the outbox's order. */
export function itemEvents(
  t: TriggerInstance,
  ctx: InstanceContext,
  items: ReadonlyArray<{ key: string; item: Record<string, unknown> }>,
  at: number,
): WebhookEvent[] {
  const type = `trigger.${t.trigger}`;
  const timestamp = new Date(at).toISOString();
  return items.map(({ key, item }, i) => ({
    id: itemEventId(t.id, key),
    type,
    payload: JSON.stringify({ type, timestamp, data: { ...envelope(t, ctx), item_id: key, item } }),
    createdAt: at + i,
    orderingKey: t.id,
  }));
}

export function healthEvent(
  type: 'trigger.failing' | 'trigger.recovered',
  t: TriggerInstance,
  ctx: InstanceContext,
  at: number,
): WebhookEvent {
  return {
    id: newSortableId('msg'),
    type,
    payload: JSON.stringify({
      type,
      timestamp: new Date(at).toISOString(),
      data: { ...envelope(t, ctx), status: t.status, failures: t.failures, last_error: t.lastError },
    }),
    createdAt: at,
    orderingKey: t.id,
  };
}
