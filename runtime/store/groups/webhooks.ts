import { newSortableId } from '../../ids.ts';
import { inTransaction } from '../backend.ts';
import { SqlStoreBase, type OutboxColumns } from './base.ts';
import { toWebhookDelivery, toWebhookEndpoint } from '../rows.ts';
import type { WebhookAttemptResult, WebhookEndpoint, WebhookEvent, WebhookStore } from '../types.ts';

/** An event as its outbox row. */
export const outboxRow = (e: WebhookEvent): OutboxColumns => ({
  id: e.id,
  type: e.type,
  payload: e.payload,
  created_at: e.createdAt,
  ordering_key: e.orderingKey ?? null,
});

/** Outbox events per INSERT statement: 4 values each, far below either database's limit on parameters. */
const EVENTS_PER_INSERT = 500;

/** Webhook deliveries per INSERT statement: 14 values each. */
const DELIVERIES_PER_INSERT = 1_000;

/** How long a pass through the outbox goes on from where its last batch ended before it starts from the front. */
const OUTBOX_PASS_MS = 1_000;

/** Webhook endpoints, the event outbox and the deliveries. */
export abstract class WebhooksGroup extends SqlStoreBase implements WebhookStore {
  async createWebhookEndpoint(e: WebhookEndpoint) {
    await this.db
      .insertInto('webhook_endpoints')
      .values({
        id: e.id,
        url: e.url,
        events: JSON.stringify(e.events),
        secret_sealed: e.secretSealed,
        created_at: e.createdAt,
        updated_at: e.updatedAt,
      })
      .execute();
  }
  async getWebhookEndpoint(id: string) {
    const r = await this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toWebhookEndpoint(r) : undefined;
  }
  async listWebhookEndpoints() {
    const rows = await this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toWebhookEndpoint);
  }
  async updateWebhookEndpoint(
    id: string,
    patch: { url?: string; events?: string[]; secretSealed?: string },
    at: number,
  ) {
    const r = await this.db
      .updateTable('webhook_endpoints')
      .set({
        url: patch.url,
        events: patch.events === undefined ? undefined : JSON.stringify(patch.events),
        secret_sealed: patch.secretSealed,
        updated_at: at,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return r ? toWebhookEndpoint(r) : undefined;
  }
  async deleteWebhookEndpoint(id: string) {
    const r = await this.db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
    return r.numDeletedRows === 1n;
  }
  async addWebhookEvent(e: WebhookEvent) {
    await this.addWebhookEvents([e]);
  }
  async addWebhookEvents(events: readonly WebhookEvent[]) {
    for (let i = 0; i < events.length; i += EVENTS_PER_INSERT) {
      await this.db
        .insertInto('webhook_outbox')
        .values(events.slice(i, i + EVENTS_PER_INSERT).map(outboxRow))
        // An event id is its webhook-id: a trigger's item written again (a poll repeated after a crash) is one event.
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    }
  }
  /**
   * Where the next fan-out batch starts in the outbox's `(created_at, id)` order: past the last event this store
   * moved. A batch that started at the front would walk every event moved before it whose entry is still in the
   * index (PostgreSQL keeps a deleted row's entry until a vacuum: with autovacuum off or behind, a million). An event
   * written behind this point (its transaction committed late, or a clock went back) is taken when a pass starts
   * from the front again, a second after the pass began. Not after each short batch: a connection delete writes its
   * events in batches that the fan-out keeps up with, and each round would walk those dead entries again. (A
   * trigger's items are written at the poll's time plus their index, so the pass may stand a little ahead of the
   * clock: an event written meanwhile waits for the next pass, at most a second.)
   */
  private outboxFrom: { at: number; createdAt: number; id: string } | undefined;
  async fanOutWebhookEvents(limit: number, now: number) {
    const from =
      this.outboxFrom && performance.now() - this.outboxFrom.at < OUTBOX_PASS_MS ? this.outboxFrom : undefined;
    const events = await inTransaction(this.db, async (db) => {
      let q = db.selectFrom('webhook_outbox').selectAll().orderBy('created_at').orderBy('id').limit(limit);
      if (from) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(from.createdAt, from.id)));
      if (this.kind === 'postgres') q = q.forUpdate().skipLocked();
      const events = await q.execute();
      if (!events.length) return events;
      const endpoints = (await db.selectFrom('webhook_endpoints').selectAll().execute()).map(toWebhookEndpoint);
      const rows = events.flatMap((ev) =>
        endpoints
          .filter((ep) => ep.events.includes(ev.type))
          .map((ep) => ({
            id: newSortableId('whd'),
            endpoint_id: ep.id,
            event_id: ev.id,
            event_type: ev.type,
            payload: ev.payload,
            status: 'pending',
            attempts: 0,
            next_attempt_at: now,
            last_status: null,
            last_error: null,
            last_latency_ms: null,
            created_at: Number(ev.created_at),
            updated_at: now,
            delivered_at: null,
            ordering_key: ev.ordering_key ?? null,
          })),
      );
      // In statements of a bounded size: events × endpoints rows of 14 values could pass the databases' limits
      // on parameters per statement (SQLite's 32,766, PostgreSQL's 65,535).
      for (let i = 0; i < rows.length; i += DELIVERIES_PER_INSERT) {
        await db
          .insertInto('webhook_deliveries')
          .values(rows.slice(i, i + DELIVERIES_PER_INSERT))
          .onConflict((oc) => oc.columns(['event_id', 'endpoint_id']).doNothing())
          .execute();
      }
      await db
        .deleteFrom('webhook_outbox')
        .where(
          'id',
          'in',
          events.map((e) => e.id),
        )
        .execute();
      return events;
    });
    // Moved past only once committed: a batch rolled back is taken again.
    const last = events.at(-1);
    this.outboxFrom = last
      ? { at: from?.at ?? performance.now(), createdAt: Number(last.created_at), id: last.id }
      : from;
    return events.length;
  }
  async claimWebhookDeliveries(now: number, leaseMs: number, limit: number) {
    return inTransaction(this.db, async (db) => {
      let q = db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        // In order per ordering key (a trigger instance): none while an earlier one for the endpoint is pending.
        .where((eb) =>
          eb.or([
            eb('ordering_key', 'is', null),
            eb.not(
              eb.exists(
                eb
                  .selectFrom('webhook_deliveries as e')
                  .select('e.id')
                  .whereRef('e.endpoint_id', '=', 'webhook_deliveries.endpoint_id')
                  .whereRef('e.ordering_key', '=', 'webhook_deliveries.ordering_key')
                  .where('e.status', '=', 'pending')
                  .where((eb2) =>
                    eb2.or([
                      eb2('e.created_at', '<', eb2.ref('webhook_deliveries.created_at')),
                      eb2.and([
                        eb2('e.created_at', '=', eb2.ref('webhook_deliveries.created_at')),
                        eb2('e.event_id', '<', eb2.ref('webhook_deliveries.event_id')),
                      ]),
                    ]),
                  ),
              ),
            ),
          ]),
        )
        .orderBy('next_attempt_at')
        .limit(limit);
      if (this.kind === 'postgres') q = q.forUpdate().skipLocked();
      const ids = (await q.execute()).map((r) => r.id);
      if (!ids.length) return [];
      const rows = await db
        .updateTable('webhook_deliveries')
        .set((eb) => ({ attempts: eb('attempts', '+', 1), next_attempt_at: now + leaseMs, updated_at: now }))
        .where('id', 'in', ids)
        .returningAll()
        .execute();
      return rows.map(toWebhookDelivery);
    });
  }
  async finishWebhookAttempt(id: string, result: WebhookAttemptResult, at: number) {
    await this.db
      .updateTable('webhook_deliveries')
      .set({
        status: result.status,
        next_attempt_at: result.nextAttemptAt,
        last_status: result.lastStatus,
        last_error: result.lastError,
        last_latency_ms: result.lastLatencyMs,
        updated_at: at,
        ...(result.status === 'succeeded' ? { delivered_at: at } : {}),
      })
      .where('id', '=', id)
      .execute();
  }
  async getWebhookDelivery(id: string) {
    const r = await this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toWebhookDelivery(r) : undefined;
  }
  async listWebhookDeliveries(endpointId: string, limit: number, before?: { createdAt: number; id: string }) {
    let q = this.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
    if (before) {
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '<', before.createdAt),
          eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)]),
        ]),
      );
    }
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toWebhookDelivery);
  }
  async redeliverWebhook(id: string, now: number) {
    const r = await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now, updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return r ? toWebhookDelivery(r) : undefined;
  }
}
