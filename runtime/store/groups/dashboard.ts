import { inTransaction, type Db } from '../backend.ts';
import { SqlStoreBase } from './base.ts';
import { toDashboardInvitation, toDashboardSession, toDashboardUser } from '../rows.ts';
import type {
  DashboardInvitation,
  DashboardRole,
  DashboardSession,
  DashboardStore,
  DashboardUser,
  DashboardUserChange,
} from '../types.ts';

/** Dashboard users and sessions. */
export abstract class DashboardGroup extends SqlStoreBase implements DashboardStore {
  async createDashboardUser(u: DashboardUser) {
    const r = await this.db
      .insertInto('dashboard_users')
      .values({
        id: u.id,
        username: u.username,
        password_hash: u.passwordHash,
        role: u.role,
        oidc_subject: u.oidcSubject,
        created_at: u.createdAt,
        updated_at: u.updatedAt,
      })
      .onConflict((oc) => oc.doNothing())
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
      .select(['u.username', 'u.role'])
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

  // Dashboard users and invitations (issue 37, item 4).
  async listDashboardUsers() {
    const rows = await this.db.selectFrom('dashboard_users').selectAll().orderBy('username').execute();
    return rows.map(toDashboardUser);
  }
  async getDashboardUser(id: string) {
    const r = await this.db.selectFrom('dashboard_users').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toDashboardUser(r) : undefined;
  }
  async getDashboardUserBySubject(oidcSubject: string) {
    const r = await this.db
      .selectFrom('dashboard_users')
      .selectAll()
      .where('oidc_subject', '=', oidcSubject)
      .executeTakeFirst();
    return r ? toDashboardUser(r) : undefined;
  }
  /**
   * Runs `change` on the user unless it would leave no admin. On PostgreSQL the admins' rows are locked first, so two
   * admins demoting each other at once cannot both pass the count; SQLite has one writer at a time.
   */
  private async changeDashboardUser(
    id: string,
    keepsAdmin: boolean,
    change: (db: Db) => Promise<void>,
  ): Promise<DashboardUserChange> {
    return inTransaction(this.db, async (db) => {
      let admins = db.selectFrom('dashboard_users').select('id').where('role', '=', 'admin');
      if (this.kind === 'postgres') admins = admins.forUpdate();
      const adminIds = (await admins.execute()).map((r) => r.id);
      const user = await db.selectFrom('dashboard_users').select('role').where('id', '=', id).executeTakeFirst();
      if (!user) return 'not_found';
      if (!keepsAdmin && user.role === 'admin' && adminIds.filter((a) => a !== id).length === 0) return 'last_admin';
      await change(db);
      return 'ok';
    });
  }
  async setDashboardUserRole(id: string, role: DashboardRole, at: number) {
    return this.changeDashboardUser(id, role === 'admin', async (db) => {
      await db.updateTable('dashboard_users').set({ role, updated_at: at }).where('id', '=', id).execute();
    });
  }
  async deleteDashboardUser(id: string) {
    return this.changeDashboardUser(id, false, async (db) => {
      await db.deleteFrom('dashboard_sessions').where('user_id', '=', id).execute();
      await db.deleteFrom('dashboard_users').where('id', '=', id).execute();
    });
  }
  async createDashboardInvitation(i: DashboardInvitation) {
    await this.db
      .insertInto('dashboard_invitations')
      .values({
        id: i.id,
        token_hash: i.tokenHash,
        username: i.username,
        role: i.role,
        created_by: i.createdBy,
        created_at: i.createdAt,
        expires_at: i.expiresAt,
        used_at: i.usedAt,
      })
      .execute();
  }
  async getDashboardInvitation(tokenHash: string, now: number) {
    const r = await this.db
      .selectFrom('dashboard_invitations')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return r ? toDashboardInvitation(r) : undefined;
  }
  async listDashboardInvitations(now: number) {
    const rows = await this.db
      .selectFrom('dashboard_invitations')
      .selectAll()
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .orderBy('created_at', 'desc')
      .limit(1000)
      .execute();
    return rows.map(toDashboardInvitation);
  }
  async deleteDashboardInvitation(id: string) {
    const r = await this.db.deleteFrom('dashboard_invitations').where('id', '=', id).executeTakeFirst();
    return r.numDeletedRows === 1n;
  }
  async acceptDashboardInvitation(tokenHash: string, user: DashboardUser, now: number) {
    return inTransaction(this.db, async (db): Promise<'ok' | 'invalid' | 'taken'> => {
      const used = await db
        .updateTable('dashboard_invitations')
        .set({ used_at: now })
        .where('token_hash', '=', tokenHash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (used.numUpdatedRows !== 1n) return 'invalid';
      const taken = await db
        .selectFrom('dashboard_users')
        .select('id')
        .where('username', '=', user.username)
        .executeTakeFirst();
      if (taken) {
        // Not used after all: undone with the rest of the transaction's writes.
        await db
          .updateTable('dashboard_invitations')
          .set({ used_at: null })
          .where('token_hash', '=', tokenHash)
          .execute();
        return 'taken';
      }
      await db
        .insertInto('dashboard_users')
        .values({
          id: user.id,
          username: user.username,
          password_hash: user.passwordHash,
          role: user.role,
          oidc_subject: user.oidcSubject,
          created_at: user.createdAt,
          updated_at: user.updatedAt,
        })
        .execute();
      return 'ok';
    });
  }
}
