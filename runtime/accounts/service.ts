import type { AuthSpec, CredentialApply } from '../../core/spec-model.ts';
import { updateAccountWithEvent } from '../webhooks/events.ts';
import { checkConnection } from '../auth/service-auth.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { DecryptError, type Sealer } from '../crypto/sealer.ts';
import { aad } from '../crypto/aad.ts';
import { LockTimeout, type Account, type Connection, type Store } from '../store/types.ts';
import { RowCache } from '../store/cache.ts';
import type { BoundedCache, CacheSet } from '../caches.ts';
import type { Change } from '../store/changes.ts';
import type { ConnectorDefinition } from '../../core/tool-types.ts';
import {
  accountAuthKind,
  authFor,
  configuredHosts,
  credentialHeaders,
  getConnector,
  isOAuthKind,
  resolveBaseUrl,
} from '../connectors/catalog.ts';
import { notFound, ServiceError, UpstreamFailure } from '../../core/errors.ts';
import { endpointsFor, registrationWriter, type OAuthEndpoints } from '../oauth/endpoints.ts';
import { refreshTokens, TokenRequestError } from '../oauth/tokens.ts';
import { RefreshPacer } from './refresh-pacer.ts';

export type Secrets = Record<string, string>;

export interface AccountRef {
  connectedAccountId?: string;
  connectionName?: string;
  identifier?: string;
}

export interface ResolvedAccount {
  account: Account;
  connection: Connection;
  connector: ConnectorDefinition;
  auth: AuthSpec;
}

export interface LiveAccount extends ResolvedAccount {
  secrets: Secrets;
  /** Non-secret fields and secrets together, for credential templates. */
  values: Record<string, string>;
}

export function notActiveError(account: Account): ServiceError {
  switch (account.status) {
    case 'PENDING_AUTH':
      return new ServiceError(
        409,
        'account_not_authorized',
        `Connected account ${account.id} is PENDING_AUTH: it has no credentials yet. Send the user an authorization link (OAuth) or upsert its credentials (API key).`,
      );
    case 'PENDING_VERIFICATION':
      return new ServiceError(
        409,
        'account_pending_verification',
        `Connected account ${account.id} is PENDING_VERIFICATION: the user authorized it, and your application has not yet confirmed the user (POST /v1/connected-accounts/verify).`,
      );
    case 'EXPIRED':
      return new ServiceError(
        409,
        'account_expired',
        `Connected account ${account.id} is EXPIRED${account.lastError ? ` (${account.lastError})` : ''}. Send the user a new authorization link to reconnect it.`,
      );
    default:
      return new ServiceError(
        409,
        'account_disconnected',
        `Connected account ${account.id} is ${account.status}; reconnect it before use.`,
      );
  }
}

const accountKey = (a: Pick<Account, 'connectionId' | 'identifier'>) => `${a.connectionId}\u0000${a.identifier}`;

/**
 * What is opened from an account's sealed credentials, for one row object (the row cache hands out the same object
 * until the row changes), connection and auth: the secrets, the values for credential templates, and the headers
 * made from them by way of applying them.
 */
interface OpenedCredentials {
  live: LiveAccount;
  headers: WeakMap<CredentialApply, Record<string, string>>;
}

/**
 * Connected accounts at run time: lookups, the sealed-secret cache, and token refresh — proactive before
 * expiry, reactive after an upstream 401, single-flight per account in this process and under the store's
 * cross-process account lock, with a re-read inside the lock so a concurrent refresh is reused, not repeated.
 *
 * Connections and accounts are read once and kept in bounded LRUs until the store announces a change to them
 * (RowCache over the store's change feed): a write through this process is seen by the next call, one through
 * another process on the same database within the notification delay (PostgreSQL) or before the next read
 * (SQLite). Decrypted credentials are kept in an LRU of their own, with a time to live. Every cache is keyed by
 * the account id, so forgetting an account is O(1) whatever the caches hold (docs/scale.md). A token refresh
 * always re-reads the account and the connection inside the account lock.
 */
export class AccountService {
  private connections: RowCache<Connection>;
  private accounts: RowCache<Account>;
  /**
   * An account row object's hosts (configuredHostsFor) and base URLs by host (baseUrlFor, `''` for the default),
   * with the connection object they were made for; kept as long as the row object is, like `resolvedFor` below.
   */
  private derived = new WeakMap<Account, { connection: Connection; hosts?: string[]; baseUrls: Map<string, string> }>();
  /** Decrypted credentials by account id: bounded, and dropped `secretsTtlMs` after they were opened. */
  private credentials: BoundedCache<string, OpenedCredentials>;
  /**
   * What resolve() built for an account row, kept as long as that row object is (the row cache hands out the same
   * object until the row changes): a cached call allocates nothing. Used only with the same connection object, so
   * a changed connection is seen too. Nobody modifies these objects.
   */
  private resolvedFor = new WeakMap<Account, ResolvedAccount>();
  private refreshing = new Map<string, Promise<Account>>();
  private lastUsed = new Map<string, number>();
  /** Counts refresh requests sent to providers (tests and benchmarks read it). */
  refreshCount = 0;
  /** Paces the refreshes of a connection whose token endpoint refuses or fails most of them (refresh-pacer.ts). */
  readonly pacer: RefreshPacer;
  /** Where refresh outcomes are counted (set by createServices). */
  metrics?: Metrics;

  constructor(
    private store: Store,
    private sealer: Sealer,
    private config: Config,
    private log: Logger,
    caches: CacheSet,
  ) {
    this.connections = new RowCache(store.changes, caches, 'connections', config.caches.connections, (c) => c.name);
    this.accounts = new RowCache<Account>(store.changes, caches, 'accounts', config.caches.accounts, accountKey);
    this.credentials = caches.create('credentials', {
      max: config.caches.secrets,
      ttlMs: config.caches.secretsTtlMs,
    });
    this.pacer = new RefreshPacer(config.refreshPacing, caches, config.caches.connections);
    store.changes.subscribe((c) => this.onChange(c));
  }

  private onChange(change: Change): void {
    if (change.table === '*') {
      this.connections.clear();
      this.accounts.clear();
      this.credentials.clear();
    } else if (change.table === 'connections') {
      if (change.id === '*') this.connections.clear();
      else this.invalidateConnection(change.id);
    } else if (change.table === 'connected_accounts') {
      if (change.id === '*') {
        this.accounts.clear();
        this.credentials.clear();
      } else this.forgetAccount(change.id);
    }
  }

  /** Drops a connection from the cache (the store announces every change; this is for a caller that knows first). */
  invalidateConnection(id: string): void {
    this.connections.invalidate(id);
  }

  private keepConnection(connection: Connection, generation: number): void {
    this.connections.keep(connection, generation);
  }

  async connectionById(id: string, scope?: object): Promise<Connection | undefined> {
    const cached = this.connections.get(id, scope);
    if (cached) return cached;
    const generation = this.connections.current;
    const connection = await this.store.getConnection(id);
    if (connection) this.keepConnection(connection, generation);
    return connection;
  }

  async connectionByName(name: string, scope?: object): Promise<Connection> {
    const cached = this.connections.getByKey(name, scope);
    if (cached) return cached;
    const generation = this.connections.current;
    const connection = await this.store.getConnectionByName(name);
    if (!connection) throw new ServiceError(404, 'connection_not_found', `No connection named "${name}"`);
    this.keepConnection(connection, generation);
    return connection;
  }

  /** The account as last stored (cached like connections). */
  async accountById(id: string, scope?: object): Promise<Account | undefined> {
    const cached = this.accounts.get(id, scope);
    if (cached) return cached;
    const generation = this.accounts.current;
    const account = await this.store.getAccount(id);
    if (account) this.accounts.keep(account, generation);
    return account;
  }

  async findAccount(connectionId: string, identifier: string, scope?: object): Promise<Account | undefined> {
    const cached = this.accounts.getByKey(accountKey({ connectionId, identifier }), scope);
    if (cached) return cached;
    const generation = this.accounts.current;
    const account = await this.store.findAccount(connectionId, identifier);
    if (account) this.accounts.keep(account, generation);
    return account;
  }

  /**
   * The account and its connection. `scope`, the request being served: the store's change feed is polled once for
   * it (runtime/store/changes.ts, `pollOnce`), not once per read.
   */
  async resolve(ref: AccountRef, requestScope?: object): Promise<ResolvedAccount> {
    let account: Account | undefined;
    let connection: Connection | undefined;
    // Without a request to scope it to, this call is the scope: one look at the feed for both reads.
    const scope = requestScope ?? {};
    if (ref.connectedAccountId) {
      account = await this.accountById(ref.connectedAccountId, scope);
      if (!account)
        throw new ServiceError(404, 'account_not_found', `No connected account with id "${ref.connectedAccountId}"`);
      connection = await this.connectionById(account.connectionId, scope);
    } else if (ref.connectionName && ref.identifier !== undefined) {
      connection = await this.connectionByName(ref.connectionName, scope);
      account = await this.findAccount(connection.id, ref.identifier, scope);
      if (!account) {
        throw new ServiceError(
          404,
          'account_not_found',
          `No connected account "${ref.identifier}" on connection "${ref.connectionName}"`,
        );
      }
    } else {
      throw new ServiceError(400, 'invalid_input', 'Give connected_account_id, or connection_name and identifier', [
        { field: 'connected_account_id', message: 'is required (or connection_name and identifier)' },
      ]);
    }
    if (!connection) throw notFound('Connection');
    // A credential restricted to named connections reaches no other (the request carries its token's claims).
    checkConnection(requestScope, connection.name);
    const known = this.resolvedFor.get(account);
    if (known?.connection === connection) return known;
    const connector = getConnector(connection.connector);
    if (!connector)
      throw new ServiceError(500, 'internal_error', `Connection uses unknown connector ${connection.connector}`);
    const resolved = { account, connection, connector, auth: authFor(connector, accountAuthKind(connection, account)) };
    this.resolvedFor.set(account, resolved);
    return resolved;
  }

  /** Decrypts an account's credentials (not cached: see withSecrets, which keeps what it opens). */
  openSecrets(account: Account): Secrets {
    if (!account.secretsSealed) return {};
    let secrets: Secrets;
    try {
      secrets = JSON.parse(this.sealer.open(account.secretsSealed, aad.accountSecrets(account.id))) as Secrets;
    } catch (e) {
      if (!(e instanceof DecryptError)) throw e;
      this.log.error({ account: account.id, reason: e.message }, 'stored credentials do not decrypt');
      throw new ServiceError(
        409,
        'credentials_unreadable',
        `The stored credentials of connected account ${account.id} cannot be decrypted: they were altered, copied from another record, or sealed with a key this service does not have. Upsert its credentials or send the user a new authorization link; an operator can list affected records with "npm run keys -- verify".`,
      );
    }
    return secrets;
  }

  sealSecrets(accountId: string, secrets: Secrets): string {
    return this.sealer.seal(JSON.stringify(secrets), aad.accountSecrets(accountId));
  }

  /** Drops everything cached for the account: O(1) (a delete in each cache keyed by account id). */
  forgetAccount(id: string): void {
    this.accounts.invalidate(id);
    this.credentials.delete(id);
  }

  /** Marks the account used; flushed to the store in batches. */
  touch(id: string): void {
    this.lastUsed.set(id, Date.now());
  }

  async flushTouches(): Promise<void> {
    if (!this.lastUsed.size) return;
    const batch = this.lastUsed;
    this.lastUsed = new Map();
    await this.store.touchAccounts(batch);
  }

  private needsRefresh(account: Account): boolean {
    return (
      account.tokenExpiresAt !== null && account.tokenExpiresAt - this.config.refreshMarginSeconds * 1000 <= Date.now()
    );
  }

  /** An ACTIVE account with usable credentials; refreshes an OAuth token that is (nearly) expired. */
  async live(resolved: ResolvedAccount): Promise<LiveAccount> {
    let { account } = resolved;
    if (account.status !== 'ACTIVE') throw notActiveError(account);
    if (isOAuthKind(resolved.auth.kind) && this.needsRefresh(account)) {
      try {
        account = await this.refresh(resolved, account);
      } catch (e) {
        // A token that has not actually expired yet is still usable when the provider is briefly down.
        const stillValid = account.tokenExpiresAt !== null && account.tokenExpiresAt > Date.now() + 5_000;
        if (!(e instanceof UpstreamFailure) || !stillValid) throw e;
        this.log.warn(
          { account: account.id, code: e.code },
          'proactive refresh failed; using the current token until it expires',
        );
      }
    }
    return this.withSecrets({ ...resolved, account });
  }

  withSecrets(resolved: ResolvedAccount): LiveAccount {
    return this.opened(resolved).live;
  }

  /** The account's opened credentials, from the cache when they were opened for these very objects. */
  private opened(resolved: ResolvedAccount): OpenedCredentials {
    const known = this.credentials.get(resolved.account.id);
    if (
      known !== undefined &&
      known.live.account === resolved.account &&
      known.live.connection === resolved.connection &&
      known.live.auth === resolved.auth
    )
      return known;
    const secrets = this.openSecrets(resolved.account);
    // Every key written out: a spread followed by new keys would give each account's object a hidden class of its
    // own on Node 20 (see upstream/http.ts), and every function it reaches a megamorphic property access.
    const live: LiveAccount = {
      account: resolved.account,
      connection: resolved.connection,
      connector: resolved.connector,
      auth: resolved.auth,
      secrets,
      values: { ...resolved.account.fields, ...secrets },
    };
    const opened: OpenedCredentials = { live, headers: new WeakMap() };
    // Only a row the cache holds: one read outside it (a refresh's) must not replace the cached row's entry.
    if (this.accounts.peek(resolved.account.id) === resolved.account) this.credentials.set(resolved.account.id, opened);
    return opened;
  }

  /**
   * The headers carrying an account's credentials, computed once per account version and way of applying
   * them (a Basic header is a base64 encoding; there is no need to redo it on every call).
   */
  credentialHeadersFor(live: LiveAccount, apply: CredentialApply = live.auth.apply): Record<string, string> {
    const known = this.credentials.peek(live.account.id);
    const byApply = known?.live === live ? known.headers : undefined;
    let headers = byApply?.get(apply);
    if (!headers) {
      headers = credentialHeaders(apply, live.values);
      byApply?.set(apply, headers);
    }
    return headers;
  }

  /** What is derived from an account row and its connection, for these objects (see `derived`). */
  private derivedFor(resolved: ResolvedAccount) {
    let d = this.derived.get(resolved.account);
    if (d?.connection !== resolved.connection) {
      d = { connection: resolved.connection, baseUrls: new Map() };
      this.derived.set(resolved.account, d);
    }
    return d;
  }

  /** The hosts an account's requests may reach without the public-address guard, cached like base URLs. */
  configuredHostsFor(resolved: ResolvedAccount): string[] {
    const d = this.derivedFor(resolved);
    return (d.hosts ??= configuredHosts(
      resolved.connector,
      resolved.connection,
      resolved.account.fields,
      this.config.upstreamAllowedHosts,
    ));
  }

  /**
   * An account's resolved base URL for a host, cached for its row and connection objects: a changed row or
   * connection is a new object (the row caches hand out the same object until the row changes), so nothing is
   * computed, and no key is built and hashed, on a call that finds it.
   */
  baseUrlFor(resolved: ResolvedAccount, host?: string): string {
    const urls = this.derivedFor(resolved).baseUrls;
    const key = host ?? '';
    let url = urls.get(key);
    if (url === undefined) {
      url = resolveBaseUrl(resolved.connector, resolved.connection, resolved.account.fields, host);
      // The hosts a connector's tools name are few; anything more is cleared rather than kept.
      if (urls.size >= 100) urls.clear();
      urls.set(key, url);
    }
    return url;
  }

  /** Whether an upstream 401 can be answered with a token refresh (see upstream/refresh.ts). */
  canRefresh(live: LiveAccount): boolean {
    return isOAuthKind(live.auth.kind);
  }

  /** The account with a refreshed token, after the provider refused the current one (an upstream 401). */
  async refreshAfterUnauthorized(live: LiveAccount): Promise<LiveAccount> {
    const account = await this.refresh(live, live.account, 'unauthorized');
    return this.withSecrets({ ...live, account });
  }

  /**
   * Refreshes the account's token once, however many callers ask at the same time. `seen` is the account
   * as the caller saw it: if the stored version moved on meanwhile, another refresh already happened.
   */
  refresh(resolved: ResolvedAccount, seen: Account, reason: 'expiry' | 'unauthorized' = 'expiry'): Promise<Account> {
    const inflight = this.refreshing.get(seen.id);
    if (inflight) return inflight;
    const p = this.pacer
      .run(resolved.connection.id, () =>
        this.store.withAccountLock(seen.id, () => this.refreshLocked(resolved, seen, reason)),
      )
      .catch((e: unknown) => {
        if (e instanceof LockTimeout) {
          throw new UpstreamFailure(
            'account_busy',
            `Another token refresh of account ${seen.id} is still running; try again shortly`,
            503,
          );
        }
        throw e;
      })
      .finally(() => this.refreshing.delete(seen.id));
    this.refreshing.set(seen.id, p);
    return p;
  }

  private async refreshLocked(
    resolved: ResolvedAccount,
    seen: Account,
    reason: 'expiry' | 'unauthorized',
  ): Promise<Account> {
    const current = await this.store.getAccount(seen.id);
    if (!current) throw new ServiceError(404, 'account_not_found', `Connected account ${seen.id} was deleted`);
    if (current.status !== 'ACTIVE') throw notActiveError(current);
    if (current.version !== seen.version && (reason === 'unauthorized' || !this.needsRefresh(current))) return current;
    const secrets = this.openSecrets(current);
    if (!secrets.refresh_token) {
      const expired = await updateAccountWithEvent(
        this.store,
        current,
        resolved.connection,
        { status: 'EXPIRED', lastError: 'The access token expired and the provider issued no refresh token' },
        { expectedVersion: current.version },
      );
      throw notActiveError(expired ?? current);
    }
    // The connection is read fresh: a refresh is rare, and must use the client secret and endpoints as they
    // are now (an operator may have changed them through another instance), not a cached copy.
    const connection = (await this.store.getConnection(resolved.connection.id)) ?? resolved.connection;
    const ep: OAuthEndpoints = await endpointsFor(resolved.connector, connection, {
      sealer: this.sealer,
      publicUrl: this.config.publicUrl,
      upstreamAllowedHosts: this.config.upstreamAllowedHosts,
      updateRegistration: registrationWriter(this.store, (id) => this.invalidateConnection(id)),
    });
    this.refreshCount++;
    try {
      const tokens = await refreshTokens(ep, secrets.refresh_token);
      const next: Secrets = {
        ...secrets,
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token ?? secrets.refresh_token,
      };
      if (tokens.token_type) next.token_type = tokens.token_type;
      if (tokens.scope) next.scope = tokens.scope;
      // The new refresh token, access token and expiry are written in one compare-and-set update. If the
      // write is refused because something unrelated changed the account meanwhile (a last_error, a field),
      // the tokens are written again on top of it: a rotated refresh token must never be lost. Only when the
      // stored credentials themselves changed does the other writer win.
      let base = current;
      let updated: Account | undefined;
      for (let attempt = 0; attempt < 5 && !updated; attempt++) {
        updated = await this.store.updateAccount(
          base.id,
          {
            secretsSealed: this.sealSecrets(base.id, next),
            tokenExpiresAt: tokens.expiresAt,
            fields: { ...base.fields, ...tokens.fields },
            lastError: null,
          },
          Date.now(),
          base.version,
        );
        if (updated) break;
        const again = await this.store.getAccount(base.id);
        if (!again)
          throw new ServiceError(
            404,
            'account_not_found',
            `Connected account ${base.id} was deleted during its token refresh`,
          );
        if (again.secretsSealed !== current.secretsSealed || again.status !== 'ACTIVE') return again;
        base = again;
      }
      if (!updated)
        throw new UpstreamFailure(
          'refresh_conflict',
          `The refreshed tokens of account ${current.id} could not be stored; try again`,
          503,
        );
      this.pacer.record(resolved.connection.id, 'success');
      this.metrics?.tokenRefresh(resolved.connector.name, 'success');
      this.log.info({ account: current.id, reason }, 'refreshed access token');
      return updated;
    } catch (e) {
      if (!(e instanceof TokenRequestError)) throw e;
      this.pacer.record(resolved.connection.id, e.kind === 'invalid_grant' ? 'refused' : 'failed');
      if (e.kind === 'invalid_grant') {
        // EXPIRED only if the stored account is still the one whose refresh token was refused (a compare-and-set on
        // its version): if it changed meanwhile (another refresh stored new tokens), this was a race, not a
        // revocation, and the account as it is now is the answer.
        const message = `The provider refused the refresh token (${e.message})`;
        const expired = await updateAccountWithEvent(
          this.store,
          current,
          resolved.connection,
          { status: 'EXPIRED', lastError: message },
          { expectedVersion: current.version },
        );
        if (!expired) {
          const again = await this.store.getAccount(current.id);
          if (again && again.version !== current.version) return again;
        }
        this.metrics?.tokenRefresh(resolved.connector.name, 'expired');
        this.log.warn({ account: current.id }, 'refresh token refused; account marked EXPIRED');
        throw notActiveError(expired ?? { ...current, status: 'EXPIRED', lastError: message });
      }
      this.metrics?.tokenRefresh(resolved.connector.name, 'failed');
      await this.store.updateAccount(
        current.id,
        { lastError: `Token refresh failed: ${e.message}` },
        Date.now(),
        current.version,
      );
      if (e.kind === 'rejected') {
        throw new UpstreamFailure(
          'refresh_rejected',
          `The provider's token endpoint rejected the refresh request (${e.message}); check the connection's client credentials`,
          502,
        );
      }
      throw new UpstreamFailure(
        'refresh_failed',
        `Token refresh failed and will be retried on the next call: ${e.message}`,
        503,
      );
    }
  }
}
