import { agentDescription } from '../../core/agent-description.ts';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
/**
 * The route table: a handler for each endpoint of core/api/endpoints.ts, which declares its method, path,
 * schemas and auth. runtime/api/router.ts matches, authenticates, parses and validates before a handler runs.
 */
import { toolCount } from '../../generated/registry.ts';
import type { Services } from '../services.ts';
import { Management } from '../management.ts';
import { connectors, getTool, tools } from '../connectors/catalog.ts';
import { createApiCredential } from '../auth/service-auth.ts';
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
          available_scopes: a.scopes.available ?? [],
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

/** The generated OpenAPI document, served as the generator wrote it (read once, on first request). */
const OPENAPI_FILE = fileURLToPath(new URL('../../generated/docs/openapi.json', import.meta.url));
let openApiText: string | undefined;

/** The client's address: with TRUST_PROXY, the first address of X-Forwarded-For, as a reverse proxy sets it. */
function clientAddress(
  s: Services,
  req: { headers: Record<string, string | string[] | undefined>; socket: { remoteAddress?: string } },
): string {
  const forwarded = req.headers['x-forwarded-for'];
  if (s.config.trustProxy && typeof forwarded === 'string') {
    const first = forwarded.split(',')[0]!.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** `load()` called once, on the first call; its promise, rejected too, kept for every later one. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
}

/** The handler of every endpoint of the API. */
export function routeTable(s: Services): RouteTable {
  const m = new Management(s);
  // Loaded on first use, not at start: Scalekit's REST API (protobuf and the AgentKit descriptors), the MCP
  // endpoint (the MCP SDK, zod) and tool search (its index). Each import() is a chunk of its own in dist/.
  const sk = once(async () => (await import('../scalekit/rest.ts')).scalekitRest(s));
  const mcpServers = new McpServers(s);
  const mcpModule = once(() => import('../mcp/endpoint.ts'));
  const mcpEndpoint = once(async () => new (await mcpModule()).McpEndpoint(s, mcpServers));
  const methodNotAllowed = async (res: ServerResponse) => (await mcpModule()).methodNotAllowed(res);
  const search = once(() => import('../tools/search.ts'));
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

    listConnections: async () => {
      const list = await s.store.listConnectionsWithCounts();
      return { body: { connections: list.map((c) => m.connectionView(c, c.accountCount)) } };
    },
    createConnection: async ({ body }) => {
      const c = await m.createConnection(body);
      return { status: 201, body: m.connectionView(c, 0) };
    },
    getConnection: async ({ params }) => {
      const c = await s.accounts.connectionByName(params.connection_name);
      return { body: m.connectionView(c, await s.store.countAccounts(c.id)) };
    },
    updateConnection: async ({ params, body }) => {
      const c = await m.updateConnection(params.connection_name, body);
      return { body: m.connectionView(c, await s.store.countAccounts(c.id)) };
    },
    deleteConnection: async ({ params }) => {
      const d = await m.deleteConnection(params.connection_name);
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

    listConnectedAccounts: async ({ query, res }) => {
      // The server's own time for the page (its reads included), for a client or a bench to tell it from the wire's.
      const started = performance.now();
      const limit = query.limit ?? 100;
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
      const names = new Map<string, { name: string; connector: string }>();
      for (const c of await s.store.listConnections()) names.set(c.id, { name: c.name, connector: c.connector });
      res.setHeader('server-timing', `app;dur=${(performance.now() - started).toFixed(2)}`);
      return {
        body: {
          // The accounts of a connection being deleted are gone for callers already (its rows go in batches).
          connected_accounts: page.flatMap((a) => {
            const connection = names.get(a.connectionId);
            return connection ? [m.accountView(a, connection)] : [];
          }),
          next_cursor: list.length > limit ? encodeCursor(page[page.length - 1]!) : null,
        },
      };
    },
    getOrCreateConnectedAccount: async ({ body }) => {
      const { account, connection, created } = await m.getOrCreateAccount(body.connection_name, body.identifier);
      return { status: created ? 201 : 200, body: { connected_account: m.accountView(account, connection), created } };
    },
    upsertConnectedAccount: async ({ body }) => {
      const { account, connection } = await m.upsertAccount(
        body.connection_name,
        body.identifier,
        body.credentials,
        body.verify === true,
      );
      return { body: { connected_account: m.accountView(account, connection) } };
    },
    createAuthorizationLink: async ({ body }) => {
      const connection = await s.accounts.connectionByName(body.connection_name);
      const { link, expiresAt, account } = await s.oauth.createLink(
        connection,
        body.identifier,
        body.redirect_url ?? undefined,
        body.user_verify_url ?? undefined,
      );
      return { body: { link, expires_at: iso(expiresAt), connected_account_id: account.id } };
    },
    verifyConnectedAccountUser: async ({ body }) => {
      const a = await s.oauth.verifyUser(body.auth_request_id, body.identifier);
      const c = (await s.accounts.connectionById(a.connectionId))!;
      return { body: { connected_account: m.accountView(a, c) } };
    },
    getConnectedAccount: async ({ params }) => {
      const a = await s.store.getAccount(params.id);
      // An account whose connection is being deleted is gone already (its row goes with a later batch).
      const c = a && (await s.accounts.connectionById(a.connectionId));
      if (!a || !c) throw new ServiceError(404, 'account_not_found', `No connected account with id "${params.id}"`);
      return { body: { connected_account: m.accountView(a, c) } };
    },
    disconnectConnectedAccount: async ({ params }) => {
      const a = await m.disconnectAccount(params.id);
      const c = (await s.accounts.connectionById(a.connectionId))!;
      return { body: { connected_account: m.accountView(a, c) } };
    },
    deleteConnectedAccount: async ({ params }) => {
      await m.deleteAccount(params.id);
      return { body: { deleted: true, id: params.id } };
    },

    listWebhooks: async () => ({
      body: { webhooks: (await s.store.listWebhookEndpoints()).map(webhookView) },
    }),
    createWebhook: async ({ body }) => {
      const { endpoint, secret } = await s.webhooks.create(body.url, body.events);
      return { status: 201, body: { ...webhookView(endpoint), secret } };
    },
    getWebhook: async ({ params }) => ({ body: webhookView(await s.webhooks.get(params.id)) }),
    updateWebhook: async ({ params, body }) => ({ body: webhookView(await s.webhooks.update(params.id, body)) }),
    deleteWebhook: async ({ params }) => {
      await s.webhooks.delete(params.id);
      return { body: { deleted: true, id: params.id } };
    },
    rotateWebhookSecret: async ({ params }) => {
      const { endpoint, secret } = await s.webhooks.rotateSecret(params.id);
      return { body: { ...webhookView(endpoint), secret } };
    },
    listWebhookDeliveries: async ({ params, query }) => {
      const page = await s.webhooks.deliveries(params.id, query.limit ?? 20, query.cursor);
      return { body: { deliveries: page.deliveries.map(deliveryView), next_cursor: page.nextCursor } };
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
          })),
        },
      };
    },
    createApiCredential: async ({ body }) => {
      const { credential, clientSecret } = await createApiCredential(s.store, body.name || 'API credential');
      return {
        status: 201,
        body: { id: credential.id, client_id: credential.clientId, client_secret: clientSecret, name: credential.name },
      };
    },
    revokeApiCredential: async ({ params }) => {
      const ok = await s.store.revokeApiCredential(params.id, Date.now());
      if (!ok) throw new ServiceError(404, 'not_found', `No active API credential with id "${params.id}"`);
      s.tokens.forgetCredential(params.id);
      return { body: { revoked: true, id: params.id } };
    },

    scalekitListConnectedAccounts: async ({ query }) => (await sk()).listConnectedAccounts(query),
    scalekitCreateConnectedAccount: async ({ body }) => (await sk()).createConnectedAccount(body),
    scalekitUpdateConnectedAccount: async ({ body }) => (await sk()).updateConnectedAccount(body),
    scalekitDeleteConnectedAccount: async ({ body }) => (await sk()).deleteConnectedAccount(body),
    scalekitMagicLink: async ({ body }) => (await sk()).magicLink(body),
    scalekitVerifyConnectedAccountUser: async ({ body }) => (await sk()).verify(body),
    scalekitGetConnectedAccountAuth: async ({ query }) => (await sk()).getConnectedAccountAuth(query),
    scalekitExecuteTool: async ({ body }) => (await sk()).executeTool(body),
    scalekitListTools: async ({ query }) => (await sk()).listTools(query),
    scalekitListAppConnections: async ({ query }) => (await sk()).listAppConnections(query),
    listMcpServers: async () => ({ body: await mcpServers.list() }),
    createMcpServer: async ({ body }) => {
      const created = await mcpServers.create(body);
      return { status: 201, body: await mcpServers.describe(created) };
    },
    getMcpServer: async ({ params }) => ({ body: await mcpServers.describe(await mcpServers.get(params.id)) }),
    updateMcpServer: async ({ params, body }) => ({
      body: await mcpServers.describe(await mcpServers.update(params.id, body)),
    }),
    deleteMcpServer: async ({ params }) => {
      await mcpServers.delete(params.id);
      return { body: { deleted: true, id: params.id } };
    },
    createMcpUrl: async ({ params, body }) => ({
      status: 201,
      body: await mcpServers.createUrl(params.id, body.identifier, body.expires_in ?? undefined),
    }),
    listMcpUrls: async ({ params }) => ({ body: await mcpServers.listUrls(params.id) }),
    revokeMcpUrl: async ({ params }) => {
      await mcpServers.revokeUrl(params.id, params.url_id);
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
      await (await mcpEndpoint()).serve(req, res, { server, identifier }, req.body);
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
    mcpUrlGet: ({ res }) => methodNotAllowed(res),
    mcpUrlDelete: ({ res }) => methodNotAllowed(res),

    proxy: async ({ req, res, params }) => s.proxy.handle(req, res, params.path),

    oauthAuthorize: async ({ res, params, query }) => {
      try {
        const url = await s.oauth.start(params.connection_id, query.link ?? '');
        res.setHeader('cache-control', 'no-store');
        redirect(res, url);
      } catch (e) {
        if (!(e instanceof ServiceError)) throw e;
        sendHtml(res, e.status, resultPage('Authorization could not start', e.message, false));
      }
    },
    oauthCallback: async ({ res, params, rawQuery }) => {
      res.setHeader('cache-control', 'no-store');
      try {
        const outcome = await s.oauth.callback(params.connection_id, new URLSearchParams(rawQuery));
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
