/**
 * MCP server configurations and their per-end-user URLs (issue 10): which tools an MCP client sees, on which
 * connection each runs, and the URL tokens that reach them. A URL's token is 32 random bytes; the store keeps
 * only its SHA-256, looked up by that hash (a hash an attacker cannot steer byte by byte) and compared again in
 * constant time.
 */
import type { BoundedCache } from '../caches.ts';
import type { TokenClaims } from '../auth/service-auth.ts';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Operations } from '../../generated/api/types.ts';
import { MCP_URL_DEFAULT_TTL } from '../../core/api/endpoints.ts';
import { ServiceError } from '../../core/errors.ts';
import type { FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { connectors, getTool, tools } from '../connectors/catalog.ts';
import { newId, randomSecret } from '../ids.ts';
import type { Services } from '../services.ts';
import type { Connection, McpOAuthSettings, McpServerConfig, McpUrl } from '../store/types.ts';
import { identityProviderSettings, identityProviderView } from './oauth-oidc.ts';
import { suggest } from '../tools/validation.ts';

/** A tool an MCP server exposes, and the connection it runs on (undefined: none can be chosen, `problem` says why). */
export interface ExposedTool {
  tool: ToolDefinition;
  connectionName?: string;
  problem?: string;
}

/** What an MCP request runs as: one server configuration, for one end user. */
export interface McpScope {
  server: McpServerConfig;
  identifier: string;
  /** The claims of the service token that called (server-side agents); absent for an MCP URL. */
  access?: TokenClaims;
}

/** Why an MCP URL was refused: 404 unknown, 401 revoked or expired. */
export class McpUrlRefused extends Error {
  constructor(
    readonly status: 401 | 404,
    message: string,
  ) {
    super(message);
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

function invalid(what: string, details: FieldError[]): ServiceError {
  return new ServiceError(
    400,
    'invalid_input',
    `Invalid ${what}: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`,
    details,
  );
}

export function urlStatus(u: McpUrl, now = Date.now()): 'active' | 'revoked' | 'expired' {
  return u.revokedAt !== null ? 'revoked' : u.expiresAt <= now ? 'expired' : 'active';
}

export class McpServers {
  /** Last-use writes are kept to one a minute per URL (an LRU: one URL per end user and server). */
  private readonly touched: BoundedCache<string, number>;

  constructor(private readonly s: Services) {
    this.touched = s.caches.create('mcp_url_uses', { max: s.config.caches.mcpSessions });
  }

  /** The tools a configuration exposes now: its named tools, then every tool of its connections' connectors. */
  async exposedTools(server: McpServerConfig, all?: Connection[]): Promise<ExposedTool[]> {
    const list = all ?? (await this.s.store.listConnections());
    const byName = new Map(list.map((c) => [c.name, c]));
    const listed = server.connections.map((n) => byName.get(n)).filter((c): c is Connection => !!c);
    const forConnector = new Map(listed.map((c) => [c.connector, c.name]));
    const out = new Map<string, ExposedTool>();
    for (const name of server.tools) {
      const tool = getTool(name);
      if (!tool || out.has(name)) continue;
      const chosen = forConnector.get(tool.connector);
      if (chosen) {
        out.set(name, { tool, connectionName: chosen });
        continue;
      }
      const candidates = list.filter((c) => c.connector === tool.connector).map((c) => c.name);
      if (candidates.length === 1) out.set(name, { tool, connectionName: candidates[0] });
      else
        out.set(name, {
          tool,
          problem: candidates.length
            ? `The ${tool.connector} connector has several connections (${candidates.join(', ')}); list the one to use in the MCP server's connections.`
            : `No connection uses the ${tool.connector} connector yet; create one (POST /v1/connections) and list it in the MCP server's connections.`,
        });
    }
    for (const c of listed) {
      for (const name of connectors.get(c.connector)?.toolNames ?? []) {
        if (!out.has(name)) out.set(name, { tool: getTool(name)!, connectionName: c.name });
      }
    }
    return [...out.values()];
  }

  view(
    m: McpServerConfig,
    activeUrls: number,
    toolCount: number,
    idp?: McpOAuthSettings,
  ): Operations['getMcpServer']['response'] {
    return {
      id: m.id,
      name: m.name,
      mode: m.mode,
      tools: m.tools,
      connections: m.connections,
      tool_count: toolCount,
      active_urls: activeUrls,
      mcp_endpoint: `${this.s.config.publicUrl}/v1/mcp-servers/${m.id}/mcp`,
      // The OAuth-protected endpoint (runtime/mcp/oauth-server.ts), and the identity provider its users sign in at.
      oauth_url: `${this.s.config.publicUrl}/mcp/oauth/${m.id}`,
      oauth_identity_provider: identityProviderView(idp),
      user_verify_url: m.userVerifyUrl,
      created_at: iso(m.createdAt),
      updated_at: iso(m.updatedAt),
    };
  }

  async list(): Promise<Operations['listMcpServers']['response']> {
    const all = await this.s.store.listConnections();
    const servers = await this.s.store.listMcpServers(Date.now());
    const views = [];
    for (const m of servers)
      views.push(
        this.view(
          m,
          m.activeUrls,
          (await this.exposedTools(m, all)).length,
          await this.s.store.getMcpOAuthSettings(m.id),
        ),
      );
    return { mcp_servers: views };
  }

  async get(id: string): Promise<McpServerConfig> {
    const m = await this.s.store.getMcpServer(id);
    if (!m) throw new ServiceError(404, 'mcp_server_not_found', `No MCP server with id "${id}"`);
    return m;
  }

  /** The server's view, with its live URL count and tool count. */
  async describe(m: McpServerConfig): Promise<Operations['getMcpServer']['response']> {
    const now = Date.now();
    const active = (await this.s.store.listMcpUrls(m.id)).filter((u) => urlStatus(u, now) === 'active').length;
    return this.view(m, active, (await this.exposedTools(m)).length, await this.s.store.getMcpOAuthSettings(m.id));
  }

  /** Checks tool and connection names (close names suggested) and that each connector has one connection. */
  private async checkSelection(what: string, toolNames: string[], connectionNames: string[]): Promise<void> {
    const details: FieldError[] = [];
    const all = await this.s.store.listConnections();
    const byName = new Map(all.map((c) => [c.name, c]));
    const known = [...tools.keys()];
    toolNames.forEach((name, i) => {
      if (getTool(name)) return;
      const hint = suggest(name, known);
      details.push({ field: `tools[${i}]`, message: `is not a tool${hint ? ` (did you mean ${hint}?)` : ''}` });
    });
    const seen = new Map<string, number>();
    connectionNames.forEach((name, i) => {
      const c = byName.get(name);
      if (!c) {
        const hint = suggest(name, [...byName.keys()]);
        details.push({
          field: `connections[${i}]`,
          message: `is not a connection${hint ? ` (did you mean ${hint}?)` : ''}`,
        });
        return;
      }
      const first = seen.get(c.connector);
      if (first !== undefined && connectionNames[first] !== name) {
        details.push({
          field: `connections[${i}]`,
          message: `uses the ${c.connector} connector, as connections[${first}] does; an MCP server runs each connector's tools on one connection`,
        });
      }
      if (first === undefined) seen.set(c.connector, i);
    });
    if (!toolNames.length && !connectionNames.length) {
      details.push({ field: 'tools', message: 'must name at least one tool, or give a connection in connections' });
    }
    if (details.length) throw invalid(what, details);
  }

  async create(body: Operations['createMcpServer']['body']): Promise<McpServerConfig> {
    const toolNames = [...new Set(body.tools ?? [])];
    const connectionNames = [...new Set(body.connections ?? [])];
    await this.checkSelection('MCP server', toolNames, connectionNames);
    const userVerifyUrl = this.s.oauth.checkReturnUrl(body.user_verify_url ?? undefined, 'user_verify_url');
    const now = Date.now();
    const m: McpServerConfig = {
      id: newId('mcp'),
      name: body.name,
      mode: body.mode ?? 'tools',
      tools: toolNames,
      connections: connectionNames,
      userVerifyUrl,
      createdAt: now,
      updatedAt: now,
    };
    const idp = body.oauth_identity_provider
      ? identityProviderSettings(this.s, m.id, body.oauth_identity_provider, undefined)
      : null;
    if (!(await this.s.store.createMcpServer(m))) {
      throw new ServiceError(409, 'mcp_server_exists', `An MCP server named "${body.name}" exists`);
    }
    if (idp) await this.s.store.setMcpOAuthSettings(m.id, idp);
    return m;
  }

  async update(id: string, body: Operations['updateMcpServer']['body']): Promise<McpServerConfig> {
    const current = await this.get(id);
    const toolNames = body.tools == null ? current.tools : [...new Set(body.tools)];
    const connectionNames = body.connections == null ? current.connections : [...new Set(body.connections)];
    await this.checkSelection('MCP server update', toolNames, connectionNames);
    // Absent or null: unchanged; an empty string: removed; a URL: checked like a link's user_verify_url.
    const userVerifyUrl =
      body.user_verify_url == null
        ? undefined
        : this.s.oauth.checkReturnUrl(body.user_verify_url || undefined, 'user_verify_url');
    // Absent: unchanged; null: the service's identity provider again; an object: this server's own.
    const idp =
      body.oauth_identity_provider === undefined
        ? undefined
        : identityProviderSettings(
            this.s,
            id,
            body.oauth_identity_provider,
            await this.s.store.getMcpOAuthSettings(id),
          );
    const r = await this.s.store.updateMcpServer(
      id,
      {
        name: body.name ?? undefined,
        mode: body.mode ?? undefined,
        tools: body.tools == null ? undefined : toolNames,
        connections: body.connections == null ? undefined : connectionNames,
        userVerifyUrl,
      },
      Date.now(),
    );
    if (r === 'name_taken')
      throw new ServiceError(409, 'mcp_server_exists', `An MCP server named "${body.name}" exists`);
    if (!r) throw new ServiceError(404, 'mcp_server_not_found', `No MCP server with id "${id}"`);
    if (idp !== undefined) await this.s.store.setMcpOAuthSettings(id, idp);
    return r;
  }

  async delete(id: string): Promise<void> {
    if (!(await this.s.store.deleteMcpServer(id)))
      throw new ServiceError(404, 'mcp_server_not_found', `No MCP server with id "${id}"`);
  }

  /** A new URL for one end user: the token is in the answer only. */
  async createUrl(
    id: string,
    identifier: string,
    expiresIn = MCP_URL_DEFAULT_TTL,
  ): Promise<Operations['createMcpUrl']['response']> {
    await this.get(id);
    const token = randomSecret(32);
    const now = Date.now();
    const url: McpUrl = {
      id: newId('mcpurl'),
      serverId: id,
      identifier,
      tokenHash: sha256(token),
      expiresAt: now + expiresIn * 1000,
      revokedAt: null,
      createdAt: now,
      lastUsedAt: null,
    };
    await this.s.store.createMcpUrl(url);
    return {
      id: url.id,
      url: `${this.s.config.publicUrl}/mcp/${token}`,
      identifier,
      expires_at: iso(url.expiresAt),
    };
  }

  async listUrls(id: string): Promise<Operations['listMcpUrls']['response']> {
    await this.get(id);
    const now = Date.now();
    return {
      urls: (await this.s.store.listMcpUrls(id)).map((u) => ({
        id: u.id,
        identifier: u.identifier,
        status: urlStatus(u, now),
        created_at: iso(u.createdAt),
        expires_at: iso(u.expiresAt),
        revoked_at: u.revokedAt === null ? null : iso(u.revokedAt),
        last_used_at: u.lastUsedAt === null ? null : iso(u.lastUsedAt),
      })),
    };
  }

  async revokeUrl(id: string, urlId: string): Promise<void> {
    if (!(await this.s.store.revokeMcpUrl(id, urlId, Date.now()))) {
      throw new ServiceError(
        404,
        'mcp_url_not_found',
        `MCP server "${id}" has no URL "${urlId}" that is not revoked yet`,
      );
    }
  }

  /** The server and identifier a URL token opens; throws McpUrlRefused for an unknown, revoked or expired one. */
  async scopeOfToken(token: string): Promise<McpScope> {
    const hash = sha256(token);
    const found = /^[A-Za-z0-9_-]{20,100}$/.test(token) ? await this.s.store.findMcpUrl(hash) : undefined;
    if (!found || !timingSafeEqual(Buffer.from(found.url.tokenHash, 'hex'), Buffer.from(hash, 'hex'))) {
      throw new McpUrlRefused(404, 'No such MCP URL; ask for a new one');
    }
    const now = Date.now();
    const status = urlStatus(found.url, now);
    if (status === 'revoked') throw new McpUrlRefused(401, 'This MCP URL was revoked; ask for a new one');
    if (status === 'expired') {
      throw new McpUrlRefused(401, `This MCP URL expired at ${iso(found.url.expiresAt)}; ask for a new one`);
    }
    const last = this.touched.get(found.url.id) ?? found.url.lastUsedAt ?? 0;
    if (now - last >= 60_000) {
      this.touched.set(found.url.id, now);
      void this.s.store.touchMcpUrl(found.url.id, now).catch(() => {});
    }
    return { server: found.server, identifier: found.url.identifier };
  }
}
