import { inTransaction } from '../backend.ts';
import { SqlStoreBase } from './base.ts';
import { toDashboardSession, toDashboardUser } from '../rows.ts';
import type { DashboardSession, DashboardStore, DashboardUser } from '../types.ts';

/** Dashboard users and sessions. */
export abstract class DashboardGroup extends SqlStoreBase implements DashboardStore {
  async createDashboardUser(u: DashboardUser) {
    const r = await this.db
      .insertInto('dashboard_users')
      .values({
        id: u.id,
        username: u.username,
        password_hash: u.passwordHash,
        created_at: u.createdAt,
        updated_at: u.updatedAt,
      })
      .onConflict((oc) => oc.column('username').doNothing())
      .executeTakeFirst();
    return r.numInsertedOrUpdatedRows === 1n;
  }
  async getDashboardUserByName(username: string) {
    const r = await this.db
      .selectFrom('dashboard_users')
      .selectAll()
      .where('username', '=', username)
      .executeTakeFirst();
    return r ? toDashboardUser(r) : undefined;
  }
  async setDashboardPassword(userId: string, passwordHash: string, at: number) {
    await inTransaction(this.db, async (db) => {
      await db
        .updateTable('dashboard_users')
        .set({ password_hash: passwordHash, updated_at: at })
        .where('id', '=', userId)
        .execute();
      await db.deleteFrom('dashboard_sessions').where('user_id', '=', userId).execute();
    });
  }
  async createDashboardSession(s: DashboardSession) {
    await this.db
      .insertInto('dashboard_sessions')
      .values({ id_hash: s.idHash, user_id: s.userId, created_at: s.createdAt, expires_at: s.expiresAt })
      .execute();
  }
  async getDashboardSession(idHash: string, now: number) {
    const r = await this.db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('dashboard_users as u', 'u.id', 's.user_id')
      .selectAll('s')
      .select('u.username')
      .where('s.id_hash', '=', idHash)
      .where('s.expires_at', '>', now)
      .executeTakeFirst();
    return r ? toDashboardSession(r) : undefined;
  }
  async deleteDashboardSession(idHash: string) {
    const r = await this.db.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash).executeTakeFirst();
    return r.numDeletedRows === 1n;
  }
  async deleteExpiredDashboardSessions(now: number) {
    await this.db.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).execute();
  }
}
