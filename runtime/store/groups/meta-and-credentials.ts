import { SqlStoreBase } from './base.ts';
import { toCredential } from '../rows.ts';
import type { ApiCredential, MetaAndCredentialStore, ThrottleState } from '../types.ts';

/** The meta key/value rows (keys, settings), the API credentials and the failed-attempt throttles. */
export abstract class MetaAndCredentialsGroup extends SqlStoreBase implements MetaAndCredentialStore {
  async getMeta(key: string) {
    const r = await this.db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst();
    return r?.value;
  }
  async initMeta(key: string, value: string) {
    await this.db
      .insertInto('meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    this.changed('meta', key);
    return (await this.getMeta(key))!;
  }
  async setMeta(key: string, value: string) {
    await this.db
      .insertInto('meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })))
      .execute();
    this.changed('meta', key);
  }

  async createApiCredential(c: ApiCredential) {
    await this.db
      .insertInto('api_credentials')
      .values({
        id: c.id,
        client_id: c.clientId,
        secret_hash: c.secretHash,
        name: c.name,
        created_at: c.createdAt,
        revoked_at: c.revokedAt,
        last_used_at: c.lastUsedAt,
        scopes: c.scopes === '*' ? '*' : c.scopes.join(' '),
        connection_names: c.connectionNames ? JSON.stringify(c.connectionNames) : null,
      })
      .execute();
    this.changed('api_credentials', c.id);
  }
  async getApiCredentialByClientId(clientId: string) {
    const [r] = (await this.backend.run(this.db, this.q.credentialByClientId.bind({ clientId }))).rows;
    return r ? toCredential(r) : undefined;
  }
  async getApiCredential(id: string) {
    const [r] = (await this.backend.run(this.db, this.q.credentialById.bind({ id }))).rows;
    return r ? toCredential(r) : undefined;
  }
  async listApiCredentials() {
    return (await this.db.selectFrom('api_credentials').selectAll().orderBy('created_at').orderBy('id').execute()).map(
      toCredential,
    );
  }
  async revokeApiCredential(id: string, at: number) {
    const r = await this.db
      .updateTable('api_credentials')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    this.changed('api_credentials', id);
    return r.numUpdatedRows === 1n;
  }
  async countApiCredentials() {
    const r = await this.db
      .selectFrom('api_credentials')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }
  async touchApiCredential(id: string, at: number) {
    await this.db.updateTable('api_credentials').set({ last_used_at: at }).where('id', '=', id).execute();
  }
  async getThrottle(key: string): Promise<ThrottleState | undefined> {
    const r = await this.db.selectFrom('throttles').selectAll().where('key', '=', key).executeTakeFirst();
    return r
      ? {
          count: Number(r.count),
          lastAt: Number(r.last_at),
          blockedUntil: Number(r.blocked_until),
          version: Number(r.version),
        }
      : undefined;
  }
  async compareAndSetThrottle(key: string, expectedVersion: number | undefined, next: ThrottleState | null) {
    if (expectedVersion === undefined) {
      if (next === null) return true;
      const r = await this.db
        .insertInto('throttles')
        .values({
          key,
          count: next.count,
          last_at: next.lastAt,
          blocked_until: next.blockedUntil,
          version: next.version,
        })
        .onConflict((oc) => oc.column('key').doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1;
    }
    if (next === null) {
      const r = await this.db
        .deleteFrom('throttles')
        .where('key', '=', key)
        .where('version', '=', expectedVersion)
        .executeTakeFirst();
      return r.numDeletedRows === 1n;
    }
    const r = await this.db
      .updateTable('throttles')
      .set({ count: next.count, last_at: next.lastAt, blocked_until: next.blockedUntil, version: next.version })
      .where('key', '=', key)
      .where('version', '=', expectedVersion)
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async deleteStaleThrottles(before: number) {
    await this.db.deleteFrom('throttles').where('last_at', '<', before).where('blocked_until', '<', before).execute();
  }
}
