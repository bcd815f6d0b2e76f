/**
 * The administration of connections and their connected accounts: creating, changing and deleting them, storing an
 * account's credentials (checked, and verified with the provider on request), disconnecting. The operations behind
 * the HTTP API, the dashboard and the Scalekit calls alike, so they can never disagree on validation or on what is
 * stored. (Reading, resolving and refreshing accounts is runtime/accounts/.)
 */
import type { Services } from './services.ts';
import { privateDestination } from './upstream/address-guard.ts';
import { accountEvent, updateAccountWithEvent } from './webhooks/events.ts';
import type { ConnectionUpdate } from '../generated/api/types.ts';
import type { Account, AccountStatus, Connection, ConnectionDeletion, ConnectionPatch } from './store/types.ts';
import { ACCOUNT_STATUSES, pendingAccount } from './store/types.ts';
import { newId, newSortableId } from './ids.ts';
import { aad } from './crypto/aad.ts';
import {
  allowlistedFields,
  authFor,
  checkField,
  connectors,
  getConnector,
  accountAuthKind,
  authKindsOf,
  isKeyAuth,
  isOAuth2,
  isOAuthKind,
  validateCredentials,
} from './connectors/catalog.ts';
import type { AccountFieldSpec } from '../core/spec-model.ts';
import type { ConnectorDefinition } from '../core/tool-types.ts';
import { invalidInput, ServiceError } from '../core/errors.ts';
import { redirectUriFor } from './oauth/endpoints.ts';
import { forgetDiscovery } from './oauth/mcp-auth.ts';
import type { FieldError } from '../core/tool-types.ts';
import { send } from './upstream/http.ts';
import { configuredHosts, credentialHeaderNames, credentialHeaders, resolveBaseUrl } from './connectors/catalog.ts';

/** A connection as a client sends it (core/api/schemas.ts); null in a field is as good as leaving it out. */
export type ConnectionInput = ConnectionUpdate;

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

function checkUrl(value: unknown, field: string, errors: FieldError[]): void {
  if (typeof value !== 'string') {
    errors.push({ field, message: 'must be a URL string' });
    return;
  }
  try {
    const u = new URL(value.replace(/\{[a-z_]+\}/gi, 'x'));
    if (u.protocol !== 'https:' && u.protocol !== 'http:') errors.push({ field, message: 'must be an http(s) URL' });
    if (u.username || u.password) errors.push({ field, message: 'must not contain credentials' });
  } catch {
    errors.push({ field, message: 'must be an absolute http(s) URL' });
  }
}

function scopesOf(v: string[] | string | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  const list = Array.isArray(v) ? v : v.split(/[\s,]+/);
  return [...new Set(list.map((s) => s.trim()).filter(Boolean))];
}

export class ConnectionAdmin {
  constructor(private s: Services) {}

  connectionView(c: Connection, accountCount?: number) {
    return {
      id: c.id,
      connection_name: c.name,
      connector: c.connector,
      auth_kind: c.authKind,
      ...(c.authKinds ? { auth_kinds: c.authKinds } : {}),
      client_id: c.clientId,
      has_client_secret: c.clientSecretSealed !== null,
      scopes: c.scopes,
      redirect_uri: isOAuthKind(c.authKind) ? redirectUriFor(this.s.config.publicUrl, c.id) : null,
      api_base_url: c.apiBaseUrl,
      api_hosts: c.apiHosts,
      oauth: c.oauth,
      ...(c.authKind === 'oauth2_mcp' ? { client_registered: c.registrationSealed !== null } : {}),
      ...(accountCount !== undefined ? { account_count: accountCount } : {}),
      created_at: iso(c.createdAt),
      updated_at: iso(c.updatedAt),
    };
  }

  accountView(a: Account, connection: Pick<Connection, 'name' | 'connector' | 'authKind' | 'authKinds'>) {
    return {
      id: a.id,
      connection_name: connection.name,
      connector: connection.connector,
      identifier: a.identifier,
      status: a.status,
      fields: a.fields,
      token_expires_at: isoOrNull(a.tokenExpiresAt),
      last_used_at: isoOrNull(a.lastUsedAt),
      last_error: a.lastError,
      ...(connection.authKinds ? { auth_kind: accountAuthKind(connection, a) } : {}),
      created_at: iso(a.createdAt),
      updated_at: iso(a.updatedAt),
    };
  }

  private validateConnection(
    input: ConnectionInput,
    connector: NonNullable<ReturnType<typeof getConnector>>,
    authKind: string,
    creating: boolean,
  ): ConnectionPatch {
    const errors: FieldError[] = [];
    const oauth2 = authKind === 'oauth2';
    if (!oauth2) {
      for (const f of ['client_id', 'client_secret'] as const) {
        if (input[f] !== undefined && input[f] !== null) {
          errors.push({
            field: f,
            message:
              authKind === 'oauth2_mcp'
                ? 'is not needed: the client is registered dynamically'
                : `applies to OAuth connections only (this one uses ${authKind})`,
          });
        }
      }
    }
    if (!isOAuthKind(authKind) && input.scopes !== undefined)
      errors.push({ field: 'scopes', message: 'applies to OAuth connections only' });
    if (input.client_id !== undefined && (typeof input.client_id !== 'string' || !input.client_id.trim()))
      errors.push({ field: 'client_id', message: 'must be a non-empty string' });
    if (input.client_secret !== undefined && (typeof input.client_secret !== 'string' || !input.client_secret))
      errors.push({ field: 'client_secret', message: 'must be a non-empty string' });
    if (input.scopes !== undefined && !Array.isArray(input.scopes) && typeof input.scopes !== 'string')
      errors.push({ field: 'scopes', message: 'must be a list of strings' });
    if (input.api_base_url !== undefined && input.api_base_url !== null)
      checkUrl(input.api_base_url, 'api_base_url', errors);
    if (input.api_hosts !== undefined) {
      if (!input.api_hosts || typeof input.api_hosts !== 'object')
        errors.push({ field: 'api_hosts', message: 'must be an object of host name to URL' });
      else {
        for (const [name, url] of Object.entries(input.api_hosts)) {
          // Own names only: `__proto__` or `constructor` is not a host of any connector.
          if (!Object.hasOwn(connector.api.hosts ?? {}, name))
            errors.push({
              field: `api_hosts.${name}`,
              message: `is not a host of ${connector.name} (hosts: ${Object.keys(connector.api.hosts ?? {}).join(', ') || 'none'})`,
            });
          else checkUrl(url, `api_hosts.${name}`, errors);
        }
      }
    }
    if (input.oauth !== undefined) {
      if (!input.oauth || typeof input.oauth !== 'object')
        errors.push({ field: 'oauth', message: 'must be an object' });
      else {
        const allowed = oauth2 ? ['authorize_url', 'token_url'] : authKind === 'oauth2_mcp' ? ['resource'] : [];
        for (const [k, v] of Object.entries(input.oauth)) {
          if (!allowed.includes(k))
            errors.push({
              field: `oauth.${k}`,
              message: allowed.length
                ? `is not an OAuth override here (allowed: ${allowed.join(', ')})`
                : 'applies to OAuth connections only',
            });
          else checkUrl(v, `oauth.${k}`, errors);
        }
      }
    }
    if (errors.length) throw invalidInput(errors, 'connection');
    const patch: ConnectionPatch = {};
    // A null left here would have been refused above, except in api_base_url, where it removes the override.
    if (input.client_id != null) patch.clientId = input.client_id.trim();
    if (input.scopes != null) patch.scopes = scopesOf(input.scopes)!;
    if (input.api_base_url !== undefined)
      patch.apiBaseUrl = input.api_base_url ? input.api_base_url.replace(/\/+$/, '') : null;
    if (input.api_hosts != null)
      patch.apiHosts = Object.fromEntries(
        Object.entries(input.api_hosts).map(([k, v]) => [k, (v as string).replace(/\/+$/, '')]),
      );
    if (input.oauth != null) patch.oauth = input.oauth;
    if (creating && patch.scopes === undefined) {
      const auth = authFor(connector, authKind);
      patch.scopes = isOAuth2(auth) ? auth.scopes.default : [];
    }
    return patch;
  }

  /**
   * The overrides that move a connection's traffic (api_base_url, api_hosts, OAuth endpoints) may not point into
   * the service's own network: a host that is, or resolves to, a private, loopback or link-local address is refused
   * unless the operator lists it in UPSTREAM_ALLOWED_HOSTS. (Every request is guarded again: DNS may change.)
   */
  private async checkDestinations(input: ConnectionInput, what: string): Promise<void> {
    const urls: Array<[string, unknown]> = [
      ['api_base_url', input.api_base_url],
      ...Object.entries(input.api_hosts ?? {}).map(([k, v]): [string, unknown] => [`api_hosts.${k}`, v]),
      ...Object.entries(input.oauth ?? {}).map(([k, v]): [string, unknown] => [`oauth.${k}`, v]),
    ];
    const errors: FieldError[] = [];
    for (const [field, raw] of urls) {
      if (typeof raw !== 'string' || !raw) continue;
      let u: URL;
      try {
        // A host given by a template (`https://{subdomain}.example.com`) is guarded at each request instead.
        if (/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\{/i.test(raw)) continue;
        u = new URL(raw);
      } catch {
        continue;
      }
      const why = await privateDestination(u, this.s.config.upstreamAllowedHosts);
      if (why) errors.push({ field, message: `${why}; a private host must be named in UPSTREAM_ALLOWED_HOSTS` });
    }
    if (errors.length) throw invalidInput(errors, what);
  }

  /**
   * Issue 38: `auth_kinds`, the kinds a connection's users choose between on the connect page. Each must be one of
   * the connector's, once; at most one OAuth kind, and first (the connection's OAuth settings are its); with
   * `auth_kind` too, it must be the first. A list of one kind is that kind alone (no choice), as `auth_kind` is.
   */
  private checkAuthKinds(input: ConnectionInput, connector: ConnectorDefinition): string[] | undefined {
    const list = input.auth_kinds;
    if (list == null) return undefined;
    const known: string[] = connector.auth.map((a) => a.kind);
    const errors: FieldError[] = [];
    list.forEach((k, i) => {
      if (!known.includes(k))
        errors.push({ field: `auth_kinds[${i}]`, message: `must be one of: ${known.join(', ')}` });
      else if (list.indexOf(k) !== i) errors.push({ field: `auth_kinds[${i}]`, message: `repeats ${k}` });
      else if (i > 0 && isOAuthKind(k))
        errors.push({
          field: `auth_kinds[${i}]`,
          message: `${k} must come first (the connection's OAuth settings are its)`,
        });
    });
    if (input.auth_kind != null && list[0] !== input.auth_kind)
      errors.push({ field: 'auth_kind', message: `must be the first of auth_kinds (${list[0]}), or left out` });
    if (errors.length) throw invalidInput(errors, 'connection');
    return list.length > 1 ? [...list] : undefined;
  }

  async createConnection(input: ConnectionInput): Promise<Connection> {
    const connector = input.connector ? getConnector(input.connector) : undefined;
    if (!connector) {
      throw invalidInput(
        [
          {
            field: 'connector',
            message: input.connector
              ? `is not a known connector (known: ${[...connectors.keys()].join(', ')})`
              : 'is required',
          },
        ],
        'connection',
      );
    }
    const authKinds = this.checkAuthKinds(input, connector);
    const authKind = authKinds?.[0] ?? input.auth_kind ?? connector.auth[0]!.kind;
    if (!connector.auth.some((a) => a.kind === authKind)) {
      throw invalidInput(
        [{ field: 'auth_kind', message: `must be one of: ${connector.auth.map((a) => a.kind).join(', ')}` }],
        'connection',
      );
    }
    const patch = this.validateConnection(input, connector, authKind, true);
    await this.checkDestinations(input, 'connection');
    if (await this.s.store.getConnectionByName(input.connection_name!)) {
      throw new ServiceError(409, 'connection_exists', `A connection named "${input.connection_name}" already exists`);
    }
    const now = Date.now();
    const id = newId('conn');
    const connection: Connection = {
      id,
      name: input.connection_name!,
      connector: connector.name,
      authKind,
      ...(authKinds ? { authKinds } : {}),
      clientId: patch.clientId ?? null,
      clientSecretSealed: input.client_secret ? this.s.sealer.seal(input.client_secret, aad.clientSecret(id)) : null,
      scopes: patch.scopes ?? [],
      apiBaseUrl: patch.apiBaseUrl ?? null,
      apiHosts: patch.apiHosts ?? {},
      oauth: patch.oauth ?? {},
      registrationSealed: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.s.store.createConnection(connection);
    } catch (e) {
      if (await this.s.store.getConnectionByName(connection.name)) {
        throw new ServiceError(409, 'connection_exists', `A connection named "${connection.name}" already exists`);
      }
      throw e;
    }
    return connection;
  }

  async updateConnection(name: string, input: ConnectionInput): Promise<Connection> {
    const connection = await this.s.accounts.connectionByName(name);
    const connector = getConnector(connection.connector)!;
    const immutable: FieldError[] = [];
    if (input.connector != null && input.connector !== connection.connector)
      immutable.push({ field: 'connector', message: 'cannot change; create a new connection' });
    if (input.connection_name != null && input.connection_name !== connection.name)
      immutable.push({ field: 'connection_name', message: 'cannot change; clients address the connection by it' });
    if (input.auth_kind != null && input.auth_kind !== connection.authKind)
      immutable.push({ field: 'auth_kind', message: 'cannot change; create a new connection' });
    if (input.auth_kinds != null && input.auth_kinds.join(',') !== authKindsOf(connection).join(','))
      immutable.push({ field: 'auth_kinds', message: 'cannot change; create a new connection' });
    if (immutable.length) throw invalidInput(immutable, 'connection update');
    const patch = this.validateConnection(input, connector, connection.authKind, false);
    await this.checkDestinations(input, 'connection update');
    if (input.client_secret != null)
      patch.clientSecretSealed = this.s.sealer.seal(input.client_secret, aad.clientSecret(connection.id));
    if (input.oauth !== undefined && connection.authKind === 'oauth2_mcp') {
      patch.registrationSealed = null;
      forgetDiscovery(connection.id);
    }
    const updated = (await this.s.store.updateConnection(connection.id, patch, Date.now()))!;
    this.s.accounts.invalidateConnection(connection.id);
    return updated;
  }

  /**
   * Deletes a connection and its accounts, each reported by a `connected_account.deleted` event: at once for a
   * connection with fewer accounts than a batch, else in the background (runtime/jobs/connection-deletions.ts).
   * From the call on, the connection is gone for every caller and its name is free.
   */
  async deleteConnection(name: string): Promise<ConnectionDeletion> {
    const connection = await this.s.accounts.connectionByName(name);
    // Push triggers' registrations with the provider are removed while the credentials are still there.
    await this.s.push.releaseAll({ connectionId: connection.id });
    const deletion = await this.s.deletions.request(connection);
    this.s.accounts.invalidateConnection(connection.id);
    forgetDiscovery(connection.id);
    return deletion;
  }

  deletionView(d: ConnectionDeletion) {
    return {
      id: d.id,
      deleted: true as const,
      connection_name: d.connectionName,
      connector: d.connector,
      status: d.status,
      accounts_deleted: d.accountsDeleted,
      requested_at: iso(d.requestedAt),
      finished_at: isoOrNull(d.finishedAt),
    };
  }

  async getOrCreateAccount(
    connectionName: string,
    identifier: string,
  ): Promise<{ account: Account; connection: Connection; created: boolean }> {
    const connection = await this.s.accounts.connectionByName(connectionName);
    // A new account with its event in one write (one statement with the other new accounts of this turn on
    // PostgreSQL, see upsertAccount); an existing one is read.
    const pending = pendingAccount(newSortableId('ca'), connection.id, identifier);
    const inserted = await this.s.store.createAccountWithEvents(pending, [
      accountEvent('connected_account.created', pending, connection),
    ]);
    const existing = inserted ? undefined : await this.s.store.findAccount(connection.id, identifier);
    const { account, created } =
      inserted || existing
        ? { account: (inserted ?? existing)!, created: !!inserted }
        : // Deleted between the two: as before, in one transaction.
          await this.s.store.transaction(async (tx) => {
            const r = await tx.getOrCreateAccount(pendingAccount(newSortableId('ca'), connection.id, identifier));
            if (r.created) await tx.addWebhookEvent(accountEvent('connected_account.created', r.account, connection));
            return r;
          });
    if (created) this.s.webhooks.worker.poke();
    return { account, connection, created };
  }

  /**
   * Stores credentials on an account and makes it ACTIVE. Key-type connectors take the fields their YAML
   * declares; OAuth connectors accept existing tokens (for migrating accounts from elsewhere).
   * Validation happens before anything is written, so a bad request loses nothing already stored.
   */
  async upsertAccount(
    connectionName: string,
    identifier: string,
    credentials: unknown,
    verify = false,
    requestedKind?: string | null,
  ) {
    const connection = await this.s.accounts.connectionByName(connectionName);
    const connector = getConnector(connection.connector)!;
    const kind = this.upsertKind(connection, connector, credentials, requestedKind);
    // Recorded on the account only where the connection has several kinds: other accounts read as before.
    const authKind = connection.authKinds ? kind : undefined;
    const auth = authFor(connector, kind);
    let fields: Record<string, string>;
    let secrets: Record<string, string>;
    let expiresAt: number | null = null;
    if (isKeyAuth(auth)) {
      const checked = validateCredentials(auth, credentials);
      if ('errors' in checked) throw invalidInput(checked.errors, 'credentials');
      ({ fields, secrets } = checked);
    } else {
      const responseNames = isOAuth2(auth) ? (auth.token_response_fields ?? {}) : {};
      ({ fields, secrets, expiresAt } = this.checkTokenCredentials(
        credentials,
        Object.keys(responseNames),
        allowlistedFields(connector),
        responseNames,
      ));
      // An imported account must be able to work: every request needs the host its fields give (Gong's customer
      // host), so an import without it is refused now rather than saved ACTIVE to fail on every call.
      try {
        resolveBaseUrl(connector, connection, fields);
      } catch (e) {
        const missing =
          e instanceof ServiceError && e.code === 'account_incomplete' && Array.isArray(e.details)
            ? e.details[0]?.field
            : undefined;
        if (!missing) throw e;
        const alias = responseNames[missing];
        throw invalidInput(
          [
            {
              field: `credentials.${missing}`,
              message: `is required: every request of this connector goes to the host it gives${alias ? ` (the token response's ${alias}, accepted under either name)` : ''}`,
            },
          ],
          'credentials',
        );
      }
    }
    if (verify && isKeyAuth(auth) && auth.verify) {
      await this.verifyCredentials(connection, connector, auth, { ...fields, ...secrets }, fields);
    }
    // A new account is inserted ACTIVE with its credentials at once, sealed under the id it is given, with its two
    // events (created, active), all or nothing: one insert where a pending insert and an update wrote every index of
    // the accounts twice, and on PostgreSQL one statement with no transaction around it (issue 35, upserts per
    // second). The outbox is read in (created_at, id) order and ids are random: the later event a millisecond later.
    const pending = pendingAccount(newSortableId('ca'), connection.id, identifier);
    const fresh: Account = {
      ...pending,
      status: 'ACTIVE',
      fields,
      secretsSealed: this.s.accounts.sealSecrets(pending.id, secrets),
      tokenExpiresAt: expiresAt,
      version: 1,
      ...(authKind ? { authKind } : {}),
    };
    const at = Date.now();
    const created = await this.s.store.createAccountWithEvents(fresh, [
      accountEvent('connected_account.created', pending, connection, null, at),
      accountEvent('connected_account.active', fresh, connection, 'credentials stored', at + 1),
    ]);
    if (created) {
      this.s.accounts.forgetAccount(created.id);
      this.s.webhooks.worker.poke();
      return { account: created, connection };
    }
    // An existing one is updated, in one transaction with its event. (Or created here, if it was deleted meanwhile.)
    const updated = await this.s.store.transaction(async (tx) => {
      const again = pendingAccount(newSortableId('ca'), connection.id, identifier);
      const existing = await tx.findAccount(connection.id, identifier);
      const { account, created } = existing
        ? { account: existing, created: false }
        : await tx.getOrCreateAccount({
            ...again,
            status: 'ACTIVE',
            fields,
            secretsSealed: this.s.accounts.sealSecrets(again.id, secrets),
            tokenExpiresAt: expiresAt,
            version: 1,
            ...(authKind ? { authKind } : {}),
          });
      if (created) {
        const at = Date.now();
        await tx.addWebhookEvents([
          accountEvent('connected_account.created', again, connection, null, at),
          accountEvent('connected_account.active', account, connection, 'credentials stored', at + 1),
        ]);
        return account;
      }
      return (await updateAccountWithEvent(
        tx,
        account,
        connection,
        {
          status: 'ACTIVE',
          fields,
          secretsSealed: this.s.accounts.sealSecrets(account.id, secrets),
          tokenExpiresAt: expiresAt,
          lastError: null,
          ...(authKind ? { authKind } : {}),
        },
        { always: true, reason: 'credentials stored' },
      ))!;
    });
    this.s.accounts.forgetAccount(updated.id);
    this.s.webhooks.worker.poke();
    return { account: updated, connection };
  }

  /**
   * Checks imported OAuth tokens. `responseNames` maps an account field to the token response's own name for it
   * (Gong's `api_base_url_for_customer` for `api_base_url`): either name is accepted.
   */
  private checkTokenCredentials(
    credentials: unknown,
    extraFields: string[],
    allowlisted: AccountFieldSpec[],
    responseNames: Record<string, string> = {},
  ) {
    const errors: FieldError[] = [];
    if (!credentials || typeof credentials !== 'object' || Array.isArray(credentials)) {
      throw invalidInput(
        [
          {
            field: 'credentials',
            message: 'must be an object with access_token (and refresh_token, expires_in or expires_at)',
          },
        ],
        'credentials',
      );
    }
    const c = { ...(credentials as Record<string, unknown>) };
    for (const [field, alias] of Object.entries(responseNames)) {
      if (c[alias] === undefined || alias === field) continue;
      if (c[field] !== undefined && c[field] !== c[alias]) {
        errors.push({ field: `credentials.${alias}`, message: `differs from credentials.${field}; give one of them` });
      }
      c[field] ??= c[alias];
      delete c[alias];
    }
    const allowed = [
      'access_token',
      'refresh_token',
      'expires_in',
      'expires_at',
      'scope',
      'token_type',
      ...extraFields,
      ...Object.values(responseNames),
    ];
    for (const k of Object.keys(c))
      if (!allowed.includes(k))
        errors.push({ field: `credentials.${k}`, message: `is not accepted (allowed: ${allowed.join(', ')})` });
    if (typeof c.access_token !== 'string' || !c.access_token)
      errors.push({ field: 'credentials.access_token', message: 'is required' });
    if (c.refresh_token !== undefined && typeof c.refresh_token !== 'string')
      errors.push({ field: 'credentials.refresh_token', message: 'must be a string' });
    let expiresAt: number | null = null;
    if (c.expires_in !== undefined) {
      if (typeof c.expires_in !== 'number' || c.expires_in <= 0)
        errors.push({ field: 'credentials.expires_in', message: 'must be a positive number of seconds' });
      else expiresAt = Date.now() + c.expires_in * 1000;
    }
    if (c.expires_at !== undefined) {
      const t = typeof c.expires_at === 'string' ? Date.parse(c.expires_at) : NaN;
      if (Number.isNaN(t)) errors.push({ field: 'credentials.expires_at', message: 'must be an ISO 8601 date-time' });
      else expiresAt = t;
    }
    for (const f of extraFields) {
      if (c[f] === undefined) continue;
      // A field the connector's other auth kind declares with a host allowlist (callintel's api_base_url) gets the same check.
      const spec = allowlisted.find((a) => a.name === f);
      const problem = spec ? checkField(spec, c[f]) : undefined;
      if (problem) errors.push({ field: `credentials.${f}`, message: problem });
      else if (!spec) checkUrl(c[f], `credentials.${f}`, errors);
    }
    if (errors.length) throw invalidInput(errors, 'credentials');
    const secrets: Record<string, string> = { access_token: c.access_token as string };
    if (c.refresh_token) secrets.refresh_token = c.refresh_token as string;
    if (typeof c.scope === 'string') secrets.scope = c.scope;
    const fields: Record<string, string> = {};
    for (const f of extraFields) if (typeof c[f] === 'string') fields[f] = c[f].replace(/\/+$/, '');
    return { fields, secrets, expiresAt };
  }

  private async verifyCredentials(
    connection: Connection,
    connector: NonNullable<ReturnType<typeof getConnector>>,
    auth: Extract<ReturnType<typeof authFor>, { kind: 'api_key' | 'bearer' | 'basic' }>,
    values: Record<string, string>,
    fields: Record<string, string>,
  ): Promise<void> {
    const base = resolveBaseUrl(connector, connection, fields);
    const res = await send(
      {
        method: auth.verify!.method,
        url: `${base}${auth.verify!.path}`,
        headers: { accept: 'application/json', ...credentialHeaders(auth.apply, values) },
      },
      {
        connectTimeoutMs: 10_000,
        responseTimeoutMs: 20_000,
        maxBytes: 1024 * 1024,
        credentialHeaders: credentialHeaderNames(auth.apply),
        retry: { statuses: [], max_attempts: 1 },
        configuredHosts: configuredHosts(connector, connection, fields, this.s.config.upstreamAllowedHosts),
      },
    );
    if (res.status === 401 || res.status === 403) {
      throw new ServiceError(
        400,
        'invalid_credentials',
        `The provider refused these credentials (HTTP ${res.status}); nothing was saved`,
        [{ field: 'credentials', message: `were refused by the provider (HTTP ${res.status})` }],
      );
    }
    if (res.status >= 400) {
      throw new ServiceError(
        502,
        'verification_failed',
        `Checking the credentials failed: the provider answered HTTP ${res.status}; nothing was saved`,
      );
    }
  }

  /**
   * Issue 38: the auth kind an upsert's credentials are of. A connection with one kind: that kind (an `auth_kind`
   * naming another is refused). With several (`auth_kinds`): the one named, else inferred from the credentials —
   * OAuth tokens (`access_token`, `refresh_token`) are the OAuth kind's, otherwise the key kind one of whose fields
   * they carry; ambiguous or unrecognisable credentials are refused naming `auth_kind`.
   */
  private upsertKind(
    connection: Connection,
    connector: ConnectorDefinition,
    credentials: unknown,
    requested: string | null | undefined,
  ): string {
    const kinds = authKindsOf(connection);
    if (requested != null) {
      if (!kinds.includes(requested))
        throw invalidInput([{ field: 'auth_kind', message: `must be one of this connection's: ${kinds.join(', ')}` }]);
      return requested;
    }
    if (kinds.length === 1) return kinds[0]!;
    const given = credentials && typeof credentials === 'object' ? Object.keys(credentials) : [];
    const matching = kinds.filter((k) => {
      const auth = authFor(connector, k);
      if (!isKeyAuth(auth)) return given.includes('access_token') || given.includes('refresh_token');
      return auth.fields.some((f) => given.includes(f.name) && (f.required !== false || f.secret));
    });
    if (matching.length === 1) return matching[0]!;
    throw invalidInput([
      {
        field: 'auth_kind',
        message: `is required: this connection takes ${kinds.join(' or ')} credentials and ${
          matching.length ? `these fit ${matching.join(' and ')}` : 'these fit none of them'
        }`,
      },
    ]);
  }

  /** The hosted connect page's check with the provider (the auth's `verify` request), when the auth has one. */
  async verifyKeyCredentials(
    connection: Connection,
    connector: NonNullable<ReturnType<typeof getConnector>>,
    auth: Extract<ReturnType<typeof authFor>, { kind: 'api_key' | 'bearer' | 'basic' }>,
    fields: Record<string, string>,
    secrets: Record<string, string>,
  ): Promise<void> {
    if (auth.verify) await this.verifyCredentials(connection, connector, auth, { ...fields, ...secrets }, fields);
  }

  /**
   * Stores checked key credentials on the identifier's account (made if missing), which becomes ACTIVE with its
   * events: the same account, whatever state it was in (a reconnect keeps its id).
   */
  async storeKeyCredentials(
    connection: Connection,
    identifier: string,
    fields: Record<string, string>,
    secrets: Record<string, string>,
    authKind?: string,
  ) {
    const updated = await this.s.store.transaction(async (tx) => {
      const { account, created } = await tx.getOrCreateAccount(
        pendingAccount(newSortableId('ca'), connection.id, identifier),
      );
      if (created) await tx.addWebhookEvent(accountEvent('connected_account.created', account, connection));
      return (await updateAccountWithEvent(
        tx,
        account,
        connection,
        {
          status: 'ACTIVE',
          fields,
          secretsSealed: this.s.accounts.sealSecrets(account.id, secrets),
          tokenExpiresAt: null,
          lastError: null,
          ...(connection.authKinds && authKind ? { authKind } : {}),
        },
        { always: true, reason: 'credentials entered by the user on the connect page' },
      ))!;
    });
    this.s.accounts.forgetAccount(updated.id);
    this.s.webhooks.worker.poke();
    return updated;
  }

  async disconnectAccount(id: string) {
    const account = await this.s.store.getAccount(id);
    const connection = account && (await this.s.accounts.connectionById(account.connectionId));
    if (!account || !connection)
      throw new ServiceError(404, 'account_not_found', `No connected account with id "${id}"`);
    const updated = await updateAccountWithEvent(
      this.s.store,
      account,
      connection,
      { status: 'DISCONNECTED', secretsSealed: null, tokenExpiresAt: null, lastError: null },
      { always: true, reason: 'disconnected through the API or the dashboard' },
    );
    if (!updated) throw new ServiceError(404, 'account_not_found', `No connected account with id "${id}"`);
    this.s.accounts.forgetAccount(id);
    this.s.webhooks.worker.poke();
    return updated;
  }

  /** Deletes the account and writes its `connected_account.deleted` event, in one transaction. */
  async deleteAccount(id: string): Promise<void> {
    const account = await this.s.store.getAccount(id);
    const connection = account && (await this.s.accounts.connectionById(account.connectionId));
    // Push triggers' registrations with the provider are removed while the credentials are still there.
    if (account) await this.s.push.releaseAll({ accountId: account.id });
    const deleted =
      account &&
      connection &&
      (await this.s.store.transaction(async (tx) => {
        if (!(await tx.deleteAccount(id))) return false;
        await tx.addWebhookEvent(accountEvent('connected_account.deleted', account, connection, 'deleted'));
        return true;
      }));
    if (!deleted) throw new ServiceError(404, 'account_not_found', `No connected account with id "${id}"`);
    this.s.accounts.forgetAccount(id);
    this.s.webhooks.worker.poke();
  }

  parseStatus(v: string | undefined): AccountStatus | undefined {
    if (v === undefined || v === '') return undefined;
    if (!ACCOUNT_STATUSES.includes(v as AccountStatus)) {
      throw invalidInput([{ field: 'status', message: `must be one of: ${ACCOUNT_STATUSES.join(', ')}` }], 'query');
    }
    return v as AccountStatus;
  }
}
