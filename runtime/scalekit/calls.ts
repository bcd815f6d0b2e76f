import { agentDescription } from '../../core/agent-description.ts';
import { create, type JsonObject, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { AsyncLocalStorage } from 'node:async_hooks';
import { checkConnection, type TokenClaims } from '../auth/service-auth.ts';
import type { Services } from '../services.ts';
import { ConnectionAdmin } from '../connection-admin.ts';
import type { Account, Connection } from '../store/types.ts';
import { ServiceError } from '../../core/errors.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';
import { authFor, getConnector, isKeyAuth, isOAuthKind, tools as allTools } from '../connectors/catalog.ts';
import { encodeCursor, InvalidCursor } from '../store/cursor.ts';
import { given, invalidArgument } from './errors.ts';
import { connectionForTool } from '../api/agent-tools.ts';
import {
  ConnectedAccountForListSchema,
  ConnectedAccountSchema,
  ConnectionStatus,
  ConnectionType,
  ConnectorStatus,
  ConnectorType,
  ListConnectionSchema,
  ToolSchema,
  type AuthorizationDetails,
  type CreateConnectedAccountRequest,
  type CreateConnectedAccountResponseSchema,
  type DeleteConnectedAccountRequest,
  type DeleteConnectedAccountResponseSchema,
  type ExecuteToolRequest,
  type ExecuteToolResponseSchema,
  type GetConnectedAccountByIdentifierRequest,
  type GetConnectedAccountByIdentifierResponseSchema,
  type GetMagicLinkForConnectedAccountRequest,
  type GetMagicLinkForConnectedAccountResponseSchema,
  type ListAppConnectionsRequest,
  type ListAppConnectionsResponseSchema,
  type ListAvailableToolsRequest,
  type ListAvailableToolsResponseSchema,
  type ListConnectedAccountsRequest,
  type ListConnectedAccountsResponseSchema,
  type ListScopedToolsRequest,
  type ListScopedToolsResponseSchema,
  type ListToolsRequest,
  type ListToolsResponseSchema,
  type UpdateConnectedAccountRequest,
  type UpdateConnectedAccountResponseSchema,
  type VerifyConnectedAccountUserRequest,
  type VerifyConnectedAccountUserResponseSchema,
} from './descriptors.ts';

type Reply<S extends Parameters<typeof create>[0]> = MessageInitShape<S>;

const STATUS: Record<Account['status'], ConnectorStatus> = {
  ACTIVE: ConnectorStatus.ACTIVE,
  EXPIRED: ConnectorStatus.EXPIRED,
  PENDING_AUTH: ConnectorStatus.PENDING_AUTH,
  PENDING_VERIFICATION: ConnectorStatus.PENDING_VERIFICATION,
  DISCONNECTED: ConnectorStatus.DISCONNECTED,
};
const TYPE: Record<string, ConnectorType> = {
  oauth2: ConnectorType.OAUTH,
  oauth2_mcp: ConnectorType.OAUTH,
  api_key: ConnectorType.API_KEY,
  basic: ConnectorType.BASIC_AUTH,
  bearer: ConnectorType.BEARER_TOKEN,
};
const CONNECTION_TYPE: Record<string, ConnectionType> = {
  oauth2: ConnectionType.OAUTH,
  oauth2_mcp: ConnectionType.OAUTH,
  api_key: ConnectionType.API_KEY,
  basic: ConnectionType.BASIC,
  bearer: ConnectionType.BEARER,
};
const ts = (ms: number | null) => (ms === null ? undefined : timestampFromMs(ms));

/** The request's account: its id, or its connection (the SDK's `connectionName`, sent as `connector`) and identifier. */
interface AccountSelector {
  id?: string;
  connector?: string;
  identifier?: string;
}

/** `ExecuteToolResponse.data` is a Struct: an object passes as it is, anything else is wrapped as `result`. */
export function asStruct(data: unknown): JsonObject {
  if (data !== null && typeof data === 'object' && !Array.isArray(data)) return data as JsonObject;
  return { result: (data ?? null) as JsonValue };
}

/**
 * Scalekit's AgentKit calls (ConnectedAccountService, ToolService, ConnectionService) on this service's own
 * services: the same account service, link flow, executor and validation as the REST API, and so the same
 * errors. The gRPC server and the `/api/v1/…` REST shape both call these.
 */
/**
 * The claims of the token behind the call being served (gRPC and REST alike): a credential restricted to named
 * connections reaches no other through these calls either. Set by the surfaces around each call.
 */
export const callerAccess = new AsyncLocalStorage<Caller>();

/** The caller of a Scalekit call: its token's claims, and where it came from (for the audit log). */
export interface Caller {
  access?: TokenClaims;
  sourceAddress?: string | null;
  requestId?: string | null;
}
const claims = () => callerAccess.getStore()?.access;
const allowed = (name: string) => checkConnection({ access: claims() }, name);
const reaches = (name: string) => {
  const only = claims()?.connections;
  return !only || only.has(name);
};

export class ScalekitCalls {
  private m: ConnectionAdmin;
  constructor(private s: Services) {
    this.m = new ConnectionAdmin(s);
  }

  // Views

  private authorizationDetails(
    a: Account,
    c: Connection,
  ): MessageInitShape<typeof ConnectedAccountSchema>['authorizationDetails'] {
    // Never a credential: the account's non-secret fields (API-key connectors) or its scopes (OAuth).
    if (isOAuthKind(c.authKind))
      return { details: { case: 'oauthToken', value: { scopes: c.scopes, domain: a.fields.domain ?? '' } } };
    return { details: { case: 'staticAuth', value: { details: { ...a.fields } } } };
  }

  accountMessage(a: Account, c: Connection): MessageInitShape<typeof ConnectedAccountSchema> {
    return {
      id: a.id,
      identifier: a.identifier,
      provider: c.connector,
      connector: c.name,
      connectionId: c.id,
      status: STATUS[a.status],
      authorizationType: TYPE[c.authKind] ?? ConnectorType.CUSTOM,
      authorizationDetails: this.authorizationDetails(a, c),
      tokenExpiresAt: ts(a.tokenExpiresAt),
      updatedAt: ts(a.updatedAt),
      lastUsedAt: ts(a.lastUsedAt),
    };
  }

  private toolMessage(t: ToolDefinition): MessageInitShape<typeof ToolSchema> {
    return {
      id: t.name,
      provider: t.connector,
      tags: t.readOnly ? ['read'] : ['write'],
      definition: { name: t.name, description: agentDescription(t), input_schema: t.inputSchema as JsonObject },
      metadata: { title: t.title, connector: t.connector, read_only: t.readOnly },
    };
  }

  /** Records a change made through these calls, with the caller as the actor. */
  private audit(action: string, account: Account, changes: Record<string, unknown> = {}): Promise<unknown> {
    const caller = callerAccess.getStore();
    return this.s.audit.record(
      {
        actorType: 'credential',
        actorId: caller?.access?.credentialId ?? 'unknown',
        sourceAddress: caller?.sourceAddress ?? null,
        requestId: caller?.requestId ?? null,
      },
      { action, targetType: 'connected_account', targetId: account.id, changes },
    );
  }

  // Accounts

  private async connection(name: string | undefined): Promise<Connection> {
    if (!name) throw invalidArgument('connector', 'is required (the connection name) when no id is given');
    allowed(name);
    return this.s.accounts.connectionByName(name);
  }

  /** The account a request names; NOT_FOUND when it does not exist. */
  private async findAccount(sel: AccountSelector): Promise<{ account: Account; connection: Connection }> {
    const id = given(sel.id);
    if (id) {
      const account = await this.s.store.getAccount(id);
      // An account of a connection being deleted is gone already.
      const connection = account && (await this.s.accounts.connectionById(account.connectionId));
      if (!account || !connection)
        throw new ServiceError(404, 'account_not_found', `No connected account with id "${id}"`);
      allowed(connection.name);
      return { account, connection };
    }
    const connection = await this.connection(given(sel.connector));
    const identifier = given(sel.identifier);
    if (!identifier) throw invalidArgument('identifier', 'is required when no id is given');
    const account = await this.s.store.findAccount(connection.id, identifier);
    if (!account)
      throw new ServiceError(
        404,
        'account_not_found',
        `No connected account for identifier "${identifier}" on connection "${connection.name}"`,
      );
    return { account, connection };
  }

  /** The credentials in `authorization_details`, as the REST upsert takes them; undefined when it carries none. */
  private credentials(c: Connection, details: AuthorizationDetails | undefined): Record<string, unknown> | undefined {
    const d = details?.details;
    if (!d || d.case === undefined) return undefined;
    const auth = authFor(getConnector(c.connector)!, c.authKind);
    if (d.case === 'staticAuth') {
      if (!isKeyAuth(auth))
        throw invalidArgument(
          'authorization_details.static_auth',
          `does not apply: connection "${c.name}" uses OAuth; send oauth_token or an authorization link`,
        );
      return { ...(d.value.details ?? {}) };
    }
    if (d.case === 'oauthToken') {
      if (!d.value.accessToken) return undefined;
      if (isKeyAuth(auth))
        throw invalidArgument(
          'authorization_details.oauth_token',
          `does not apply: connection "${c.name}" takes static_auth with its fields`,
        );
      return {
        access_token: d.value.accessToken,
        ...(d.value.refreshToken ? { refresh_token: d.value.refreshToken } : {}),
        ...(d.value.scopes.length ? { scope: d.value.scopes.join(' ') } : {}),
      };
    }
    throw invalidArgument(
      `authorization_details.${d.case === 'googleDwd' ? 'google_dwd' : 'trusted_idp'}`,
      'is not supported by this service',
    );
  }

  private async store(c: Connection, identifier: string, credentials: Record<string, unknown>) {
    try {
      return (await this.m.upsertAccount(c.name, identifier, credentials)).account;
    } catch (e) {
      if (e instanceof ServiceError && Array.isArray(e.details)) {
        const details = e.details.map((f) => ({
          ...f,
          field: f.field.replace(/^credentials\.?/, 'authorization_details.static_auth.details.').replace(/\.$/, ''),
        }));
        throw new ServiceError(
          e.status,
          e.code,
          e.message.replace(/credentials\./g, 'authorization_details.static_auth.details.'),
          details,
          e.headers,
        );
      }
      throw e;
    }
  }

  async getConnectedAccountAuth(
    r: GetConnectedAccountByIdentifierRequest,
  ): Promise<Reply<typeof GetConnectedAccountByIdentifierResponseSchema>> {
    const { account, connection } = await this.findAccount(r);
    return { connectedAccount: this.accountMessage(account, connection) };
  }

  async createConnectedAccount(
    r: CreateConnectedAccountRequest,
  ): Promise<Reply<typeof CreateConnectedAccountResponseSchema>> {
    const connection = await this.connection(given(r.connector));
    const identifier = given(r.identifier);
    if (!identifier) throw invalidArgument('identifier', 'is required');
    if (await this.s.store.findAccount(connection.id, identifier))
      throw new ServiceError(
        409,
        'already_exists',
        `A connected account for identifier "${identifier}" exists on connection "${connection.name}"`,
      );
    const credentials = this.credentials(connection, r.connectedAccount?.authorizationDetails);
    const account = credentials
      ? await this.store(connection, identifier, credentials)
      : (await this.m.getOrCreateAccount(connection.name, identifier)).account;
    await this.audit(credentials ? 'account.upsert' : 'account.create', account, {
      connection_name: connection.name,
      identifier,
      ...(credentials ? { credentials: Object.fromEntries(Object.keys(credentials).map((k) => [k, 'set'])) } : {}),
    });
    return { connectedAccount: this.accountMessage(account, connection) };
  }

  async updateConnectedAccount(
    r: UpdateConnectedAccountRequest,
  ): Promise<Reply<typeof UpdateConnectedAccountResponseSchema>> {
    const { account, connection } = await this.findAccount(r);
    const credentials = this.credentials(connection, r.connectedAccount?.authorizationDetails);
    const updated = credentials ? await this.store(connection, account.identifier, credentials) : account;
    if (credentials)
      await this.audit('account.upsert', updated, {
        connection_name: connection.name,
        identifier: account.identifier,
        credentials: Object.fromEntries(Object.keys(credentials).map((k) => [k, 'set'])),
      });
    return { connectedAccount: this.accountMessage(updated, connection) };
  }

  async deleteConnectedAccount(
    r: DeleteConnectedAccountRequest,
  ): Promise<Reply<typeof DeleteConnectedAccountResponseSchema>> {
    const { account, connection } = await this.findAccount(r);
    // Through ConnectionAdmin, which writes the account's `connected_account.deleted` event in the same transaction.
    await this.m.deleteAccount(account.id);
    await this.audit('account.delete', account, { connection_name: connection.name, identifier: account.identifier });
    return {};
  }

  async listConnectedAccounts(
    r: ListConnectedAccountsRequest,
  ): Promise<Reply<typeof ListConnectedAccountsResponseSchema>> {
    if (r.pageSize < 0) throw invalidArgument('page_size', 'must not be negative');
    const limit = Math.min(r.pageSize || 100, 1000);
    const connections = await this.s.store.listConnections();
    const byId = new Map(connections.map((c) => [c.id, c]));
    const names = [...r.connectionNames, ...(given(r.connector) ? [given(r.connector)!] : [])];
    for (const n of names) await this.connection(n);
    const wanted = connections.filter(
      (c) =>
        (!names.length || names.includes(c.name)) &&
        (!given(r.provider) || c.connector === given(r.provider)) &&
        reaches(c.name),
    );
    const out: Account[] = [];
    let cursor = given(r.pageToken);
    // One store query per connection wanted when filtering by several; a single query otherwise.
    const single = wanted.length === connections.length ? [undefined] : wanted.length ? wanted.map((c) => c.id) : [];
    try {
      for (const connectionId of single) {
        if (out.length > limit) break;
        const page = await this.s.store.listAccounts({
          connectionId,
          identifier: given(r.identifier),
          identifierContains: given(r.query),
          limit: limit + 1 - out.length,
          after: cursor,
        });
        out.push(...page);
      }
    } catch (e) {
      if (e instanceof InvalidCursor) throw invalidArgument('page_token', 'is not a token from a previous page');
      throw e;
    }
    const more = out.length > limit;
    const page = out.slice(0, limit);
    cursor = more ? encodeCursor(page[page.length - 1]!) : '';
    // Every account the filters match, over all pages (the SDK's `totalSize`), not this page's length.
    const totalSize = await this.s.store.countMatchingAccounts({
      connectionIds: wanted.map((c) => c.id),
      identifier: given(r.identifier),
      identifierContains: given(r.query),
    });
    return {
      connectedAccounts: page.map((a) => {
        const {
          authorizationDetails: _omit,
          $typeName: _type,
          ...rest
        } = this.accountMessage(a, byId.get(a.connectionId)!) as MessageInitShape<typeof ConnectedAccountSchema> & {
          $typeName?: string;
        };
        return create(ConnectedAccountForListSchema, rest);
      }),
      totalSize,
      nextPageToken: cursor,
      prevPageToken: '',
    };
  }

  async getMagicLinkForConnectedAccount(
    r: GetMagicLinkForConnectedAccountRequest,
  ): Promise<Reply<typeof GetMagicLinkForConnectedAccountResponseSchema>> {
    let connection: Connection;
    let identifier: string | undefined;
    if (given(r.id)) {
      const found = await this.findAccount({ id: r.id });
      connection = found.connection;
      identifier = found.account.identifier;
    } else {
      connection = await this.connection(given(r.connector));
      identifier = given(r.identifier);
      if (!identifier) throw invalidArgument('identifier', 'is required');
    }
    const { link, expiresAt } = await this.s.oauth.createLink(
      connection,
      identifier,
      undefined,
      given(r.userVerifyUrl),
    );
    return { link, expiry: timestampFromMs(expiresAt) };
  }

  async verifyConnectedAccountUser(
    r: VerifyConnectedAccountUserRequest,
  ): Promise<Reply<typeof VerifyConnectedAccountUserResponseSchema>> {
    const authRequestId = given(r.authRequestId);
    if (!authRequestId) throw invalidArgument('auth_request_id', 'is required');
    const identifier = given(r.identifier);
    if (!identifier) throw invalidArgument('identifier', 'is required');
    await this.s.oauth.verifyUser(authRequestId, identifier);
    return { postUserVerifyRedirectUrl: '' };
  }

  // Tools

  async executeTool(r: ExecuteToolRequest): Promise<Reply<typeof ExecuteToolResponseSchema>> {
    const toolName = given(r.toolName);
    if (!toolName) throw invalidArgument('tool_name', 'is required');
    const identifier = given(r.identifier);
    if (!given(r.connectedAccountId) && !identifier)
      throw invalidArgument('identifier', 'is required when no connected_account_id is given');
    // The end user alone (the SDK's `connector` is optional): the account on the connection of the tool's
    // connector, as POST /v1/tools/execute finds it.
    let connectionName = given(r.connector);
    if (!connectionName && !given(r.connectedAccountId) && identifier)
      connectionName = (await connectionForTool(this.s, toolName, identifier)) || undefined;
    const result = await this.s.executor.execute({
      toolName,
      input: r.params ?? {},
      account: { connectedAccountId: given(r.connectedAccountId), connectionName, identifier },
      scope: { access: claims() },
    });
    return { data: asStruct(result.data), executionId: result.executionId };
  }

  private pageOf<T>(items: T[], pageSize: number, pageToken: string) {
    if (pageSize < 0) throw invalidArgument('page_size', 'must not be negative');
    const start = pageToken ? Number.parseInt(pageToken, 10) : 0;
    if (!Number.isInteger(start) || start < 0 || (String(start) !== pageToken.trim() && pageToken !== ''))
      throw invalidArgument('page_token', 'is not a token from a previous page');
    const size = Math.min(pageSize || 200, 1000);
    const page = items.slice(start, start + size);
    return {
      page,
      totalSize: items.length,
      nextPageToken: start + size < items.length ? String(start + size) : '',
      prevPageToken: start > 0 ? String(Math.max(0, start - size)) : '',
    };
  }

  async listTools(r: ListToolsRequest): Promise<Reply<typeof ListToolsResponseSchema>> {
    const f = r.filter;
    let list = [...allTools.values()];
    const provider = given(f?.provider);
    if (provider) list = list.filter((t) => t.connector === provider);
    const connectionName = given(f?.connector);
    if (connectionName) {
      const c = await this.s.accounts.connectionByName(connectionName);
      list = list.filter((t) => t.connector === c.connector);
    }
    if (f?.toolName.length) list = list.filter((t) => f.toolName.includes(t.name));
    const query = given(f?.query)?.toLowerCase();
    if (query) list = list.filter((t) => `${t.name} ${t.title} ${t.description}`.toLowerCase().includes(query));
    if (given(f?.identifier)) {
      const connectors = new Set(
        (await this.activeAccounts(given(f!.identifier)!)).map(({ connection }) => connection.connector),
      );
      list = list.filter((t) => connectors.has(t.connector));
    }
    const { page, ...paging } = this.pageOf(list, r.pageSize, r.pageToken);
    return {
      ...paging,
      toolNames: page.map((t) => t.name),
      tools: f?.summary ? [] : page.map((t) => this.toolMessage(t)),
    };
  }

  /** The identifier's ACTIVE accounts, with their connections. */
  private async activeAccounts(identifier: string, connectionNames: string[] = []) {
    const out: Array<{ account: Account; connection: Connection }> = [];
    for (const c of await this.s.store.listConnections()) {
      if (connectionNames.length && !connectionNames.includes(c.name)) continue;
      const account = await this.s.store.findAccount(c.id, identifier);
      if (account?.status === 'ACTIVE') out.push({ account, connection: c });
    }
    return out;
  }

  async listScopedTools(r: ListScopedToolsRequest): Promise<Reply<typeof ListScopedToolsResponseSchema>> {
    const identifier = given(r.identifier);
    if (!identifier) throw invalidArgument('identifier', 'is required');
    const f = r.filter;
    const scoped = [];
    for (const { account, connection } of await this.activeAccounts(identifier, f?.connectionNames ?? [])) {
      if (f?.providers.length && !f.providers.includes(connection.connector)) continue;
      for (const t of allTools.values()) {
        if (t.connector !== connection.connector) continue;
        if (f?.toolNames.length && !f.toolNames.includes(t.name)) continue;
        scoped.push({ tool: this.toolMessage(t), identifier, connectedAccountId: account.id });
      }
    }
    const { page, ...paging } = this.pageOf(scoped, r.pageSize, r.pageToken);
    return { ...paging, tools: page };
  }

  async listAvailableTools(r: ListAvailableToolsRequest): Promise<Reply<typeof ListAvailableToolsResponseSchema>> {
    const identifier = given(r.identifier);
    if (!identifier) throw invalidArgument('identifier', 'is required');
    const connectors = new Set((await this.activeAccounts(identifier)).map(({ connection }) => connection.connector));
    const list = [...allTools.values()].filter((t) => connectors.has(t.connector));
    const { page, ...paging } = this.pageOf(list, r.pageSize, r.pageToken);
    return { ...paging, tools: page.map((t) => this.toolMessage(t)) };
  }

  // Connections

  async listAppConnections(r: ListAppConnectionsRequest): Promise<Reply<typeof ListAppConnectionsResponseSchema>> {
    let list = (await this.s.store.listConnections()).filter((c) => reaches(c.name));
    const provider = given(r.provider);
    if (provider) list = list.filter((c) => c.connector === provider);
    const query = given(r.query)?.toLowerCase();
    if (query) list = list.filter((c) => `${c.name} ${c.connector}`.toLowerCase().includes(query));
    const { page, ...paging } = this.pageOf(list, r.pageSize, r.pageToken);
    return {
      ...paging,
      connections: page.map((c) =>
        create(ListConnectionSchema, {
          id: c.id,
          type: CONNECTION_TYPE[c.authKind] ?? ConnectionType.INVALID,
          status: ConnectionStatus.COMPLETED,
          enabled: true,
          providerKey: c.connector,
          keyId: c.name,
          createdAt: timestampFromMs(c.createdAt),
        }),
      ),
    };
  }
}
