import { inTransaction } from '../backend.ts';
import { SqlStoreBase } from './base.ts';
import { toLink, toState, toVerification } from '../rows.ts';
import type { AccountVerification, OAuthLink, OAuthLinkStore, OAuthState } from '../types.ts';

/** Authorization links, OAuth states and account verifications: the single-use rows of connecting an account. */
export abstract class OAuthLinksGroup extends SqlStoreBase implements OAuthLinkStore {
  async createOAuthLink(l: OAuthLink) {
    await inTransaction(this.db, async (tx) => {
      await tx
        .updateTable('oauth_links')
        .set({ used_at: l.openedAt ?? Date.now() })
        .where('account_id', '=', l.accountId)
        .where('opened_at', 'is not', null)
        .where('used_at', 'is', null)
        .execute();
      await tx
        .insertInto('oauth_links')
        .values({
          token_hash: l.tokenHash,
          connection_id: l.connectionId,
          account_id: l.accountId,
          redirect_url: l.redirectUrl,
          expires_at: l.expiresAt,
          user_verify_url: l.userVerifyUrl ?? null,
          opened_at: l.openedAt ?? null,
          used_at: l.usedAt ?? null,
          scopes: l.scopes ? JSON.stringify(l.scopes) : null,
          token_sealed: l.tokenSealed ?? null,
          identifier: l.identifier ?? null,
        })
        .execute();
    });
  }
  async findReusableOAuthLink(q: {
    accountId?: string;
    connectionId?: string;
    identifier?: string;
    scopes: string[] | null;
    redirectUrl: string | null;
    userVerifyUrl: string | null;
    minExpiresAt: number;
  }) {
    let query = this.db
      .selectFrom('oauth_links')
      .selectAll()
      .where((eb) =>
        q.accountId !== undefined
          ? eb('account_id', '=', q.accountId)
          : eb.and([eb('connection_id', '=', q.connectionId ?? ''), eb('identifier', '=', q.identifier ?? '')]),
      )
      .where('used_at', 'is', null)
      .where('token_sealed', 'is not', null)
      .where('expires_at', '>', q.minExpiresAt)
      .where('scopes', q.scopes ? '=' : 'is', q.scopes ? JSON.stringify(q.scopes) : null)
      .where('redirect_url', q.redirectUrl === null ? 'is' : '=', q.redirectUrl)
      .where('user_verify_url', q.userVerifyUrl === null ? 'is' : '=', q.userVerifyUrl);
    query = query.orderBy('expires_at', 'desc').limit(1);
    const r = await query.executeTakeFirst();
    return r ? toLink(r) : undefined;
  }
  async markOAuthLinkOpened(tokenHash: string, at: number) {
    await this.db
      .updateTable('oauth_links')
      .set({ opened_at: at })
      .where('token_hash', '=', tokenHash)
      .where('opened_at', 'is', null)
      .execute();
  }
  async consumeOAuthLink(tokenHash: string, now: number) {
    const r = await this.db
      .updateTable('oauth_links')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return r ? toLink(r) : undefined;
  }
  async getOAuthLink(tokenHash: string, now: number) {
    const r = await this.db
      .selectFrom('oauth_links')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return r ? toLink(r) : undefined;
  }
  async createOAuthState(s: OAuthState) {
    await this.db
      .insertInto('oauth_states')
      .values({
        state_hash: s.stateHash,
        connection_id: s.connectionId,
        account_id: s.accountId,
        verifier_sealed: s.verifierSealed,
        redirect_url: s.redirectUrl,
        expires_at: s.expiresAt,
        used_at: s.usedAt,
        link_hash: s.linkHash ?? null,
      })
      .execute();
  }
  async consumeOAuthState(stateHash: string, now: number) {
    const r = await this.db
      .updateTable('oauth_states')
      .set({ used_at: now })
      .where('state_hash', '=', stateHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return r ? toState(r) : undefined;
  }
  async deleteExpiredOAuth(now: number, limit: number) {
    let deleted = 0;
    const expired = [
      ['oauth_states', 'state_hash', now - 86_400_000],
      ['oauth_links', 'token_hash', now],
      ['account_verifications', 'request_hash', now],
    ] as const;
    for (const [table, key, before] of expired) {
      // A batch found by the expiry index, so that a sweep never deletes an unbounded number of rows in one go.
      const r = await this.db
        .deleteFrom(table)
        .where(key, 'in', (eb) => eb.selectFrom(table).select(key).where('expires_at', '<', before).limit(limit))
        .executeTakeFirst();
      deleted += Number(r.numDeletedRows);
    }
    return deleted;
  }

  async createAccountVerification(v: AccountVerification) {
    await this.db
      .insertInto('account_verifications')
      .values({
        request_hash: v.requestHash,
        account_id: v.accountId,
        expires_at: v.expiresAt,
        used_at: v.usedAt,
        secrets_sealed: v.secretsSealed ?? null,
        token_expires_at: v.tokenExpiresAt ?? null,
        fields: v.fields ? JSON.stringify(v.fields) : null,
      })
      .execute();
  }
  async getAccountVerification(requestHash: string, now: number) {
    const r = await this.db
      .selectFrom('account_verifications')
      .selectAll()
      .where('request_hash', '=', requestHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return r ? toVerification(r) : undefined;
  }
  async consumeAccountVerification(requestHash: string, now: number) {
    const r = await this.db
      .updateTable('account_verifications')
      .set({ used_at: now })
      .where('request_hash', '=', requestHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return r ? toVerification(r) : undefined;
  }

  async listExpiredVerificationWaits(since: number, now: number, limit: number) {
    const rows = await this.db
      .selectFrom('connected_accounts as a')
      .select('a.id')
      .where('a.verification_pending_since', 'is not', null)
      .where('a.verification_pending_since', '<', since)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('account_verifications as v')
              .select('v.request_hash')
              .whereRef('v.account_id', '=', 'a.id')
              .where('v.used_at', 'is', null)
              .where('v.expires_at', '>', now),
          ),
        ),
      )
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }
}
