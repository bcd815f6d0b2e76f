import { inTransaction } from '../backend.ts';
import { isUniqueViolation, SqlStoreBase } from './base.ts';
import { toMcpOAuthClient, toMcpOAuthGrant, toMcpOAuthSettings, toMcpServer, toMcpUrl } from '../rows.ts';
import type {
  McpOAuthClient,
  McpOAuthGrant,
  McpOAuthSettings,
  McpServerConfig,
  McpServerPatch,
  McpStore,
  McpUrl,
} from '../types.ts';

/** MCP servers and their URLs. */
export abstract class McpGroup extends SqlStoreBase implements McpStore {
  async createMcpServer(m: McpServerConfig) {
    const r = await this.db
      .insertInto('mcp_servers')
      .values({
        id: m.id,
        name: m.name,
        mode: m.mode,
        tools: JSON.stringify(m.tools),
        connections: JSON.stringify(m.connections),
        user_verify_url: m.userVerifyUrl,
        created_at: m.createdAt,
        updated_at: m.updatedAt,
      })
      .onConflict((oc) => oc.column('name').doNothing())
      .executeTakeFirst();
    return r.numInsertedOrUpdatedRows === 1n;
  }
  async getMcpServer(id: string) {
    const r = await this.db.selectFrom('mcp_servers').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toMcpServer(r) : undefined;
  }
  async getMcpServerByName(name: string) {
    const r = await this.db.selectFrom('mcp_servers').selectAll().where('name', '=', name).executeTakeFirst();
    return r ? toMcpServer(r) : undefined;
  }
  async listMcpServers(now: number) {
    const rows = await this.db
      .selectFrom('mcp_servers as s')
      .selectAll('s')
      .select((eb) =>
        eb
          .selectFrom('mcp_urls as u')
          .select(eb.fn.countAll().as('n'))
          .whereRef('u.server_id', '=', 's.id')
          .where('u.revoked_at', 'is', null)
          .where('u.expires_at', '>', now)
          .as('active_urls'),
      )
      .orderBy('s.created_at')
      .orderBy('s.id')
      .execute();
    return rows.map((r) => ({ ...toMcpServer(r), activeUrls: Number(r.active_urls) }));
  }
  async updateMcpServer(id: string, patch: McpServerPatch, at: number) {
    try {
      const r = await this.db
        .updateTable('mcp_servers')
        .set({
          name: patch.name,
          mode: patch.mode,
          tools: patch.tools === undefined ? undefined : JSON.stringify(patch.tools),
          connections: patch.connections === undefined ? undefined : JSON.stringify(patch.connections),
          user_verify_url: patch.userVerifyUrl,
          updated_at: at,
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return r ? toMcpServer(r) : undefined;
    } catch (e) {
      if (isUniqueViolation(e)) return 'name_taken' as const;
      throw e;
    }
  }
  async deleteMcpServer(id: string) {
    return inTransaction(this.db, async (db) => {
      await db.deleteFrom('mcp_urls').where('server_id', '=', id).execute();
      const r = await db.deleteFrom('mcp_servers').where('id', '=', id).executeTakeFirst();
      return r.numDeletedRows === 1n;
    });
  }
  async createMcpUrl(u: McpUrl) {
    await this.db
      .insertInto('mcp_urls')
      .values({
        id: u.id,
        server_id: u.serverId,
        identifier: u.identifier,
        token_hash: u.tokenHash,
        expires_at: u.expiresAt,
        revoked_at: u.revokedAt,
        created_at: u.createdAt,
        last_used_at: u.lastUsedAt,
      })
      .execute();
  }
  async listMcpUrls(serverId: string) {
    const rows = await this.db
      .selectFrom('mcp_urls')
      .selectAll()
      .where('server_id', '=', serverId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    return rows.map(toMcpUrl);
  }
  async findMcpUrl(tokenHash: string) {
    const r = await this.db
      .selectFrom('mcp_urls as u')
      .innerJoin('mcp_servers as s', 's.id', 'u.server_id')
      .selectAll('u')
      .select([
        's.name as s_name',
        's.mode as s_mode',
        's.tools as s_tools',
        's.connections as s_connections',
        's.user_verify_url as s_user_verify_url',
        's.created_at as s_created_at',
        's.updated_at as s_updated_at',
      ])
      .where('u.token_hash', '=', tokenHash)
      .executeTakeFirst();
    if (!r) return undefined;
    return {
      url: toMcpUrl(r),
      server: toMcpServer({
        id: r.server_id,
        name: r.s_name,
        mode: r.s_mode,
        tools: r.s_tools,
        connections: r.s_connections,
        user_verify_url: r.s_user_verify_url,
        created_at: r.s_created_at,
        updated_at: r.s_updated_at,
      }),
    };
  }
  async revokeMcpUrl(serverId: string, urlId: string, at: number) {
    const r = await this.db
      .updateTable('mcp_urls')
      .set({ revoked_at: at })
      .where('id', '=', urlId)
      .where('server_id', '=', serverId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async touchMcpUrl(id: string, at: number) {
    await this.db
      .updateTable('mcp_urls')
      .set({ last_used_at: at })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
      .execute();
  }
  // --- The OAuth-protected MCP endpoint (issue 39): settings, DCR clients, grants. ---
  async getMcpOAuthSettings(serverId: string) {
    const r = await this.db
      .selectFrom('mcp_oauth_settings')
      .selectAll()
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    return r ? toMcpOAuthSettings(r) : undefined;
  }
  async setMcpOAuthSettings(serverId: string, v: McpOAuthSettings | null) {
    await inTransaction(this.db, async (db) => {
      await db.deleteFrom('mcp_oauth_settings').where('server_id', '=', serverId).execute();
      if (v)
        await db
          .insertInto('mcp_oauth_settings')
          .values({
            server_id: serverId,
            oidc_issuer: v.oidcIssuer,
            oidc_client_id: v.oidcClientId,
            oidc_client_secret_sealed: v.oidcClientSecretSealed,
            identifier_claim: v.identifierClaim,
            updated_at: v.updatedAt,
          })
          .execute();
    });
  }
  async createMcpOAuthClient(c: McpOAuthClient) {
    await this.db
      .insertInto('mcp_oauth_clients')
      .values({ client_id: c.clientId, metadata: JSON.stringify(c.metadata), created_at: c.createdAt })
      .execute();
  }
  async getMcpOAuthClient(clientId: string) {
    const r = await this.db
      .selectFrom('mcp_oauth_clients')
      .selectAll()
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return r ? toMcpOAuthClient(r) : undefined;
  }
  async createMcpOAuthGrant(g: McpOAuthGrant) {
    await this.db
      .insertInto('mcp_oauth_grants')
      .values({
        id: g.id,
        kind: g.kind,
        token_hash: g.tokenHash,
        family: g.family,
        server_id: g.serverId,
        client_id: g.clientId,
        identifier: g.identifier,
        data: JSON.stringify(g.data),
        expires_at: g.expiresAt,
        used_at: g.usedAt,
        revoked_at: g.revokedAt,
        created_at: g.createdAt,
      })
      .execute();
  }
  async findMcpOAuthGrant(tokenHash: string) {
    const r = await this.db
      .selectFrom('mcp_oauth_grants')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    return r ? toMcpOAuthGrant(r) : undefined;
  }
  async useMcpOAuthGrant(id: string, at: number) {
    const r = await this.db
      .updateTable('mcp_oauth_grants')
      .set({ used_at: at })
      .where('id', '=', id)
      .where('used_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return r.numUpdatedRows === 1n;
  }
  async updateMcpOAuthSession(id: string, identifier: string, data: Record<string, unknown>) {
    await this.db
      .updateTable('mcp_oauth_grants')
      .set({ identifier, data: JSON.stringify(data) })
      .where('id', '=', id)
      .where('kind', '=', 'session')
      .execute();
  }
  async revokeMcpOAuthFamily(family: string, at: number) {
    const r = await this.db
      .updateTable('mcp_oauth_grants')
      .set({ revoked_at: at })
      .where('family', '=', family)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
  async deleteExpiredMcpOAuthGrants(before: number, limit: number) {
    // A batch found by the expiry index, as the other sweeps do.
    const r = await this.db
      .deleteFrom('mcp_oauth_grants')
      .where('id', 'in', (eb) =>
        eb.selectFrom('mcp_oauth_grants').select('id').where('expires_at', '<', before).limit(limit),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
  // --- end of the OAuth-protected MCP endpoint's methods ---
}
