import express, { type Router } from 'express';
import type { Services } from '../services.ts';
import { Management, type ConnectionInput } from '../management.ts';
import { connectors, getTool, tools } from '../connectors/catalog.ts';
import { createApiCredential } from '../auth/service-auth.ts';
import { ServiceError } from '../../core/errors.ts';
import { encodeCursor, InvalidCursor } from '../store/cursor.ts';
import { checkBody, CONNECTION_NAME, IDENTIFIER, queryString } from './input.ts';
import type { ConnectorDefinition, ToolDefinition } from '../../core/tool-types.ts';

function toolView(t: ToolDefinition, connector: ConnectorDefinition) {
  return {
    name: t.name,
    connector: t.connector,
    title: t.title,
    description: t.description,
    read_only: t.readOnly,
    input_schema: t.inputSchema,
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
    ...(withTools ? { tools: c.toolNames } : {}),
  };
}

export const connectionRules = {
  connection_name: CONNECTION_NAME,
  connector: { kind: 'string' as const },
  auth_kind: { kind: 'string' as const },
  client_id: { kind: 'string' as const, maxLength: 1024 },
  client_secret: { kind: 'string' as const, maxLength: 4096 },
  scopes: { kind: 'string[]' as const },
  api_base_url: { kind: 'string' as const, maxLength: 2048 },
  api_hosts: { kind: 'object' as const },
  oauth: { kind: 'object' as const },
};

/** The authenticated JSON API under /v1. */
export function apiRouter(s: Services): Router {
  const r = express.Router();
  const m = new Management(s);

  r.get('/connectors', (_req, res) => {
    res.json({ connectors: [...connectors.values()].map((c) => connectorView(c, false)) });
  });
  r.get('/connectors/:name', (req, res) => {
    const c = connectors.get(req.params.name!);
    if (!c) throw new ServiceError(404, 'connector_not_found', `No connector named "${req.params.name}"`);
    res.json(connectorView(c, true));
  });

  r.get('/tools', (req, res) => {
    const connector = queryString(req.query.connector, 'connector');
    if (connector !== undefined && !connectors.has(connector)) {
      throw new ServiceError(400, 'invalid_input', `Unknown connector "${connector}"`, [
        { field: 'connector', message: `must be one of: ${[...connectors.keys()].join(', ')}` },
      ]);
    }
    const list = [...tools.values()].filter((t) => !connector || t.connector === connector);
    res.json({ tools: list.map((t) => toolView(t, connectors.get(t.connector)!)), count: list.length });
  });
  r.get('/tools/:name', (req, res) => {
    const t = getTool(req.params.name!);
    if (!t) throw new ServiceError(404, 'unknown_tool', `No tool named "${req.params.name}"`);
    res.json(toolView(t, connectors.get(t.connector)!));
  });

  r.get('/connections', async (_req, res) => {
    const list = await s.store.listConnections();
    res.json({ connections: list.map((c) => m.connectionView(c, c.accountCount)) });
  });
  r.post('/connections', async (req, res) => {
    const body = checkBody<ConnectionInput & Record<string, unknown>>(
      req.body,
      { ...connectionRules, connector: { kind: 'string', required: true } },
      'a connection',
    );
    const c = await m.createConnection(body);
    res.status(201).json(m.connectionView(c, 0));
  });
  r.get('/connections/:name', async (req, res) => {
    const c = await s.accounts.connectionByName(req.params.name!);
    res.json(m.connectionView(c, await s.store.countAccounts(c.id)));
  });
  r.patch('/connections/:name', async (req, res) => {
    const body = checkBody<ConnectionInput & Record<string, unknown>>(
      req.body,
      { ...connectionRules, connection_name: { kind: 'string' } },
      'a connection update',
    );
    const c = await m.updateConnection(req.params.name!, body);
    res.json(m.connectionView(c, await s.store.countAccounts(c.id)));
  });
  r.delete('/connections/:name', async (req, res) => {
    const n = await m.deleteConnection(req.params.name!);
    res.json({ deleted: true, connection_name: req.params.name, accounts_deleted: n });
  });

  r.get('/connected-accounts', async (req, res) => {
    const connectionName = queryString(req.query.connection_name, 'connection_name');
    const identifier = queryString(req.query.identifier, 'identifier');
    const status = m.parseStatus(queryString(req.query.status, 'status'));
    const limitText = queryString(req.query.limit, 'limit');
    const limit = limitText === undefined ? 100 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new ServiceError(400, 'invalid_input', 'limit must be 1-1000', [
        { field: 'limit', message: 'must be an integer from 1 to 1000' },
      ]);
    }
    const cursor = queryString(req.query.cursor, 'cursor');
    const connection = connectionName ? await s.accounts.connectionByName(connectionName) : undefined;
    let list;
    try {
      list = await s.store.listAccounts({
        connectionId: connection?.id,
        identifier,
        status,
        limit: limit + 1,
        after: cursor,
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
    res.json({
      connected_accounts: page.map((a) => m.accountView(a, names.get(a.connectionId) ?? { name: '?', connector: '?' })),
      next_cursor: list.length > limit ? encodeCursor(page[page.length - 1]!) : null,
    });
  });
  r.post('/connected-accounts', async (req, res) => {
    const body = checkBody<{ connection_name: string; identifier: string }>(
      req.body,
      { connection_name: { kind: 'string', required: true }, identifier: IDENTIFIER },
      'a connected account',
    );
    const { account, connection, created } = await m.getOrCreateAccount(body.connection_name, body.identifier);
    res.status(created ? 201 : 200).json({ connected_account: m.accountView(account, connection), created });
  });
  r.put('/connected-accounts', async (req, res) => {
    const body = checkBody<{ connection_name: string; identifier: string; credentials: unknown; verify?: boolean }>(
      req.body,
      {
        connection_name: { kind: 'string', required: true },
        identifier: IDENTIFIER,
        credentials: { kind: 'object', required: true },
        verify: { kind: 'boolean' },
      },
      'a connected account upsert',
    );
    const { account, connection } = await m.upsertAccount(
      body.connection_name,
      body.identifier,
      body.credentials,
      body.verify === true,
    );
    res.json({ connected_account: m.accountView(account, connection) });
  });
  r.post('/connected-accounts/authorization-link', async (req, res) => {
    const body = checkBody<{ connection_name: string; identifier: string; redirect_url?: string }>(
      req.body,
      {
        connection_name: { kind: 'string', required: true },
        identifier: IDENTIFIER,
        redirect_url: { kind: 'string', maxLength: 2048 },
      },
      'an authorization link request',
    );
    const connection = await s.accounts.connectionByName(body.connection_name);
    const { link, expiresAt, account } = await s.oauth.createLink(connection, body.identifier, body.redirect_url);
    res.json({ link, expires_at: new Date(expiresAt).toISOString(), connected_account_id: account.id });
  });
  r.get('/connected-accounts/:id', async (req, res) => {
    const a = await s.store.getAccount(req.params.id!);
    if (!a) throw new ServiceError(404, 'account_not_found', `No connected account with id "${req.params.id}"`);
    const c = (await s.accounts.connectionById(a.connectionId))!;
    res.json({ connected_account: m.accountView(a, c) });
  });
  r.post('/connected-accounts/:id/disconnect', async (req, res) => {
    const a = await m.disconnectAccount(req.params.id!);
    const c = (await s.accounts.connectionById(a.connectionId))!;
    res.json({ connected_account: m.accountView(a, c) });
  });
  r.delete('/connected-accounts/:id', async (req, res) => {
    const ok = await s.store.deleteAccount(req.params.id!);
    if (!ok) throw new ServiceError(404, 'account_not_found', `No connected account with id "${req.params.id}"`);
    s.accounts.forgetAccount(req.params.id!);
    res.json({ deleted: true, id: req.params.id });
  });

  r.get('/api-credentials', async (_req, res) => {
    const list = await s.store.listApiCredentials();
    res.json({
      api_credentials: list.map((c) => ({
        id: c.id,
        client_id: c.clientId,
        name: c.name,
        created_at: new Date(c.createdAt).toISOString(),
        revoked_at: c.revokedAt ? new Date(c.revokedAt).toISOString() : null,
        last_used_at: c.lastUsedAt ? new Date(c.lastUsedAt).toISOString() : null,
      })),
    });
  });
  r.post('/api-credentials', async (req, res) => {
    const body = checkBody<{ name?: string }>(
      req.body ?? {},
      { name: { kind: 'string', maxLength: 200 } },
      'an API credential',
    );
    const { credential, clientSecret } = await createApiCredential(s.store, body.name || 'API credential');
    res
      .status(201)
      .json({ id: credential.id, client_id: credential.clientId, client_secret: clientSecret, name: credential.name });
  });
  r.delete('/api-credentials/:id', async (req, res) => {
    const ok = await s.store.revokeApiCredential(req.params.id!, Date.now());
    if (!ok) throw new ServiceError(404, 'not_found', `No active API credential with id "${req.params.id}"`);
    s.tokens.forgetCredential(req.params.id!);
    res.json({ revoked: true, id: req.params.id });
  });

  return r;
}
