import { type ActivityRow } from '../backend.ts';
import { SqlStoreBase } from './base.ts';
import { toActivity } from '../rows.ts';
import type { ActivityRecord, ActivityStore } from '../types.ts';

const activityRow = (r: ActivityRecord): ActivityRow => ({
  id: r.id,
  kind: r.kind,
  name: r.name,
  connection_name: r.connectionName,
  account_id: r.accountId,
  identifier: r.identifier,
  status: r.status,
  error_code: r.errorCode,
  latency_ms: r.latencyMs,
  created_at: r.createdAt,
});

/** The activity log of tool calls and requests. */
export abstract class ActivityGroup extends SqlStoreBase implements ActivityStore {
  async recordActivity(records: readonly ActivityRecord[]) {
    if (!records.length) return;
    await this.backend.insertActivity(this.db, records.map(activityRow));
  }
  async listActivity(limit: number, before?: number) {
    let query = this.db.selectFrom('activity').selectAll();
    if (before) query = query.where('created_at', '<', before);
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toActivity);
  }
  async pruneActivity(olderThan: number, limit: number) {
    const r = await this.db
      .deleteFrom('activity')
      .where('id', 'in', (eb) =>
        eb.selectFrom('activity').select('id').where('created_at', '<', olderThan).limit(limit),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
