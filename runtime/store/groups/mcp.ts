import { inTransaction } from '../backend.ts';
import { isUniqueViolation, SqlStoreBase } from './base.ts';
import { toMcpServer, toMcpUrl } from '../rows.ts';
import type { McpServerConfig, McpServerPatch, McpStore, McpUrl } from '../types.ts';

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
}
