import { inTransaction } from '../backend.ts';
import { SqlStoreBase } from './base.ts';
import { toAccount, toConnection, toConnectionDeletion } from '../rows.ts';
import type { AccountKey, Connection, ConnectionDeletion, ConnectionPatch, ConnectionStore } from '../types.ts';

/** Connections, and their deletion in the background. */
export abstract class ConnectionsGroup extends SqlStoreBase implements ConnectionStore {
  async createConnection(c: Connection) {
    await this.db
      .insertInto('connections')
      .values({
        id: c.id,
        name: c.name,
        connector: c.connector,
        auth_kind: c.authKind,
        auth_kinds: c.authKinds ? JSON.stringify(c.authKinds) : null,
        client_id: c.clientId,
        client_secret_sealed: c.clientSecretSealed,
        scopes: JSON.stringify(c.scopes),
        api_base_url: c.apiBaseUrl,
        api_hosts: JSON.stringify(c.apiHosts),
        oauth: JSON.stringify(c.oauth),
        registration_sealed: c.registrationSealed,
        created_at: c.createdAt,
        updated_at: c.updatedAt,
      })
      .execute();
    this.changed('connections', c.id);
  }
  async getConnectionByName(name: string) {
    const [r] = (await this.backend.run(this.db, this.q.connectionByName.bind({ name }))).rows;
    return r ? toConnection(r) : undefined;
  }
  async getConnection(id: string) {
    const [r] = (await this.backend.run(this.db, this.q.connectionById.bind({ id }))).rows;
    return r ? toConnection(r) : undefined;
  }
  async listConnections() {
    const rows = await this.db
      .selectFrom('connections')
      .selectAll()
      .where('deleting_since', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toConnection);
  }
  async listConnectionsWithCounts() {
    const list = await this.listConnections();
    const counts = await this.accountCounts();
    return list.map((c) => ({ ...c, accountCount: counts.get(c.id) ?? 0 }));
  }
  async updateConnection(id: string, patch: ConnectionPatch, at: number) {
    const json = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));
    const r = await this.db
      .updateTable('connections')
      .set({
        client_id: patch.clientId,
        client_secret_sealed: patch.clientSecretSealed,
        scopes: json(patch.scopes),
        api_base_url: patch.apiBaseUrl,
        api_hosts: json(patch.apiHosts),
        oauth: json(patch.oauth),
        registration_sealed: patch.registrationSealed,
        updated_at: at,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    this.changed('connections', id);
    return r ? toConnection(r) : undefined;
  }
  /** Deletes the connection and its accounts at once (tests and tools; the service deletes in the background). */
  async deleteConnection(id: string) {
    const removed = await inTransaction(this.db, async (db) => {
      let lock = db.selectFrom('connections').select('id').where('id', '=', id);
      if (this.kind === 'postgres') lock = lock.forUpdate();
      if (!(await lock.executeTakeFirst())) return undefined;
      const r = await db.deleteFrom('connected_accounts').where('connection_id', '=', id).executeTakeFirst();
      await db.deleteFrom('connections').where('id', '=', id).execute();
      return Number(r.numDeletedRows);
    });
    this.changed('connections', id);
    this.changed('connected_accounts', '*');
    return removed;
  }
  async startConnectionDeletion(d: Pick<ConnectionDeletion, 'id' | 'connectionId' | 'requestedAt'>) {
    const started = await inTransaction(this.db, async (db) => {
      // The row locked first (PostgreSQL): two deletions of one connection cannot both start.
      let lock = db
        .selectFrom('connections')
        .select(['id', 'name', 'connector'])
        .where('id', '=', d.connectionId)
        .where('deleting_since', 'is', null);
      if (this.kind === 'postgres') lock = lock.forUpdate();
      const c = await lock.executeTakeFirst();
      if (!c) return undefined;
      // The name is released at once for a new connection: `~` is in no name a client can give.
      await db
        .updateTable('connections')
        .set({ deleting_since: d.requestedAt, name: `~deleting~${c.id}` })
        .where('id', '=', c.id)
        .execute();
      const row = {
        id: d.id,
        connection_id: c.id,
        connection_name: c.name,
        connector: c.connector,
        status: 'running',
        accounts_deleted: 0,
        requested_at: d.requestedAt,
        updated_at: d.requestedAt,
        finished_at: null,
        lease_owner: null,
        lease_until: null,
      };
      await db.insertInto('connection_deletions').values(row).execute();
      return toConnectionDeletion(row);
    });
    if (started) this.changed('connections', d.connectionId);
    return started;
  }
  async getConnectionDeletion(id: string) {
    const r = await this.db.selectFrom('connection_deletions').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toConnectionDeletion(r) : undefined;
  }
  async runningConnectionDeletions() {
    const rows = await this.db
      .selectFrom('connection_deletions')
      .selectAll()
      .where('status', '=', 'running')
      .orderBy('requested_at')
      .execute();
    return rows.map(toConnectionDeletion);
  }
  async claimConnectionDeletion(
    id: string,
    owner: string,
    now: number,
    until: number,
    ownerGone: (owner: string | null) => boolean,
  ) {
    const current = await this.db
      .selectFrom('connection_deletions')
      .select(['lease_owner', 'lease_until', 'status'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!current || current.status !== 'running') return false;
    const free =
      current.lease_owner === null ||
      current.lease_owner === owner ||
      Number(current.lease_until) < now ||
      ownerGone(current.lease_owner);
    if (!free) return false;
    // Compare-and-set on the holder seen: of two claimers, one wins.
    const r = await this.db
      .updateTable('connection_deletions')
      .set({ lease_owner: owner, lease_until: until })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where((eb) =>
        current.lease_owner === null ? eb('lease_owner', 'is', null) : eb('lease_owner', '=', current.lease_owner),
      )
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async takeAccountsOfConnection(connectionId: string, limit: number, after?: AccountKey) {
    const rows = await this.db
      .deleteFrom('connected_accounts')
      .where('id', 'in', (eb) => {
        let q = eb
          .selectFrom('connected_accounts')
          .select('id')
          .where('connection_id', '=', connectionId)
          .orderBy('created_at')
          .orderBy('id')
          .limit(limit);
        if (after) q = q.where((w) => w(w.refTuple('created_at', 'id'), '>', w.tuple(after.createdAt, after.id)));
        return q;
      })
      .returningAll()
      .execute();
    for (const r of rows) this.changed('connected_accounts', r.id);
    return rows.map(toAccount);
  }
  async advanceConnectionDeletion(id: string, owner: string, deleted: number, at: number, until: number) {
    const r = await this.db
      .updateTable('connection_deletions')
      .set((eb) => ({ accounts_deleted: eb('accounts_deleted', '+', deleted), updated_at: at, lease_until: until }))
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async finishConnectionDeletion(id: string, owner: string, at: number) {
    const done = await inTransaction(this.db, async (db) => {
      const d = await db
        .selectFrom('connection_deletions')
        .select('connection_id')
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (!d) return false;
      // Locked before the check (PostgreSQL): an account inserted meanwhile waits on its foreign key, then fails.
      let lock = db.selectFrom('connections').select('id').where('id', '=', d.connection_id);
      if (this.kind === 'postgres') lock = lock.forUpdate();
      await lock.executeTakeFirst();
      const left = await db
        .selectFrom('connected_accounts')
        .select('id')
        .where('connection_id', '=', d.connection_id)
        .limit(1)
        .executeTakeFirst();
      if (left) return false;
      await db.deleteFrom('connections').where('id', '=', d.connection_id).execute();
      await db
        .updateTable('connection_deletions')
        .set({ status: 'done', finished_at: at, updated_at: at, lease_owner: null, lease_until: null })
        .where('id', '=', id)
        .execute();
      return d.connection_id;
    });
    if (done) this.changed('connections', done);
    return done !== false;
  }
}
