import { agentDescription } from '../../core/agent-description.ts';
import { clientAddress } from './client-address.ts';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
/**
 * The route table: a handler for each endpoint of core/api/endpoints.ts, which declares its method, path,
 * schemas and auth. runtime/api/router.ts matches, authenticates, parses and validates before a handler runs.
 */
import { toolCount } from '../../generated/registry.ts';
import type { Services } from '../services.ts';
import { ConnectionAdmin } from '../connection-admin.ts';
import { authFor, connectors, getTool, isMcpAuth, tools } from '../connectors/catalog.ts';
import { clientMetadataDocument } from '../oauth/mcp-auth.ts';
import { scopesForTools } from '../connect/scopes.ts';
import { showConnectPage, submitConnectPage, takesKeys } from '../connect/page.ts';
import { checkConnection, createApiCredential, grantable, type TokenClaims } from '../auth/service-auth.ts';
import type { AuditContext, AuditEntry } from '../audit/log.ts';
import type { ApiRequest } from './router.ts';
import type { AuditEvent, Connection } from '../store/types.ts';
import type { ALL_SCOPES, Scope } from '../../core/api/scopes.ts';
import { ServiceError } from '../../core/errors.ts';
import { encodeCursor, InvalidCursor } from '../store/cursor.ts';
import type { ConnectorDefinition, ToolDefinition } from '../../core/tool-types.ts';
import type { RouteTable } from './router.ts';
import { executeTool } from './execute.ts';
import { listTools } from './agent-tools.ts';
import { unknownToolError } from '../tools/validation.ts';
import { McpServers } from '../mcp/servers.ts';
import { proxyIdentifier } from '../proxy/proxy.ts';
import { identifier as identifierSchema } from '../../core/api/schemas.ts';
import { redirect, resultPage, sendHtml, sendJson } from './respond.ts';
import { metricsText, metricsTokenMatches } from '../metrics.ts';
import { deliveryView, webhookView } from '../webhooks/service.ts';
import { triggers as triggerRegistry } from '../../generated/registry.ts';

function toolView(t: ToolDefinition, connector: ConnectorDefinition) {
  return {
    name: t.name,
    connector: t.connector,
    title: t.title,
    description: agentDescription(t),
    read_only: t.readOnly,
    input_schema: t.inputSchema,
    output_schema: t.outputSchema,
    ...(t.versionFields && connector.versions
      ? {
          versions: {
            schema: connector.versions.schema,
            tool: connector.versions.tool,
          },
        }
      : {}),
    ...(t.notes ? { provider_notes: t.notes } : {}),
  };
}

function connectorView(c: ConnectorDefinition, withTools: boolean) {
  return {
    name: c.name,
    title: c.title,
    description: c.description,
    provider: c.provider,
    docs_url: c.docsUrl ?? null,
    auth: c.auth.map((a) => {
      if (a.kind === 'oauth2') {
        return {
          kind: a.kind,
          default_scopes: a.scopes.default,
          available_scopes: (a.scopes.available ?? []).map((x) => ({
            name: x.name,
            ...(x.description !== undefined ? { description: x.description } : {}),
          })),
          pkce: a.pkce !== false,
        };
      }
      if (a.kind === 'oauth2_mcp') return { kind: a.kind, resource: a.resource, dynamic_client_registration: true };
      return {
        kind: a.kind,
        fields: a.fields.map((f) => ({
          name: f.name,
          title: f.title,
          description: f.description ?? null,
          secret: !!f.secret,
          required: f.required !== false,
          ...(f.host_allowlist ? { host_allowlist: f.host_allowlist } : {}),
        })),
      };
    }),
    api_base_url: c.api.base_url,
    tool_count: c.toolNames.length,
    ...(withTools ? { tools: [...c.toolNames] } : {}),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();
/** A credential's scopes as the API shows them: `["*"]` for every scope. */
const scopesView = (scopes: readonly string[] | '*') =>
  (scopes === '*' ? ['*'] : [...scopes]) as Array<Scope | typeof ALL_SCOPES>;

/** The generated OpenAPI document, served as the generator wrote it (read once, on first request). */
const OPENAPI_FILE = fileURLToPath(new URL('../../generated/docs/openapi.json', import.meta.url));
let openApiText: string | undefined;

/** An audit entry as the API shows it. */
export const auditView = (e: AuditEvent) => ({
  seq: e.seq,
  id: e.id,
  at: iso(e.at),
  actor_type: e.actorType,
  actor_id: e.actorId,
  action: e.action,
  target_type: e.targetType,
  target_id: e.targetId,
  source_address: e.sourceAddress,
  request_id: e.requestId,
  changes: e.changes,
  prev_hash: e.prevHash,
  hash: e.hash,
});

/** The filters of the audit routes, their times read as ISO 8601 (a bad one is a 400 naming it). */
function auditFilter(q: { actor?: string; action?: string; target?: string; from?: string; to?: string }) {
  const time = (field: 'from' | 'to') => {
    const v = q[field];
    if (v === undefined || v === '') return undefined;
    const t = Date.parse(v);
    if (Number.isNaN(t))
      throw new ServiceError(400, 'invalid_input', `${field} is not a time`, [
        { field, message: 'must be an ISO 8601 time, e.g. 2026-01-31T12:00:00Z' },
      ]);
    return t;
  };
  return {
    actorId: q.actor || undefined,
    action: q.action || undefined,
    targetId: q.target || undefined,
    from: time('from'),
    to: time('to'),
  };
}

/** Secret fields of a connection: the audit log records that they were set or changed, never their values. */
const CONNECTION_SECRETS = new Set(['client_secret']);

/**
 * What a connection create or update changes, for the audit log: each field given, with the value it had before
 * (an update) and the one it has now; a secret only as `set`, `changed` or `removed`.
 */
export function connectionChanges(body: Record<string, unknown>, before?: Connection): Record<string, unknown> {
  const was: Record<string, unknown> = before
    ? {
        client_id: before.clientId,
        scopes: before.scopes,
        api_base_url: before.apiBaseUrl,
        api_hosts: before.apiHosts,
        oauth: before.oauth,
        client_secret: before.clientSecretSealed !== null,
      }
    : {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (v === undefined) continue;
    if (CONNECTION_SECRETS.has(k)) out[k] = before ? (v ? (was[k] ? 'changed' : 'set') : 'removed') : 'set';
    else out[k] = before && k in was ? { from: was[k] ?? null, to: v } : v;
  }
  return out;
}

/** `load()` called once, on the first call; its promise, rejected too, kept for every later one. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
}

/** The handler of every endpoint of the API. */
export function routeTable(s: Services): RouteTable {
  const m = new ConnectionAdmin(s);
  // Loaded on first use, not at start: Scalekit's REST API (protobuf and the AgentKit descriptors), the MCP
  // endpoint (the MCP SDK, zod) and tool search (its index). Each import() is a chunk of its own in dist/.
  const sk = once(async () => {
    const [rest, calls] = await Promise.all([import('../scalekit/rest.ts'), import('../scalekit/calls.ts')]);
    return { rest: rest.scalekitRest(s), callerAccess: calls.callerAccess };
  });
  /** A Scalekit REST call, run with the caller's claims (a credential restricted to connections stays within them). */
  const scalekit = async <T>(
    req: { access?: TokenClaims },
    fn: (k: Awaited<ReturnType<typeof sk>>['rest']) => Promise<T>,
  ): Promise<T> => {
    const k = await sk();
    return k.callerAccess.run(
      {
        access: req.access,
        sourceAddress: clientAddress(s, req as ApiRequest),
        requestId: (req as ApiRequest).requestId,
      },
      () => fn(k.rest),
    );
  };
  const mcpServers = new McpServers(s);
  const mcpModule = once(() => import('../mcp/endpoint.ts'));
  const mcpEndpoint = once(async () => new (await mcpModule()).McpEndpoint(s, mcpServers));
  const methodNotAllowed = async (res: ServerResponse) => (await mcpModule()).methodNotAllowed(res);
  const mcpOAuth = once(async () => new (await import('../mcp/oauth-server.ts')).McpOAuth(s, mcpServers));
  /** An MCP authorization server endpoint's answer: its JSON, or an RFC 6749 error (never cached). */
  const oauthAnswer = async (
    res: ServerResponse,
    run: () => Promise<{ status: number; body?: unknown }>,
  ): Promise<void> => {
    const { OAuthProblem } = await import('../mcp/oauth-clients.ts');
    res.setHeader('cache-control', 'no-store');
    try {
      const { status, body } = await run();
      if (body === undefined) {
        res.writeHead(status, { 'content-length': 0 });
        res.end();
      } else sendJson(res, status, body);
    } catch (e) {
      if (!(e instanceof OAuthProblem)) throw e;
      sendJson(res, e.status, { error: e.error, error_description: e.message });
    }
  };
  const search = once(() => import('../tools/search.ts'));
  /** Who acts through this request, for the audit log: the credential of its token, its address and request id. */
  const actor = (req: ApiRequest): AuditContext => ({
    actorType: 'credential',
    actorId: req.credentialId ?? 'unknown',
    sourceAddress: clientAddress(s, req),
    requestId: req.requestId ?? null,
  });
  const audit = (req: ApiRequest, entry: AuditEntry) => s.audit.record(actor(req), entry);
  /** An account and its connection, which the caller's credential must reach; 404 when either is gone. */
  const accountOf = async (req: object, id: string) => {
    const account = await s.store.getAccount(id);
    // An account whose connection is being deleted is gone already (its row goes with a later batch).
    const connection = account && (await s.accounts.connectionById(account.connectionId));
    if (!account || !connection)
      throw new ServiceError(404, 'account_not_found', `No connected account with id "${id}"`);
    checkConnection(req, connection.name);
    return { account, connection };
  };
  return {
    index: ({ req, res }) => {
      const base = s.config.publicUrl;
      if (/\btext\/html\b/.test(req.headers.accept ?? '')) return redirect(res, `${base}/dashboard`);
      return {
        body: {
          service: 'agent-connector-service',
          links: {
            health: `${base}/health`,
            ready: `${base}/ready`,
            openapi: `${base}/openapi.json`,
            docs: `${base}/dashboard/tools`,
            dashboard: `${base}/dashboard`,
          },
        },
      };
    },
    openapi: ({ res }) => {
      const text = (openApiText ??= readFileSync(OPENAPI_FILE, 'utf8'));
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    },
    health: () => ({ body: { status: 'ok', store: s.store.kind, tools: toolCount } }),
    ready: async ({ res }) => {
      res.setHeader('cache-control', 'no-store');
      if (s.lifecycle.draining) return { status: 503, body: { status: 'draining' } };
      // Migrations ran before the services existed; what can change since is whether the store answers.
      const reachable = await s.store.getMeta('service_token_key').then(
        () => true,
        () => false,
      );
      return reachable ? { body: { status: 'ready' } } : { status: 503, body: { status: 'store_unavailable' } };
    },

    metrics: async ({ req, res }) => {
      if (
        s.config.metricsToken !== undefined &&
        !metricsTokenMatches(req.headers.authorization, s.config.metricsToken)
      ) {
        res.setHeader('www-authenticate', 'Bearer realm="metrics"');
        throw new ServiceError(401, 'unauthorized', 'Send Authorization: Bearer <METRICS_TOKEN>');
      }
      const { text, contentType } = await metricsText(s.metrics);
      res.writeHead(200, {
        'content-type': contentType,
        'cache-control': 'no-store',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    },

    issueToken: async ({ req, res, body }) => {
      res.setHeader('cache-control', 'no-store');
      // RFC 6749 §5.2 errors, not the service's own shape: OAuth client libraries read these.
      const refuse = (status: number, error: string, description: string, headers: Record<string, string> = {}) =>
        sendJson(res, status, { error, error_description: description }, headers);
      let clientId = typeof body.client_id === 'string' ? body.client_id : '';
      let clientSecret = typeof body.client_secret === 'string' ? body.client_secret : '';
      const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
      if (basic) {
        const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
        const i = decoded.indexOf(':');
        if (i > 0) {
          try {
            clientId = decodeURIComponent(decoded.slice(0, i));
            clientSecret = decodeURIComponent(decoded.slice(i + 1));
          } catch {
            // RFC 6749 §2.3.1 form-encodes both parts; a malformed escape is a bad request, not a server error.
            return refuse(400, 'invalid_request', 'The HTTP Basic credentials are not form-encoded correctly');
          }
        }
      }
      if ((body.grant_type ?? 'client_credentials') !== 'client_credentials') {
        return refuse(400, 'unsupported_grant_type', 'Only client_credentials is supported');
      }
      if (!clientId || !clientSecret) {
        return refuse(
          400,
          'invalid_request',
          'client_id and client_secret are required (form fields, JSON, or HTTP Basic)',
        );
      }
      try {
        const { token, expiresIn } = await s.tokens.exchange(clientId, clientSecret, clientAddress(s, req));
        return { body: { access_token: token, token_type: 'Bearer', expires_in: expiresIn } };
      } catch (e) {
        if (!(e instanceof ServiceError)) throw e;
        return refuse(e.status, e.code === 'too_many_attempts' ? 'slow_down' : e.code, e.message, e.headers);
      }
    },

    listConnectors: () => ({
      body: { connectors: [...connectors.values()].map((c) => connectorView(c, false)) },
    }),
    getConnector: ({ params }) => {
      const c = connectors.get(params.name);
      if (!c) throw new ServiceError(404, 'connector_not_found', `No connector named "${params.name}"`);
      return { body: connectorView(c, true) };
    },

    listTools: async ({ query }) => ({
      body: await listTools(s, query, (t) => toolView(t, connectors.get(t.connector)!)),
    }),
    searchTools: async ({ query }) => ({
      body: {
        tools: (await search()).searchTools(query.q, {
          limit: Math.min(query.limit ?? 5, tools.size),
          connector: query.connector,
        }),
      },
    }),
    getTool: ({ params }) => {
      const t = getTool(params.tool_name);
      if (!t) throw unknownToolError(params.tool_name, [...tools.keys()]);
      return { body: toolView(t, connectors.get(t.connector)!) };
    },
    executeTool: async ({ body, res }) => executeTool(s, body, res),

    listConnections: async ({ req }) => {
      const only = req.access?.connections;
      const list = (await s.store.listConnectionsWithCounts()).filter((c) => !only || only.has(c.name));
      return { body: { connections: list.map((c) => m.connectionView(c, c.accountCount)) } };
    },
    createConnection: async ({ req, body }) => {
      checkConnection(req, body.connection_name);
      const c = await m.createConnection(body);
      await audit(req, {
        action: 'connection.create',
        targetType: 'connection',
        targetId: c.name,
        changes: connectionChanges({ ...body }),
      });
      return { status: 201, body: m.connectionView(c, 0) };
    },
    getConnection: async ({ req, params }) => {
      checkConnection(req, params.connection_name);
      const c = await s.accounts.connectionByName(params.connection_name);
      return { body: m.connectionView(c, await s.store.countAccounts(c.id)) };
    },
    updateConnection: async ({ req, params, body }) => {
      checkConnection(req, params.connection_name);
      const before = await s.accounts.connectionByName(params.connection_name);
      const c = await m.updateConnection(params.connection_name, body);
      await audit(req, {
        action: 'connection.update',
        targetType: 'connection',
        targetId: c.name,
        changes: connectionChanges({ ...body }, before),
      });
      return { body: m.connectionView(c, await s.store.countAccounts(c.id)) };
    },
    deleteConnection: async ({ req, params }) => {
      checkConnection(req, params.connection_name);
      const d = await m.deleteConnection(params.connection_name);
      await audit(req, { action: 'connection.delete', targetType: 'connection', targetId: params.connection_name });
      return {
        status: d.status === 'done' ? 200 : 202,
        headers: { location: `/v1/connection-deletions/${d.id}` },
        body: m.deletionView(d),
      };
    },
    getConnectionDeletion: async ({ params }) => {
      const d = await s.deletions.get(params.id);
      if (!d) throw new ServiceError(404, 'deletion_not_found', `No connection deletion with id "${params.id}"`);
      return { body: m.deletionView(d) };
    },

    listConnectedAccounts: async ({ req, query, res }) => {
      // The server's own time for the page (its reads included), for a client or a bench to tell it from the wire's.
      const started = performance.now();
      const limit = query.limit ?? 100;
      if (query.connection_name) checkConnection(req, query.connection_name);
      const only = req.access?.connections;
      const connection = query.connection_name ? await s.accounts.connectionByName(query.connection_name) : undefined;
      let list;
      try {
        list = await s.store.listAccounts({
          connectionId: connection?.id,
          identifier: query.identifier,
          status: query.status || undefined,
          limit: limit + 1,
          after: query.cursor,
        });
      } catch (e) {
        if (e instanceof InvalidCursor)
          throw new ServiceError(400, 'invalid_input', 'cursor is invalid', [
            { field: 'cursor', message: 'is not a cursor from a previous page' },
          ]);
        throw e;
      }
      const page = list.slice(0, limit);
      const names = new Map<string, Connection>();
      for (const c of await s.store.listConnections()) names.set(c.id, c);
      res.setHeader('server-timing', `app;dur=${(performance.now() - started).toFixed(2)}`);
      return {
        body: {
          // The accounts of a connection being deleted are gone for callers already (its rows go in batches).
          connected_accounts: page.flatMap((a) => {
            const connection = names.get(a.connectionId);
            return connection && (!only || only.has(connection.name)) ? [m.accountView(a, connection)] : [];
          }),
          next_cursor: list.length > limit ? encodeCursor(page[page.length - 1]!) : null,
        },
      };
    },
    getOrCreateConnectedAccount: async ({ req, body }) => {
      checkConnection(req, body.connection_name);
      const { account, connection, created } = await m.getOrCreateAccount(body.connection_name, body.identifier);
      if (created)
        await audit(req, {
          action: 'account.create',
          targetType: 'connected_account',
          targetId: account.id,
          changes: { connection_name: connection.name, identifier: account.identifier },
        });
      return { status: created ? 201 : 200, body: { connected_account: m.accountView(account, connection), created } };
    },
    upsertConnectedAccount: async ({ req, body }) => {
      checkConnection(req, body.connection_name);
      const { account, connection } = await m.upsertAccount(
        body.connection_name,
        body.identifier,
        body.credentials,
        body.verify === true,
        body.auth_kind,
      );
      await audit(req, {
        action: 'account.upsert',
        targetType: 'connected_account',
        targetId: account.id,
        changes: {
          connection_name: connection.name,
          identifier: account.identifier,
          // Which credentials were stored, never their values.
          credentials: Object.fromEntries(Object.keys(body.credentials).map((k) => [k, 'set'])),
        },
      });
      return { body: { connected_account: m.accountView(account, connection) } };
    },
    createAuthorizationLink: async ({ req, body }) => {
      checkConnection(req, body.connection_name);
      const connection = await s.accounts.connectionByName(body.connection_name);
      const connector = connectors.get(connection.connector)!;
      const scopes = body.tools?.length
        ? scopesForTools(connector.name, authFor(connector, connection.authKind), body.tools)
        : null;
      const { link, expiresAt, accountId } = await s.oauth.createLink(
        connection,
        body.identifier,
        body.redirect_url ?? undefined,
        body.user_verify_url ?? undefined,
        { scopes },
      );
      return { body: { link, expires_at: iso(expiresAt), connected_account_id: accountId } };
    },
    verifyConnectedAccountUser: async ({ req, body }) => {
      const a = await s.oauth.verifyUser(body.auth_request_id, body.identifier);
      await audit(req, {
        action: 'authorization.verify',
        targetType: 'connected_account',
        targetId: a.id,
        changes: { identifier: a.identifier, status: a.status },
      });
      const c = (await s.accounts.connectionById(a.connectionId))!;
      return { body: { connected_account: m.accountView(a, c) } };
    },
    getConnectedAccount: async ({ req, params }) => {
      const { account: a, connection: c } = await accountOf(req, params.id);
      return { body: { connected_account: m.accountView(a, c) } };
    },
    disconnectConnectedAccount: async ({ req, params }) => {
      await accountOf(req, params.id);
      const a = await m.disconnectAccount(params.id);
      await audit(req, {
        action: 'account.disconnect',
        targetType: 'connected_account',
        targetId: a.id,
        changes: { credentials: 'removed' },
      });
      const c = (await s.accounts.connectionById(a.connectionId))!;
      return { body: { connected_account: m.accountView(a, c) } };
    },
    deleteConnectedAccount: async ({ req, params }) => {
      const { account, connection } = await accountOf(req, params.id);
      await m.deleteAccount(params.id);
      await audit(req, {
        action: 'account.delete',
        targetType: 'connected_account',
        targetId: params.id,
        changes: { connection_name: connection.name, identifier: account.identifier },
      });
      return { body: { deleted: true, id: params.id } };
    },

    listWebhooks: async () => ({
      body: { webhooks: (await s.store.listWebhookEndpoints()).map(webhookView) },
    }),
    createWebhook: async ({ req, body }) => {
      const { endpoint, secret } = await s.webhooks.create(body.url, body.events);
      await audit(req, {
        action: 'webhook.create',
        targetType: 'webhook',
        targetId: endpoint.id,
        changes: { url: endpoint.url, events: endpoint.events, secret: 'set' },
      });
      return { status: 201, body: { ...webhookView(endpoint), secret } };
    },
    getWebhook: async ({ params }) => ({ body: webhookView(await s.webhooks.get(params.id)) }),
    updateWebhook: async ({ req, params, body }) => {
      const before = await s.webhooks.get(params.id);
      const after = await s.webhooks.update(params.id, body);
      await audit(req, {
        action: 'webhook.update',
        targetType: 'webhook',
        targetId: params.id,
        changes: {
          ...(body.url != null ? { url: { from: before.url, to: after.url } } : {}),
          ...(body.events != null ? { events: { from: before.events, to: after.events } } : {}),
        },
      });
      return { body: webhookView(after) };
    },
    deleteWebhook: async ({ req, params }) => {
      await s.webhooks.delete(params.id);
      await audit(req, { action: 'webhook.delete', targetType: 'webhook', targetId: params.id });
      return { body: { deleted: true, id: params.id } };
    },
    rotateWebhookSecret: async ({ req, params }) => {
      const { endpoint, secret } = await s.webhooks.rotateSecret(params.id);
      await audit(req, {
        action: 'webhook.rotate_secret',
        targetType: 'webhook',
        targetId: params.id,
        changes: { secret: 'changed' },
      });
      return { body: { ...webhookView(endpoint), secret } };
    },
    listWebhookDeliveries: async ({ params, query }) => {
      const page = await s.webhooks.deliveries(params.id, query.limit ?? 20, query.cursor);
      return { body: { deliveries: page.deliveries.map(deliveryView), next_cursor: page.nextCursor } };
    },
    listTriggerTypes: ({ query }) => ({
      body: {
        triggers: [...triggerRegistry.values()]
          .filter((t) => query.connector === undefined || t.connector === query.connector)
          .map((t) => ({
            name: t.name,
            connector: t.connector,
            title: t.title,
            description: t.description,
            kind: t.kind,
            event_type: `trigger.${t.name}`,
            config_schema: t.configSchema,
            event_schema: t.eventSchema,
          })),
      },
    }),
    createTrigger: async ({ req, body }) => {
      const created = await s.triggers.create(body);
      await audit(req, {
        action: 'trigger.create',
        targetType: 'trigger',
        targetId: created.id,
        changes: {
          trigger: created.trigger,
          connection_name: body.connection_name,
          identifier: body.identifier,
          // The config's keys only: a trigger's config may hold values the audit log should not keep.
          config_keys: Object.keys(created.config).sort(),
          interval_seconds: Math.round(created.intervalMs / 1000),
        },
      });
      return { status: 201, body: await s.triggers.view(created) };
    },
    listTriggers: async ({ query }) => {
      const page = await s.triggers.list({ ...query, limit: query.limit ?? 50 });
      return {
        body: {
          triggers: await Promise.all(page.instances.map((t) => s.triggers.view(t))),
          next_cursor: page.nextCursor,
        },
      };
    },
    getTrigger: async ({ params }) => ({ body: await s.triggers.view(await s.triggers.get(params.id)) }),
    pauseTrigger: async ({ req, params }) => {
      const paused = await s.triggers.pause(params.id);
      await audit(req, { action: 'trigger.pause', targetType: 'trigger', targetId: params.id });
      return { body: await s.triggers.view(paused) };
    },
    resumeTrigger: async ({ req, params }) => {
      const resumed = await s.triggers.resume(params.id);
      await audit(req, { action: 'trigger.resume', targetType: 'trigger', targetId: params.id });
      return { body: await s.triggers.view(resumed) };
    },
    deleteTrigger: async ({ req, params }) => {
      const existing = await s.triggers.get(params.id);
      await s.triggers.delete(params.id);
      await audit(req, {
        action: 'trigger.delete',
        targetType: 'trigger',
        targetId: params.id,
        changes: { trigger: existing.trigger },
      });
      return { body: { deleted: true as const, id: params.id } };
    },
    redeliverWebhook: async ({ params }) => ({
      body: { delivery: deliveryView(await s.webhooks.redeliver(params.id, params.delivery_id)) },
    }),

    listApiCredentials: async () => {
      const list = await s.store.listApiCredentials();
      return {
        body: {
          api_credentials: list.map((c) => ({
            id: c.id,
            client_id: c.clientId,
            name: c.name,
            created_at: iso(c.createdAt),
            revoked_at: c.revokedAt ? iso(c.revokedAt) : null,
            last_used_at: c.lastUsedAt ? iso(c.lastUsedAt) : null,
            scopes: scopesView(c.scopes),
            connection_names: c.connectionNames ? [...c.connectionNames] : null,
          })),
        },
      };
    },
    createApiCredential: async ({ req, body }) => {
      const access = grantable(req.access, {
        scopes: body.scopes ?? null,
        connectionNames: body.connection_names ?? null,
      });
      const { credential, clientSecret } = await createApiCredential(
        s.store,
        body.name || 'API credential',
        undefined,
        access,
      );
      await audit(req, {
        action: 'credential.create',
        targetType: 'api_credential',
        targetId: credential.id,
        changes: {
          name: credential.name,
          client_id: credential.clientId,
          scopes: scopesView(credential.scopes),
          connection_names: credential.connectionNames,
          client_secret: 'set',
        },
      });
      return {
        status: 201,
        body: {
          id: credential.id,
          client_id: credential.clientId,
          client_secret: clientSecret,
          name: credential.name,
          scopes: scopesView(credential.scopes),
          connection_names: credential.connectionNames ? [...credential.connectionNames] : null,
        },
      };
    },
    revokeApiCredential: async ({ req, params }) => {
      const ok = await s.store.revokeApiCredential(params.id, Date.now());
      if (!ok) throw new ServiceError(404, 'not_found', `No active API credential with id "${params.id}"`);
      s.tokens.forgetCredential(params.id);
      await audit(req, { action: 'credential.revoke', targetType: 'api_credential', targetId: params.id });
      return { body: { revoked: true, id: params.id } };
    },

    scalekitListConnectedAccounts: async ({ req, query }) => scalekit(req, (k) => k.listConnectedAccounts(query)),
    scalekitCreateConnectedAccount: async ({ req, body }) => scalekit(req, (k) => k.createConnectedAccount(body)),
    scalekitUpdateConnectedAccount: async ({ req, body }) => scalekit(req, (k) => k.updateConnectedAccount(body)),
    scalekitDeleteConnectedAccount: async ({ req, body }) => scalekit(req, (k) => k.deleteConnectedAccount(body)),
    scalekitMagicLink: async ({ req, body }) => scalekit(req, (k) => k.magicLink(body)),
    scalekitVerifyConnectedAccountUser: async ({ req, body }) => scalekit(req, (k) => k.verify(body)),
    scalekitGetConnectedAccountAuth: async ({ req, query }) => scalekit(req, (k) => k.getConnectedAccountAuth(query)),
    scalekitExecuteTool: async ({ req, body }) => scalekit(req, (k) => k.executeTool(body)),
    scalekitListTools: async ({ req, query }) => scalekit(req, (k) => k.listTools(query)),
    scalekitListAppConnections: async ({ req, query }) => scalekit(req, (k) => k.listAppConnections(query)),
    listAuditEvents: async ({ query }) => {
      const limit = query.limit ?? 100;
      let cursor: number | undefined;
      if (query.cursor !== undefined) {
        cursor = Number(query.cursor);
        if (!/^\d+$/.test(query.cursor) || !Number.isSafeInteger(cursor))
          throw new ServiceError(400, 'invalid_input', 'cursor is invalid', [
            { field: 'cursor', message: 'is not a cursor from a previous page' },
          ]);
      }
      const list = await s.store.listAuditEvents({ ...auditFilter(query), order: 'desc', cursor, limit: limit + 1 });
      const page = list.slice(0, limit);
      return {
        body: {
          audit_events: page.map(auditView),
          next_cursor: list.length > limit ? String(page[page.length - 1]!.seq) : null,
        },
      };
    },
    exportAuditEvents: async ({ query, res }) => {
      const filter = auditFilter(query);
      res.writeHead(200, {
        'content-type': 'application/x-ndjson; charset=utf-8',
        'content-disposition': 'attachment; filename="audit-events.jsonl"',
        'cache-control': 'no-store',
      });
      // A page at a time, waiting for the client to take each: the whole log is never in memory.
      let cursor: number | undefined;
      for (;;) {
        const page = await s.store.listAuditEvents({ ...filter, order: 'asc', cursor, limit: 500 });
        if (!page.length) break;
        const text = page.map((e) => JSON.stringify(auditView(e))).join('\n') + '\n';
        if (!res.write(text)) await new Promise((resolve) => res.once('drain', resolve));
        if (res.destroyed || page.length < 500) break;
        cursor = page[page.length - 1]!.seq;
      }
      res.end();
    },
    listMcpServers: async () => ({ body: await mcpServers.list() }),
    createMcpServer: async ({ req, body }) => {
      const created = await mcpServers.create(body);
      await audit(req, {
        action: 'mcp_server.create',
        targetType: 'mcp_server',
        targetId: created.id,
        changes: { ...body },
      });
      return { status: 201, body: await mcpServers.describe(created) };
    },
    getMcpServer: async ({ params }) => ({ body: await mcpServers.describe(await mcpServers.get(params.id)) }),
    updateMcpServer: async ({ req, params, body }) => {
      const updated = await mcpServers.update(params.id, body);
      await audit(req, {
        action: 'mcp_server.update',
        targetType: 'mcp_server',
        targetId: params.id,
        changes: { ...body },
      });
      return { body: await mcpServers.describe(updated) };
    },
    deleteMcpServer: async ({ req, params }) => {
      await mcpServers.delete(params.id);
      await audit(req, { action: 'mcp_server.delete', targetType: 'mcp_server', targetId: params.id });
      return { body: { deleted: true, id: params.id } };
    },
    createMcpUrl: async ({ req, params, body }) => {
      const url = await mcpServers.createUrl(params.id, body.identifier, body.expires_in ?? undefined);
      await audit(req, {
        action: 'mcp_url.create',
        targetType: 'mcp_server',
        targetId: params.id,
        // The URL carries its token: only that one was made.
        changes: { url_id: url.id, identifier: url.identifier, expires_at: url.expires_at, url: 'set' },
      });
      return { status: 201, body: url };
    },
    listMcpUrls: async ({ params }) => ({ body: await mcpServers.listUrls(params.id) }),
    revokeMcpUrl: async ({ req, params }) => {
      await mcpServers.revokeUrl(params.id, params.url_id);
      await audit(req, {
        action: 'mcp_url.revoke',
        targetType: 'mcp_server',
        targetId: params.id,
        changes: { url_id: params.url_id },
      });
      return { body: { revoked: true, id: params.url_id } };
    },
    mcpServerPost: async ({ req, res, params }) => {
      const server = await mcpServers.get(params.id);
      const identifier = proxyIdentifier(req);
      if (
        identifier === undefined ||
        !new RegExp(identifierSchema.pattern as string).test(identifier) ||
        identifier.length > 255
      ) {
        throw new ServiceError(
          400,
          'invalid_input',
          "Send the end user's identifier in the header x-identifier (or identifier; x-identifier-encoded when it is not printable ASCII)",
          [
            {
              field: 'x-identifier',
              message: identifier === undefined ? 'is required' : String(identifierSchema['x-message']),
            },
          ],
        );
      }
      await (await mcpEndpoint()).serve(req, res, { server, identifier, access: req.access }, req.body);
    },
    mcpServerGet: async ({ params, res }) => {
      await mcpServers.get(params.id);
      await methodNotAllowed(res);
    },
    mcpServerDelete: async ({ params, res }) => {
      await mcpServers.get(params.id);
      await methodNotAllowed(res);
    },
    mcpUrlPost: async ({ req, res, params }) => (await mcpEndpoint()).serveToken(req, res, params.token),
    mcpUrlGet: async ({ req, res, params }) => (await mcpEndpoint()).serveStream(req, res, params.token),
    mcpUrlDelete: ({ res }) => methodNotAllowed(res),

    // The OAuth-protected MCP endpoint and its authorization server (runtime/mcp/oauth-server.ts).
    mcpOAuthPost: async ({ req, res, params }) =>
      (await mcpOAuth()).serveMcp(req, res, params.server_id, await mcpEndpoint()),
    mcpOAuthGet: ({ res }) => methodNotAllowed(res),
    mcpOAuthDelete: ({ res }) => methodNotAllowed(res),
    mcpProtectedResourceMetadata: async ({ params, res }) => {
      const metadata = await (await mcpOAuth()).protectedResourceMetadata(params.server_id);
      if (!metadata) throw new ServiceError(404, 'mcp_server_not_found', `No MCP server with id "${params.server_id}"`);
      res.setHeader('cache-control', 'public, max-age=300');
      return { body: metadata };
    },
    mcpAuthorizationServerMetadata: async ({ res }) => {
      res.setHeader('cache-control', 'public, max-age=300');
      return { body: (await mcpOAuth()).authorizationServerMetadata() };
    },
    mcpOAuthAuthorize: async ({ res, query }) => (await mcpOAuth()).authorize(res, query),
    mcpOAuthCallback: async ({ req, res, rawQuery }) => (await mcpOAuth()).callback(req, res, rawQuery),
    mcpOAuthConsent: async ({ req, res, body }) => (await mcpOAuth()).consent(req, res, body),
    mcpOAuthToken: async ({ res, body }) =>
      oauthAnswer(res, async () => ({ status: 200, body: await (await mcpOAuth()).token(body) })),
    mcpOAuthRevoke: async ({ res, body }) =>
      oauthAnswer(res, async () => {
        await (await mcpOAuth()).revoke(body);
        return { status: 200 };
      }),
    mcpOAuthRegister: async ({ res, body }) =>
      oauthAnswer(res, async () => ({ status: 201, body: await (await mcpOAuth()).clients.register(body) })),

    proxy: async ({ req, res, params }) => s.proxy.handle(req, res, params.path),

    oauthAuthorize: async ({ res, params, query }) => {
      try {
        const connection = await s.store.getConnection(params.connection_id);
        const keys = connection && takesKeys(connection);
        if (connection && keys) return await showConnectPage(s, res, connection, keys, query.link ?? '');
        const url = await s.oauth.start(params.connection_id, query.link ?? '');
        res.setHeader('cache-control', 'no-store');
        redirect(res, url);
      } catch (e) {
        if (!(e instanceof ServiceError)) throw e;
        sendHtml(res, e.status, resultPage('Authorization could not start', e.message, false));
      }
    },
    oauthClientMetadata: async ({ params, res }) => {
      const connection = await s.store.getConnection(params.connection_id);
      const connector = connection && connectors.get(connection.connector);
      const auth = connector?.auth.find((a) => a.kind === connection!.authKind);
      if (!connection || !auth || !isMcpAuth(auth)) {
        throw new ServiceError(404, 'not_found', 'No MCP connection with that id');
      }
      // Authorization servers cache it (the draft's HTTP caching); an hour, like discovery documents here.
      res.setHeader('cache-control', 'public, max-age=3600');
      return { body: clientMetadataDocument(auth, connection, s.config.publicUrl) };
    },
    connectSubmit: async ({ req, res, params, body }) => {
      try {
        const connection = await s.store.getConnection(params.connection_id);
        const keys = connection && takesKeys(connection);
        if (!connection || !keys)
          throw new ServiceError(400, 'invalid_link', 'This connect link is invalid or has expired; ask for a new one');
        await submitConnectPage(s, m, req, res, connection, keys, body as Record<string, string>);
      } catch (e) {
        if (!(e instanceof ServiceError)) throw e;
        sendHtml(res, e.status, resultPage('The account could not be connected', e.message, false));
      }
    },
    triggerIngress: ({ req, res, params }) => s.push.handle(req, res, params.token),
    triggerIngressInstance: ({ req, res, params }) => s.push.handle(req, res, params.token, params.instance_id),
    oauthCallback: async ({ req, res, params, rawQuery }) => {
      res.setHeader('cache-control', 'no-store');
      try {
        const outcome = await s.oauth.callback(params.connection_id, new URLSearchParams(rawQuery));
        if (outcome.ok && outcome.account)
          // The end user completed an authorization link: the account now holds new credentials.
          await s.audit.record(
            {
              actorType: 'end_user',
              actorId: outcome.account.identifier,
              sourceAddress: clientAddress(s, req),
              requestId: req.requestId ?? null,
            },
            {
              action: 'authorization.complete',
              targetType: 'connected_account',
              targetId: outcome.account.id,
              changes: {
                connection_name: outcome.connection?.name ?? null,
                status: outcome.account.status,
                credentials: 'set',
              },
            },
          );
        if (outcome.redirectTo) {
          redirect(res, outcome.redirectTo);
          return;
        }
        sendHtml(
          res,
          outcome.ok ? 200 : 400,
          resultPage(outcome.ok ? 'Account connected' : 'Authorization failed', outcome.message, outcome.ok),
        );
      } catch (e) {
        if (!(e instanceof ServiceError)) throw e;
        sendHtml(res, e.status, resultPage('Authorization failed', e.message, false));
      }
    },
  };
}
