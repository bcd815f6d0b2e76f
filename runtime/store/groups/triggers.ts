import { inTransaction } from '../backend.ts';
import { decodeCursor } from '../cursor.ts';
import { SqlStoreBase } from './base.ts';
import { toTriggerInstance } from '../rows.ts';
import type { TriggerInstance, TriggerInstancePatch, TriggerInstanceQuery, TriggerStore } from '../types.ts';

const triggerRow = (t: TriggerInstance) => ({
  id: t.id,
  trigger_name: t.trigger,
  connector: t.connector,
  kind: t.kind,
  connection_id: t.connectionId,
  account_id: t.accountId,
  config: JSON.stringify(t.config),
  status: t.status,
  interval_ms: t.intervalMs,
  state: JSON.stringify(t.state),
  secret_sealed: t.secretSealed,
  next_run_at: t.nextRunAt,
  lease_owner: t.leaseOwner,
  lease_until: t.leaseUntil,
  failures: t.failures,
  events_sent: t.eventsSent,
  last_event_at: t.lastEventAt,
  last_poll_at: t.lastPollAt,
  last_error: t.lastError,
  last_error_at: t.lastErrorAt,
  created_at: t.createdAt,
  updated_at: t.updatedAt,
});

/** Trigger instances and their leases. */
export abstract class TriggersGroup extends SqlStoreBase implements TriggerStore {
  async createTriggerInstance(t: TriggerInstance) {
    await this.db.insertInto('trigger_instances').values(triggerRow(t)).execute();
  }
  async getTriggerInstance(id: string) {
    const r = await this.db.selectFrom('trigger_instances').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toTriggerInstance(r) : undefined;
  }
  async listTriggerInstances(q: TriggerInstanceQuery) {
    const after = decodeCursor(q.after);
    let query = this.db.selectFrom('trigger_instances').selectAll();
    if (q.connectionId) query = query.where('connection_id', '=', q.connectionId);
    if (q.accountId) query = query.where('account_id', '=', q.accountId);
    if (q.trigger) query = query.where('trigger_name', '=', q.trigger);
    if (q.status) query = query.where('status', '=', q.status);
    if (after) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '>', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)]),
        ]),
      );
    }
    return (await query.orderBy('created_at').orderBy('id').limit(q.limit).execute()).map(toTriggerInstance);
  }
  async updateTriggerInstance(id: string, patch: TriggerInstancePatch, at: number, leaseOwner?: string) {
    let q = this.db
      .updateTable('trigger_instances')
      .set((eb) => ({
        config: patch.config === undefined ? undefined : JSON.stringify(patch.config),
        status: patch.status,
        interval_ms: patch.intervalMs,
        state: patch.state === undefined ? undefined : JSON.stringify(patch.state),
        secret_sealed: patch.secretSealed,
        next_run_at: patch.nextRunAt,
        failures: patch.failures,
        last_event_at: patch.lastEventAt,
        last_poll_at: patch.lastPollAt,
        last_error: patch.lastError,
        last_error_at: patch.lastErrorAt,
        ...(patch.eventsSentDelta ? { events_sent: eb('events_sent', '+', patch.eventsSentDelta) } : {}),
        ...(leaseOwner === undefined ? {} : { lease_owner: null, lease_until: null }),
        updated_at: at,
      }))
      .where('id', '=', id);
    if (leaseOwner !== undefined) q = q.where('lease_owner', '=', leaseOwner);
    const r = await q.returningAll().executeTakeFirst();
    return r ? toTriggerInstance(r) : undefined;
  }
  async deleteTriggerInstance(id: string) {
    const r = await this.db.deleteFrom('trigger_instances').where('id', '=', id).executeTakeFirst();
    return r.numDeletedRows === 1n;
  }
  async claimDueTriggerInstances(
    now: number,
    owner: string,
    until: number,
    limit: number,
    skip: readonly string[] = [],
  ) {
    return inTransaction(this.db, async (db) => {
      let q = db
        .selectFrom('trigger_instances')
        .select('id')
        .where('next_run_at', '<=', now)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
        .orderBy('next_run_at')
        .limit(limit);
      if (skip.length) q = q.where('connector', 'not in', skip);
      if (this.kind === 'postgres') q = q.forUpdate().skipLocked();
      const ids = (await q.execute()).map((r) => r.id);
      if (!ids.length) return [];
      const rows = await db
        .updateTable('trigger_instances')
        .set({ lease_owner: owner, lease_until: until })
        .where('id', 'in', ids)
        .returningAll()
        .execute();
      return rows.map(toTriggerInstance).sort((a, b) => (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0));
    });
  }
  async nextTriggerDue() {
    const r = await this.db
      .selectFrom('trigger_instances')
      .select('next_run_at')
      .where('next_run_at', 'is not', null)
      .orderBy('next_run_at')
      .limit(1)
      .executeTakeFirst();
    return r ? Number(r.next_run_at) : null;
  }

  // Push triggers (issue 41, migration 016): ingress tokens and app-webhook routing.
  async triggerIngressToken(connectionId: string, candidate: string, now: number) {
    await this.db
      .insertInto('trigger_ingress')
      .values({ connection_id: connectionId, token: candidate, created_at: now })
      .onConflict((oc) => oc.column('connection_id').doNothing())
      .execute();
    const r = await this.db
      .selectFrom('trigger_ingress')
      .select('token')
      .where('connection_id', '=', connectionId)
      .executeTakeFirstOrThrow();
    return r.token;
  }
  async triggerIngressConnection(token: string) {
    const r = await this.db
      .selectFrom('trigger_ingress')
      .select('connection_id')
      .where('token', '=', token)
      .executeTakeFirst();
    return r?.connection_id;
  }
  async setTriggerRouteKey(id: string, routeKey: string | null) {
    await this.db.updateTable('trigger_instances').set({ route_key: routeKey }).where('id', '=', id).execute();
  }
  async triggerInstancesByRoute(connectionId: string, routeKey: string, limit: number) {
    const rows = await this.db
      .selectFrom('trigger_instances')
      .selectAll()
      .where('connection_id', '=', connectionId)
      .where('route_key', '=', routeKey)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toTriggerInstance);
  }
  async pushTriggerInstances(q: { accountId?: string; connectionId?: string }, limit: number) {
    let query = this.db.selectFrom('trigger_instances').selectAll().where('kind', '=', 'push');
    if (q.accountId) query = query.where('account_id', '=', q.accountId);
    if (q.connectionId) query = query.where('connection_id', '=', q.connectionId);
    return (await query.orderBy('created_at').orderBy('id').limit(limit).execute()).map(toTriggerInstance);
  }
  // End of push triggers.
}
