import { inTransaction } from '../backend.ts';
import { SqlStoreBase } from './base.ts';
import { toAuditEvent } from '../rows.ts';
import type { AuditEvent, AuditQuery, AuditStore, NewAuditEvent } from '../types.ts';

/** The audit log: a hash chain of entries behind one head row. */
export abstract class AuditGroup extends SqlStoreBase implements AuditStore {
  async appendAuditEvents(es: readonly NewAuditEvent[], hashOf: (e: Omit<AuditEvent, 'hash'>) => string) {
    if (!es.length) return [];
    return inTransaction(this.db, async (db) => {
      // The head row, moved on by the whole batch first: on PostgreSQL the update takes its row lock, so a concurrent
      // append (another instance) waits here until this one commits, then reads the head this one left. SQLite has
      // one writer. One lock, one head update and one insert per batch, whatever its size.
      const head = await db
        .updateTable('audit_head')
        .set((eb) => ({ seq: eb('seq', '+', es.length) }))
        .where('id', '=', 1)
        .returning(['seq', 'hash'])
        .executeTakeFirstOrThrow();
      let seq = Number(head.seq) - es.length;
      let prevHash = head.hash;
      const events = es.map((e): AuditEvent => {
        const unhashed = { ...e, seq: ++seq, prevHash };
        prevHash = hashOf(unhashed);
        return { ...unhashed, hash: prevHash };
      });
      // 13 values a row: 200 rows stay within either database's limit on a statement's parameters.
      for (let i = 0; i < events.length; i += 200) {
        await db
          .insertInto('audit_events')
          .values(
            events.slice(i, i + 200).map((event) => ({
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
            })),
          )
          .execute();
      }
      await db.updateTable('audit_head').set({ hash: prevHash }).where('id', '=', 1).execute();
      return events;
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
