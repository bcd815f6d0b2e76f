import { inTransaction } from '../backend.ts';
import { SqlStoreBase } from './base.ts';
import { toAuditEvent } from '../rows.ts';
import type { AuditEvent, AuditQuery, AuditStore, NewAuditEvent } from '../types.ts';

/** The audit log: a hash chain of entries behind one head row. */
export abstract class AuditGroup extends SqlStoreBase implements AuditStore {
  async appendAuditEvent(e: NewAuditEvent, hashOf: (e: Omit<AuditEvent, 'hash'>) => string) {
    return inTransaction(this.db, async (db) => {
      // The head row, updated first: on PostgreSQL the update takes its row lock, so a concurrent append (another
      // instance) waits here until this one commits, then reads the head this one left. SQLite has one writer.
      await db
        .updateTable('audit_head')
        .set((eb) => ({ seq: eb('seq', '+', 1) }))
        .where('id', '=', 1)
        .execute();
      const head = await db
        .selectFrom('audit_head')
        .select(['seq', 'hash'])
        .where('id', '=', 1)
        .executeTakeFirstOrThrow();
      const unhashed = { ...e, seq: Number(head.seq), prevHash: head.hash };
      const event: AuditEvent = { ...unhashed, hash: hashOf(unhashed) };
      await db
        .insertInto('audit_events')
        .values({
          seq: event.seq,
          id: event.id,
          at: event.at,
          actor_type: event.actorType,
          actor_id: event.actorId,
          action: event.action,
          target_type: event.targetType,
          target_id: event.targetId,
          source_address: event.sourceAddress,
          request_id: event.requestId,
          changes: JSON.stringify(event.changes),
          prev_hash: event.prevHash,
          hash: event.hash,
        })
        .execute();
      await db.updateTable('audit_head').set({ hash: event.hash }).where('id', '=', 1).execute();
      return event;
    });
  }
  async listAuditEvents(q: AuditQuery) {
    let query = this.db.selectFrom('audit_events').selectAll();
    if (q.actorId !== undefined) query = query.where('actor_id', '=', q.actorId);
    if (q.action !== undefined) query = query.where('action', '=', q.action);
    if (q.targetId !== undefined) query = query.where('target_id', '=', q.targetId);
    if (q.from !== undefined) query = query.where('at', '>=', q.from);
    if (q.to !== undefined) query = query.where('at', '<', q.to);
    if (q.cursor !== undefined) query = query.where('seq', q.order === 'desc' ? '<' : '>', q.cursor);
    const rows = await query.orderBy('seq', q.order).limit(q.limit).execute();
    return rows.map(toAuditEvent);
  }
  async auditHead() {
    const r = await this.db.selectFrom('audit_head').selectAll().where('id', '=', 1).executeTakeFirstOrThrow();
    return { seq: Number(r.seq), hash: r.hash, anchorSeq: Number(r.anchor_seq), anchorHash: r.anchor_hash };
  }
  async pruneAuditEvents(before: number, batch: number) {
    return inTransaction(this.db, async (db) => {
      // The head row locked first, as an append does: the anchor and the entries move together.
      await db
        .updateTable('audit_head')
        .set((eb) => ({ seq: eb.ref('seq') }))
        .where('id', '=', 1)
        .execute();
      const oldest = await db
        .selectFrom('audit_events')
        .select(['seq', 'hash'])
        .where('at', '<', before)
        .orderBy('seq')
        .limit(batch)
        .execute();
      // Only a run from the start of the chain: an older entry written later (a clock step) waits for its turn.
      const first = await db.selectFrom('audit_events').select('seq').orderBy('seq').limit(1).executeTakeFirst();
      if (!oldest.length || Number(first!.seq) !== Number(oldest[0]!.seq)) return 0;
      let last = oldest[0]!;
      for (const r of oldest) {
        if (Number(r.seq) !== Number(last.seq) && Number(r.seq) !== Number(last.seq) + 1) break;
        last = r;
      }
      const r = await db.deleteFrom('audit_events').where('seq', '<=', last.seq).executeTakeFirst();
      await db
        .updateTable('audit_head')
        .set({ anchor_seq: last.seq, anchor_hash: last.hash })
        .where('id', '=', 1)
        .execute();
      return Number(r.numDeletedRows);
    });
  }
}
