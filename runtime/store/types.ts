import type { ChangeFeed } from './changes.ts';

/** The account lock could not be taken in time (another holder is still working). */
export class LockTimeout extends Error {
  constructor(readonly accountId: string) {
    super(`timed out waiting for the lock on account ${accountId}`);
    this.name = 'LockTimeout';
  }
}

export type AccountStatus = 'PENDING_AUTH' | 'PENDING_VERIFICATION' | 'ACTIVE' | 'EXPIRED' | 'DISCONNECTED';
export const ACCOUNT_STATUSES: readonly AccountStatus[] = [
  'PENDING_AUTH',
  'PENDING_VERIFICATION',
  'ACTIVE',
  'EXPIRED',
  'DISCONNECTED',
];

export interface ApiCredential {
  id: string;
  clientId: string;
  secretHash: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
  /** The scopes it holds (core/api/scopes.ts), or `*`: every scope, present and future (migration 010). */
  scopes: readonly string[] | '*';
  /** Only these connections; null: every connection. */
  connectionNames: readonly string[] | null;
}

/** Who did something: an API credential, a dashboard user, or the service itself (a sweep, the first start). */
export type AuditActorType = 'credential' | 'dashboard_user' | 'end_user' | 'anonymous' | 'system';

/** An audit entry as written: what the caller gives (the store numbers and chains it). */
export interface NewAuditEvent {
  id: string;
  at: number;
  actorType: AuditActorType;
  actorId: string;
  action: string;
  targetType: string;
  targetId: string;
  sourceAddress: string | null;
  requestId: string | null;
  /** What changed, by field: never a secret's value (`"set"`, `"changed"`, `"removed"` instead). */
  changes: Record<string, unknown>;
}

/** An audit entry as stored: numbered, and chained to the previous one by `prevHash`. */
export interface AuditEvent extends NewAuditEvent {
  seq: number;
  prevHash: string;
  hash: string;
}

/** The chain's state: the last entry, and the anchor (the last entry removed by retention; 0 and zeros at first). */
export interface AuditHead {
  seq: number;
  hash: string;
  anchorSeq: number;
  anchorHash: string;
}

export interface AuditQuery {
  actorId?: string;
  action?: string;
  targetId?: string;
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
  /** `desc` (newest first, the API's order) takes entries below `cursor`; `asc` above it. */
  order: 'asc' | 'desc';
  cursor?: number;
  limit: number;
}

export interface OAuthOverrides {
  authorize_url?: string;
  token_url?: string;
  /** MCP connectors: the protected resource (MCP endpoint) to discover from. */
  resource?: string;
}

export interface Connection {
  id: string;
  name: string;
  connector: string;
  authKind: string;
  /**
   * The auth kinds its users may choose between on the connect page (the first is `authKind`); absent when the
   * connection has the one kind `authKind` (migration 019).
   */
  authKinds?: string[];
  clientId: string | null;
  clientSecretSealed: string | null;
  scopes: string[];
  apiBaseUrl: string | null;
  apiHosts: Record<string, string>;
  oauth: OAuthOverrides;
  /** MCP connectors: the dynamically registered client (sealed JSON). */
  registrationSealed: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface Account {
  id: string;
  connectionId: string;
  identifier: string;
  status: AccountStatus;
  /** Non-secret credential fields (a desk domain, an email, a per-customer API base URL). */
  fields: Record<string, string>;
  /** Sealed JSON of the secret credentials (tokens, API keys). */
  secretsSealed: string | null;
  tokenExpiresAt: number | null;
  lastUsedAt: number | null;
  lastError: string | null;
  /**
   * The provider scopes granted to an OAuth account (from the token response's `scope`, else what was asked for);
   * null or absent when not recorded (every scope of the connection is assumed).
   */
  grantedScopes?: string[] | null;
  /** The auth kind it was connected with; absent or null: its connection's `authKind` (migration 019). */
  authKind?: string | null;
  /** Incremented on every credential or status change; compare-and-set guards concurrent refreshes. */
  version: number;
  createdAt: number;
  updatedAt: number;
}

export interface OAuthLink {
  tokenHash: string;
  connectionId: string;
  accountId: string;
  redirectUrl: string | null;
  expiresAt: number;
  /** Where the user's browser goes after the provider's callback, to have the client confirm the user. */
  userVerifyUrl?: string | null;
  /** When the link was first opened. */
  openedAt?: number | null;
  /** When a flow completed through it, or a newer link replaced it after it had been opened: it is spent. */
  usedAt?: number | null;
  /** The provider scopes this link asks for; null or absent: the connection's scopes. */
  scopes?: string[] | null;
  /** The link's token, sealed (`oauth_link:<hash>:token`), so that the same link can be handed out again. */
  tokenSealed?: string | null;
  /**
   * Set on a link made before its account exists (just in time, issue 38): the end user's identifier. `accountId` is
   * then the id reserved for the account, which is created when the link is completed.
   */
  identifier?: string | null;
}

/** A pending user verification: the SHA-256 of the auth_request_id given to the user's browser. */
export interface AccountVerification {
  requestHash: string;
  accountId: string;
  expiresAt: number;
  usedAt: number | null;
  /**
   * The authorization waiting for the verification: its tokens, sealed for this verification
   * (`account_verification:<hash>:secrets`), their expiry, and the non-secret fields the token response gave.
   * The account takes them only once the verification succeeds.
   */
  secretsSealed?: string | null;
  tokenExpiresAt?: number | null;
  fields?: Record<string, string> | null;
}

export interface OAuthState {
  stateHash: string;
  connectionId: string;
  accountId: string;
  verifierSealed: string;
  redirectUrl: string | null;
  expiresAt: number;
  usedAt: number | null;
  /** The link the flow started from (absent for states made before links were single-use). */
  linkHash?: string | null;
}

export interface ActivityRecord {
  id: string;
  kind: 'tool' | 'proxy';
  name: string;
  connectionName: string | null;
  accountId: string | null;
  identifier: string | null;
  status: number;
  errorCode: string | null;
  latencyMs: number;
  createdAt: number;
}

/** A person who signs in to the dashboard. */
export interface DashboardUser {
  id: string;
  username: string;
  /** scrypt hash with its parameters (runtime/dashboard/password.ts); '' for a user who signs in through OIDC only. */
  passwordHash: string;
  /** What the user may do (runtime/dashboard/roles.ts). */
  role: DashboardRole;
  /** `issuer|sub` of a user who signs in through OpenID Connect; null otherwise. */
  oidcSubject: string | null;
  createdAt: number;
  updatedAt: number;
}

export type DashboardRole = 'admin' | 'operator' | 'viewer';

/** A one-time invitation to the dashboard; only the SHA-256 of its random token is stored. */
export interface DashboardInvitation {
  id: string;
  tokenHash: string;
  username: string;
  role: DashboardRole;
  /** The username of the admin who made it. */
  createdBy: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

/** A change refused because it would leave no admin, or made to a user who does not exist. */
export type DashboardUserChange = 'ok' | 'not_found' | 'last_admin';

/** A dashboard session; only the SHA-256 of the random session id is stored. */
export interface DashboardSession {
  idHash: string;
  userId: string;
  createdAt: number;
  expiresAt: number;
}

export type McpMode = 'tools' | 'search';

/** A named MCP server configuration: which tools its MCP endpoint exposes, and how. */
export interface McpServerConfig {
  id: string;
  /** Unique among MCP servers. */
  name: string;
  /** `tools`: every configured tool is listed; `search`: two meta-tools, search_tools and execute_tool. */
  mode: McpMode;
  /** Tool names exposed explicitly. */
  tools: string[];
  /** Connection names: every tool of each one's connector is exposed, run on that connection. */
  connections: string[];
  /**
   * Where authorization links this server hands out (a tool call for an account not connected) send the user after
   * authorizing, for the application to verify that the user is the MCP URL's identifier; null: no verification.
   */
  userVerifyUrl: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface McpServerPatch {
  name?: string;
  mode?: McpMode;
  tools?: string[];
  connections?: string[];
  /** null clears it. */
  userVerifyUrl?: string | null;
}

/** A URL that reaches one MCP server for one end user; only the SHA-256 of its random token is stored. */
export interface McpUrl {
  id: string;
  serverId: string;
  identifier: string;
  tokenHash: string;
  expiresAt: number;
  revokedAt: number | null;
  createdAt: number;
  lastUsedAt: number | null;
}

/** The OAuth-protected MCP endpoint (issue 39): a server's own OpenID provider for signing end users in. */
export interface McpOAuthSettings {
  serverId: string;
  oidcIssuer: string;
  oidcClientId: string;
  /** Sealed (aad.mcpOidcClientSecret); null: a public client at the OpenID provider. */
  oidcClientSecretSealed: string | null;
  /** The ID token (or userinfo) claim whose value is the end user's identifier. */
  identifierClaim: string;
  updatedAt: number;
}

/** A client registered at the MCP authorization server by Dynamic Client Registration (RFC 7591). */
export interface McpOAuthClient {
  clientId: string;
  /** The registered metadata, as answered to the registration. */
  metadata: Record<string, unknown>;
  createdAt: number;
}

export type McpOAuthGrantKind = 'session' | 'code' | 'access' | 'refresh';

/** A secret the MCP authorization server handed out (only its SHA-256 kept), and what it grants. */
export interface McpOAuthGrant {
  id: string;
  kind: McpOAuthGrantKind;
  tokenHash: string;
  /** The grant chain: a session, its code, and the access and refresh tokens after it. */
  family: string;
  serverId: string;
  clientId: string;
  /** The end user's identifier, once signed in. */
  identifier: string | null;
  data: Record<string, unknown>;
  expiresAt: number;
  usedAt: number | null;
  revokedAt: number | null;
  createdAt: number;
}

export interface AccountQuery {
  connectionId?: string;
  identifier?: string;
  /** Substring match on the identifier (dashboard filter). */
  identifierContains?: string;
  status?: AccountStatus;
  limit: number;
  /** Opaque cursor: the id of the last account of the previous page. */
  after?: string;
}

export interface AccountPatch {
  status?: AccountStatus;
  fields?: Record<string, string>;
  secretsSealed?: string | null;
  tokenExpiresAt?: number | null;
  lastError?: string | null;
  grantedScopes?: string[] | null;
  /** The auth kind the credentials are of (a connection with several kinds, migration 019). */
  authKind?: string | null;
}

export interface ConnectionPatch {
  clientId?: string | null;
  clientSecretSealed?: string | null;
  scopes?: string[];
  apiBaseUrl?: string | null;
  apiHosts?: Record<string, string>;
  oauth?: OAuthOverrides;
  registrationSealed?: string | null;
}

/** Where account lifecycle events are sent (Standard Webhooks), with its sealed signing secret. */
export interface WebhookEndpoint {
  id: string;
  url: string;
  events: string[];
  secretSealed: string;
  createdAt: number;
  updatedAt: number;
}

/** An event in the outbox: written in the transaction of the change it reports, fanned out to endpoints later. */
/** A connection being deleted in the background (runtime/jobs/connection-deletions.ts), and after. */
export interface ConnectionDeletion {
  id: string;
  connectionId: string;
  /** The connection's name and connector when the deletion began (its name is released at once). */
  connectionName: string;
  connector: string;
  status: 'running' | 'done';
  accountsDeleted: number;
  requestedAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

export interface WebhookEvent {
  /** The Standard Webhooks message id (`webhook-id`), the same for every endpoint and every retry. */
  id: string;
  type: string;
  /** The exact JSON body sent. */
  payload: string;
  createdAt: number;
  /** Events with the same key reach each endpoint in order (a trigger instance's events). */
  orderingKey?: string | null;
}

export type TriggerStatus = 'active' | 'paused' | 'failing' | 'needs_reauth';
export const TRIGGER_STATUSES: readonly TriggerStatus[] = ['active', 'paused', 'failing', 'needs_reauth'];

/** A trigger instance (docs/triggers.md): one trigger of one connected account, with its config and feed position. */
export interface TriggerInstance {
  id: string;
  trigger: string;
  connector: string;
  kind: 'polling' | 'push';
  connectionId: string;
  accountId: string;
  config: Record<string, unknown>;
  status: TriggerStatus;
  intervalMs: number;
  /** Polling: cursor, since, ids seen; push: the registration with the provider. */
  state: Record<string, unknown>;
  /** Push: the per-instance secret (clientState, signing secret), sealed. */
  secretSealed: string | null;
  /** When it is next polled or renewed; null: never (paused, or push without renewal). */
  nextRunAt: number | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  /** Failed polls in a row. */
  failures: number;
  eventsSent: number;
  lastEventAt: number | null;
  lastPollAt: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface TriggerInstanceQuery {
  connectionId?: string;
  accountId?: string;
  trigger?: string;
  status?: TriggerStatus;
  limit: number;
  /** Opaque cursor of the last instance of the previous page. */
  after?: string;
}

export type TriggerInstancePatch = Partial<
  Pick<
    TriggerInstance,
    | 'config'
    | 'status'
    | 'intervalMs'
    | 'state'
    | 'secretSealed'
    | 'nextRunAt'
    | 'failures'
    | 'lastEventAt'
    | 'lastPollAt'
    | 'lastError'
    | 'lastErrorAt'
  >
> & { eventsSentDelta?: number };

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event for one endpoint: its retry schedule and the outcome of its last attempt. */
export interface WebhookDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
  lastLatencyMs: number | null;
  createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
}

export interface WebhookAttemptResult {
  status: WebhookDeliveryStatus;
  nextAttemptAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
  lastLatencyMs: number;
}

/** A sealed value somewhere in the store, for key rotation. */
export interface SealedCell {
  table:
    | 'mcp_oauth_settings'
    | 'connections'
    | 'connected_accounts'
    | 'oauth_states'
    | 'oauth_links'
    | 'meta'
    | 'webhook_endpoints'
    | 'account_verifications'
    | 'trigger_instances';
  column: string;
  id: string;
  value: string;
}

/**
 * Persistence, over SQLite (embedded default) or PostgreSQL (scale-out): one implementation
 * (runtime/store/sql-store.ts) and one contract test suite for both. Every method is a single atomic operation;
 * `transaction` groups several into one.
 */
export interface Store
  extends
    StoreLifecycle,
    MetaAndCredentialStore,
    AuditStore,
    ConnectionStore,
    AccountStore,
    OAuthLinkStore,
    ActivityStore,
    DashboardStore,
    McpStore,
    WebhookStore,
    TriggerStore,
    SealedStore {}

/** The store as a whole: its database, changes, migrations, transactions and checks. */
export interface StoreLifecycle {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Changes to the cached tables: made through this store (after commit), and, once `watchChanges` resolved,
   * made by other processes sharing the database (runtime/store/changes.ts).
   */
  readonly changes: ChangeFeed;
  /** Starts following changes made by other processes (PostgreSQL: LISTEN on its own connection). */
  watchChanges(): Promise<void>;
  /**
   * Starts the upkeep a long-running service does beside its requests (SQLite: WAL checkpoints on a thread of
   * their own, runtime/store/wal-checkpointer.ts; PostgreSQL: nothing, the server does its own). A problem found
   * later is reported through `onProblem`; the store goes on working.
   */
  startUpkeep(onProblem: (message: string, e: Error) => void): void;
  migrate(): Promise<void>;
  close(): Promise<void>;
  /**
   * Runs `fn` in one transaction: the writes made through `tx` commit together when `fn` resolves, and none
   * is kept when it throws or the process dies first. Inside `fn`, use `tx` only (on SQLite the transaction
   * holds the store's single connection until it ends).
   */
  transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  /** True when no sealed data exists yet (a new key may be created). */
  isEmpty(): Promise<boolean>;
  integrityCheck(): Promise<string[]>;
}

/**
 * The meta key/value rows (keys, settings), the API credentials and the failed-attempt throttles
 * (runtime/store/groups/meta-and-credentials.ts).
 */
export interface MetaAndCredentialStore {
  getMeta(key: string): Promise<string | undefined>;
  /** Sets the value only if the key is absent; returns the value now stored. */
  initMeta(key: string, value: string): Promise<string>;
  setMeta(key: string, value: string): Promise<void>;

  /** A failed-attempt throttle's state (runtime/auth/throttle.ts), or undefined when it has none. */
  getThrottle(key: string): Promise<ThrottleState | undefined>;
  /**
   * Writes `next` if the stored state is still the one read (`expectedVersion`; undefined: none stored), as one
   * compare-and-set; false when another attempt changed it first (read again and retry). `next: null` deletes.
   */
  compareAndSetThrottle(key: string, expectedVersion: number | undefined, next: ThrottleState | null): Promise<boolean>;
  /** Deletes throttle states last changed before `before`. */
  deleteStaleThrottles(before: number): Promise<void>;

  createApiCredential(c: ApiCredential): Promise<void>;
  getApiCredentialByClientId(clientId: string): Promise<ApiCredential | undefined>;
  getApiCredential(id: string): Promise<ApiCredential | undefined>;
  listApiCredentials(): Promise<ApiCredential[]>;
  revokeApiCredential(id: string, at: number): Promise<boolean>;
  countApiCredentials(): Promise<number>;
  touchApiCredential(id: string, at: number): Promise<void>;
}

/** The audit log: a hash chain of entries behind one head row (runtime/store/groups/audit.ts). */
export interface AuditStore {
  /**
   * Appends audit entries, in order, in one transaction: each numbered after the one before and chained to its hash
   * (`hashOf` computes an entry's hash from the entry and the previous hash), the batch serialised with every other
   * append through the single head row. Returns the entries as written.
   */
  appendAuditEvents(
    es: readonly NewAuditEvent[],
    hashOf: (e: Omit<AuditEvent, 'hash'>) => string,
  ): Promise<AuditEvent[]>;
  listAuditEvents(q: AuditQuery): Promise<AuditEvent[]>;
  auditHead(): Promise<AuditHead>;
  /**
   * Removes up to `batch` of the oldest entries written before `before`, and moves the anchor to the last one removed,
   * in one transaction; how many went.
   */
  pruneAuditEvents(before: number, batch: number): Promise<number>;
}

/** Connections, and their deletion in the background (runtime/store/groups/connections.ts). */
export interface ConnectionStore {
  createConnection(c: Connection): Promise<void>;
  getConnectionByName(name: string): Promise<Connection | undefined>;
  getConnection(id: string): Promise<Connection | undefined>;
  /** The connections (not those being deleted), oldest first. */
  listConnections(): Promise<Connection[]>;
  /** The same, each with its number of accounts (SQLite: counters kept by triggers; PostgreSQL: counted). */
  listConnectionsWithCounts(): Promise<Array<Connection & { accountCount: number }>>;
  updateConnection(id: string, patch: ConnectionPatch, at: number): Promise<Connection | undefined>;
  /** Deletes the connection and its accounts; returns how many accounts went with it, or undefined if absent. */
  deleteConnection(id: string): Promise<number | undefined>;
  /**
   * Starts deleting a connection in the background: in one transaction, marks it (from then on no read of the store
   * returns it, and its name is free) and records the deletion `deletion` describes. Undefined when the connection
   * does not exist or is already being deleted.
   */
  startConnectionDeletion(
    deletion: Pick<ConnectionDeletion, 'id' | 'connectionId' | 'requestedAt'>,
  ): Promise<ConnectionDeletion | undefined>;
  getConnectionDeletion(id: string): Promise<ConnectionDeletion | undefined>;
  /** The deletions not finished yet, oldest first. */
  runningConnectionDeletions(): Promise<ConnectionDeletion[]>;
  /**
   * Takes the deletion's lease for `owner` until `until`: when nobody holds it, `owner` already does, the lease
   * expired, or `ownerGone` says its holder no longer runs. False when another holds it (or it is finished).
   */
  claimConnectionDeletion(
    id: string,
    owner: string,
    now: number,
    until: number,
    ownerGone: (owner: string | null) => boolean,
  ): Promise<boolean>;
  /**
   * Deletes up to `limit` accounts of the connection, the first in `(created_at, id)` order (after `after`, the
   * last account of the batch before: a batch that read from the first would walk the index entries of every
   * account deleted before it, which PostgreSQL keeps until a vacuum), and returns them as they were. Call it on a
   * transaction, with `advanceConnectionDeletion` and the accounts' events, so that a crash keeps all of a batch or
   * none.
   */
  takeAccountsOfConnection(connectionId: string, limit: number, after?: AccountKey): Promise<Account[]>;
  /** Adds `deleted` to the deletion's progress and extends `owner`'s lease; false when `owner` lost the lease. */
  advanceConnectionDeletion(id: string, owner: string, deleted: number, at: number, until: number): Promise<boolean>;
  /**
   * Deletes the connection row once it has no accounts left, and marks the deletion done, in one transaction.
   * False when an account is still there (one created meanwhile): delete it first.
   */
  finishConnectionDeletion(id: string, owner: string, at: number): Promise<boolean>;
}

/**
 * Connected accounts: their counts, reads and writes, last use and lock (the per-request path)
 * (runtime/store/groups/accounts.ts).
 */
export interface AccountStore {
  countAccounts(connectionId: string): Promise<number>;
  /**
   * How many accounts listAccounts would give over all its pages, for the same filters: the connections (all when
   * none are given), an exact identifier, a substring of it.
   */
  countMatchingAccounts(q: {
    connectionIds?: readonly string[];
    identifier?: string;
    identifierContains?: string;
  }): Promise<number>;
  /** How many accounts have each status (statuses without accounts are left out). */
  countAccountsByStatus(): Promise<Array<{ status: string; count: number }>>;

  /**
   * Inserts new accounts in multi-row statements, in one transaction (a bulk import, and the scale bench's seeding);
   * fails on an existing (connection, identifier) and then inserts none.
   */
  insertAccounts(accounts: readonly Account[]): Promise<void>;
  /** Returns the existing account or inserts a PENDING_AUTH one; safe under concurrency. */
  getOrCreateAccount(a: Account): Promise<{ account: Account; created: boolean }>;
  /**
   * Inserts `a` and, only then, `events` (at most a few), atomically; undefined, and nothing written, when the
   * connection already has an account of that identifier. On PostgreSQL one statement (no transaction around it).
   */
  createAccountWithEvents(a: Account, events: readonly WebhookEvent[]): Promise<Account | undefined>;
  getAccount(id: string): Promise<Account | undefined>;
  findAccount(connectionId: string, identifier: string): Promise<Account | undefined>;
  listAccounts(q: AccountQuery): Promise<Account[]>;
  /** Applies the patch and bumps the version; with `expectedVersion`, only if the version still matches. */
  updateAccount(id: string, patch: AccountPatch, at: number, expectedVersion?: number): Promise<Account | undefined>;
  deleteAccount(id: string): Promise<boolean>;
  touchAccounts(lastUsed: ReadonlyMap<string, number>): Promise<void>;
  /**
   * Runs `fn` holding an exclusive lock on the account across processes (a lease row in SQLite, an advisory
   * lock in PostgreSQL). Waits up to `waitMs` for the lock.
   */
  withAccountLock<T>(id: string, fn: () => Promise<T>, waitMs?: number): Promise<T>;
}

/**
 * Authorization links, OAuth states and account verifications: the single-use rows of connecting an account
 * (runtime/store/groups/oauth-links.ts).
 */
export interface OAuthLinkStore {
  /**
   * Stores a new link; every earlier link of the same account that has been opened but not used is spent at
   * once (a newer link replaces it), in the same transaction.
   */
  createOAuthLink(l: OAuthLink): Promise<void>;
  /** The unexpired link with this hash, used or not. */
  getOAuthLink(tokenHash: string, now: number): Promise<OAuthLink | undefined>;
  /**
   * An unused link of the account that expires after `minExpiresAt`, asks for exactly `scopes` (null: the
   * connection's) and carries its sealed token and the same return URLs: one a tool call may hand out again.
   */
  findReusableOAuthLink(q: {
    /** The account's links; or, for an account not created yet, the links of the connection and identifier. */
    accountId?: string;
    connectionId?: string;
    identifier?: string;
    scopes: string[] | null;
    redirectUrl: string | null;
    userVerifyUrl: string | null;
    minExpiresAt: number;
  }): Promise<OAuthLink | undefined>;
  /** Records the first opening of a link. */
  markOAuthLinkOpened(tokenHash: string, at: number): Promise<void>;
  /** Spends the link and returns it, only if it exists and is unused and unexpired: one completion per link. */
  consumeOAuthLink(tokenHash: string, now: number): Promise<OAuthLink | undefined>;
  createOAuthState(s: OAuthState): Promise<void>;
  /** Marks the state used and returns it, only if it exists, is unused and unexpired: single use. */
  consumeOAuthState(stateHash: string, now: number): Promise<OAuthState | undefined>;
  /**
   * Deletes up to `limit` expired rows from each of the OAuth states, links and verification requests; returns how
   * many it deleted, so that a sweep calls it again, between other work, until nothing is left.
   */
  deleteExpiredOAuth(now: number, limit: number): Promise<number>;

  createAccountVerification(v: AccountVerification): Promise<void>;
  /** The unexpired, unused verification with this hash. */
  getAccountVerification(requestHash: string, now: number): Promise<AccountVerification | undefined>;
  /** Marks the verification used and returns it, only if it exists, is unused and unexpired: single use. */
  consumeAccountVerification(requestHash: string, now: number): Promise<AccountVerification | undefined>;
  /**
   * Up to `limit` accounts PENDING_VERIFICATION since before `since` that no unused, unexpired verification waits
   * for any more (an index on the pending accounts only: no scan of the others).
   */
  listExpiredVerificationWaits(since: number, now: number, limit: number): Promise<string[]>;
}

/** The activity log of tool calls and requests (runtime/store/groups/activity.ts). */
export interface ActivityStore {
  recordActivity(records: readonly ActivityRecord[]): Promise<void>;
  listActivity(limit: number, before?: number): Promise<ActivityRecord[]>;
  /** Deletes up to `limit` activity records older than `olderThan`; returns how many. */
  pruneActivity(olderThan: number, limit: number): Promise<number>;
}

/** Dashboard users and sessions (runtime/store/groups/dashboard.ts). */
export interface DashboardStore {
  /** Inserts the user unless the username is taken; true when inserted. */
  createDashboardUser(u: DashboardUser): Promise<boolean>;
  getDashboardUserByName(username: string): Promise<DashboardUser | undefined>;
  /** Replaces the password hash and ends every session of the user, in one step. */
  setDashboardPassword(userId: string, passwordHash: string, at: number): Promise<void>;
  createDashboardSession(s: DashboardSession): Promise<void>;
  /** The session with this id hash and its user's name and current role, only while unexpired. */
  getDashboardSession(
    idHash: string,
    now: number,
  ): Promise<(DashboardSession & { username: string; role: DashboardRole }) | undefined>;
  deleteDashboardSession(idHash: string): Promise<boolean>;
  deleteExpiredDashboardSessions(now: number): Promise<void>;

  // Dashboard users and invitations (issue 37, item 4).
  /** Every dashboard user, by username. */
  listDashboardUsers(): Promise<DashboardUser[]>;
  getDashboardUser(id: string): Promise<DashboardUser | undefined>;
  getDashboardUserBySubject(oidcSubject: string): Promise<DashboardUser | undefined>;
  /** Changes a user's role, refused when it would demote the last admin (checked and written in one step). */
  setDashboardUserRole(id: string, role: DashboardRole, at: number): Promise<DashboardUserChange>;
  /** Removes a user and ends their sessions, refused when they are the last admin. */
  deleteDashboardUser(id: string): Promise<DashboardUserChange>;
  createDashboardInvitation(i: DashboardInvitation): Promise<void>;
  /** The invitation with this token hash while unused and unexpired. */
  getDashboardInvitation(tokenHash: string, now: number): Promise<DashboardInvitation | undefined>;
  /** Invitations neither used nor expired, newest first. */
  listDashboardInvitations(now: number): Promise<DashboardInvitation[]>;
  deleteDashboardInvitation(id: string): Promise<boolean>;
  /**
   * Uses the invitation (once: it must be unused and unexpired) and creates its user, in one step: 'invalid' when
   * the invitation is not usable, 'taken' when its username exists by now (the invitation stays unused then).
   */
  acceptDashboardInvitation(tokenHash: string, user: DashboardUser, now: number): Promise<'ok' | 'invalid' | 'taken'>;
}

/** MCP servers and their URLs (runtime/store/groups/mcp.ts). */
export interface McpStore {
  /** Inserts the server unless its name is taken; true when inserted. */
  createMcpServer(s: McpServerConfig): Promise<boolean>;
  getMcpServer(id: string): Promise<McpServerConfig | undefined>;
  getMcpServerByName(name: string): Promise<McpServerConfig | undefined>;
  /** Every MCP server, oldest first, with the number of its URLs neither revoked nor expired at `now`. */
  listMcpServers(now: number): Promise<Array<McpServerConfig & { activeUrls: number }>>;
  /** Applies the patch; `name_taken` when the new name is another server's, undefined when absent. */
  updateMcpServer(id: string, patch: McpServerPatch, at: number): Promise<McpServerConfig | 'name_taken' | undefined>;
  /** Deletes the server and its URLs; false when absent. */
  deleteMcpServer(id: string): Promise<boolean>;
  createMcpUrl(u: McpUrl): Promise<void>;
  /** The server's URLs, newest first (revoked and expired ones included). */
  listMcpUrls(serverId: string): Promise<McpUrl[]>;
  /** The URL with this token hash and its server, whatever its state (the caller checks revocation and expiry). */
  findMcpUrl(tokenHash: string): Promise<{ url: McpUrl; server: McpServerConfig } | undefined>;
  /** Marks the URL revoked, only if it belongs to the server and is not revoked yet. */
  revokeMcpUrl(serverId: string, urlId: string, at: number): Promise<boolean>;
  /** Sets the URL's last use, unless a later one is stored. */
  touchMcpUrl(id: string, at: number): Promise<void>;

  // The OAuth-protected MCP endpoint (issue 39).
  getMcpOAuthSettings(serverId: string): Promise<McpOAuthSettings | undefined>;
  /** Replaces a server's OpenID provider settings; null removes them. */
  setMcpOAuthSettings(serverId: string, settings: McpOAuthSettings | null): Promise<void>;
  createMcpOAuthClient(c: McpOAuthClient): Promise<void>;
  getMcpOAuthClient(clientId: string): Promise<McpOAuthClient | undefined>;
  createMcpOAuthGrant(g: McpOAuthGrant): Promise<void>;
  findMcpOAuthGrant(tokenHash: string): Promise<McpOAuthGrant | undefined>;
  /** Marks a grant used unless it was: true for the one caller that spends it. */
  useMcpOAuthGrant(id: string, at: number): Promise<boolean>;
  /** Records the signed-in identifier and new data on a session. */
  updateMcpOAuthSession(id: string, identifier: string, data: Record<string, unknown>): Promise<void>;
  /** Revokes every grant of a family not revoked yet; how many. */
  revokeMcpOAuthFamily(family: string, at: number): Promise<number>;
  /** Deletes up to `limit` grants that expired before `before`; how many. */
  deleteExpiredMcpOAuthGrants(before: number, limit: number): Promise<number>;
}

/** Where an account stands in the `(created_at, id)` order a connection's accounts are paged and deleted in. */
export interface AccountKey {
  createdAt: number;
  id: string;
}

/** Webhook endpoints, the event outbox and the deliveries (runtime/store/groups/webhooks.ts). */
export interface WebhookStore {
  createWebhookEndpoint(e: WebhookEndpoint): Promise<void>;
  getWebhookEndpoint(id: string): Promise<WebhookEndpoint | undefined>;
  listWebhookEndpoints(): Promise<WebhookEndpoint[]>;
  updateWebhookEndpoint(
    id: string,
    patch: { url?: string; events?: string[]; secretSealed?: string },
    at: number,
  ): Promise<WebhookEndpoint | undefined>;
  deleteWebhookEndpoint(id: string): Promise<boolean>;
  /** Adds an event to the outbox; call it on the transaction that makes the change the event reports. */
  addWebhookEvent(e: WebhookEvent): Promise<void>;
  /** Adds several events in multi-row inserts (a statement per few hundred events, not one per event). */
  addWebhookEvents(events: readonly WebhookEvent[]): Promise<void>;
  /**
   * Moves up to `limit` outbox events into deliveries, one per endpoint subscribed to the event's type, in one
   * transaction; events several instances look at together go to one of them (SKIP LOCKED on PostgreSQL, the
   * single writer on SQLite). Returns how many events it took.
   */
  fanOutWebhookEvents(limit: number, now: number): Promise<number>;
  /**
   * Claims up to `limit` pending deliveries due at `now` for `leaseMs`: their attempt count goes up and their next
   * attempt moves past the lease, so no other instance takes them meanwhile; a claimer that dies leaves them due
   * again when the lease ends.
   */
  claimWebhookDeliveries(now: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]>;
  finishWebhookAttempt(id: string, result: WebhookAttemptResult, at: number): Promise<void>;
  getWebhookDelivery(id: string): Promise<WebhookDelivery | undefined>;
  /** Newest first; `before` is the created_at and id of the last one of the previous page. */
  listWebhookDeliveries(
    endpointId: string,
    limit: number,
    before?: { createdAt: number; id: string },
  ): Promise<WebhookDelivery[]>;
  /** Makes the delivery pending and due at `now` again (whatever its status); undefined when it does not exist. */
  redeliverWebhook(id: string, now: number): Promise<WebhookDelivery | undefined>;
}

/** Trigger instances and their leases (runtime/store/groups/triggers.ts). */
export interface TriggerStore {
  createTriggerInstance(t: TriggerInstance): Promise<void>;
  getTriggerInstance(id: string): Promise<TriggerInstance | undefined>;
  /** Oldest first, keyset pages (`after` is the cursor of the last one of the previous page). */
  listTriggerInstances(q: TriggerInstanceQuery): Promise<TriggerInstance[]>;
  /**
   * Applies the patch; with `leaseOwner`, only while that owner holds the instance's lease (and releases it).
   * Undefined when absent or the lease was lost.
   */
  updateTriggerInstance(
    id: string,
    patch: TriggerInstancePatch,
    at: number,
    leaseOwner?: string,
  ): Promise<TriggerInstance | undefined>;
  deleteTriggerInstance(id: string): Promise<boolean>;
  /**
   * Leases up to `limit` instances due at `now` (next_run_at ≤ now, lease free or expired) to `owner` until
   * `until`, soonest first; several processes claim together without taking the same one (SKIP LOCKED on
   * PostgreSQL, the single writer on SQLite). `skip` names connectors not to claim now (at their limit).
   */
  claimDueTriggerInstances(
    now: number,
    owner: string,
    until: number,
    limit: number,
    skip?: readonly string[],
  ): Promise<TriggerInstance[]>;
  /** When the soonest instance is due (null: none is). */
  nextTriggerDue(): Promise<number | null>;

  // Push triggers (issue 41, migration 016): the connection's ingress token and app-webhook routing.
  /** The connection's ingress token: the one stored, or `candidate` stored now if there was none. */
  triggerIngressToken(connectionId: string, candidate: string, now: number): Promise<string>;
  /** The connection whose ingress token this is. */
  triggerIngressConnection(token: string): Promise<string | undefined>;
  /** Sets the value an app webhook names the instance's account by (null: none). */
  setTriggerRouteKey(id: string, routeKey: string | null): Promise<void>;
  /** Push instances of a connection whose route key is this (at most `limit`, oldest first). */
  triggerInstancesByRoute(connectionId: string, routeKey: string, limit: number): Promise<TriggerInstance[]>;
  /** Push instances of an account or a connection (for removing their registrations first), at most `limit`. */
  pushTriggerInstances(q: { accountId?: string; connectionId?: string }, limit: number): Promise<TriggerInstance[]>;
}

/** Every sealed value, page by page, for re-sealing under a new key (runtime/store/groups/sealed.ts). */
export interface SealedStore {
  /**
   * A page of sealed values, in a fixed order over every sealed column and the sealed meta keys: those after
   * `after` (the last cell of the previous page), `limit` at most. An empty page is the end.
   */
  listSealed(after: SealedCell | undefined, limit: number): Promise<SealedCell[]>;
  /** Replaces a sealed value only if it still equals `previous`. */
  replaceSealed(cell: SealedCell, previous: string): Promise<boolean>;
}

/** A failed-attempt throttle's state: attempts counted, when the last was, until when it is blocked. */
export interface ThrottleState {
  count: number;
  lastAt: number;
  blockedUntil: number;
  version: number;
}

/** The store's reads and writes, bound to one transaction. */
export type StoreTransaction = Omit<
  Store,
  | 'kind'
  | 'migrate'
  | 'close'
  | 'transaction'
  | 'integrityCheck'
  | 'withAccountLock'
  | 'changes'
  | 'watchChanges'
  | 'startUpkeep'
>;

/** A new connected account that has no credentials yet. */
export function pendingAccount(id: string, connectionId: string, identifier: string, now = Date.now()): Account {
  return {
    id,
    connectionId,
    identifier,
    status: 'PENDING_AUTH',
    fields: {},
    secretsSealed: null,
    tokenExpiresAt: null,
    lastUsedAt: null,
    lastError: null,
    version: 0,
    createdAt: now,
    updatedAt: now,
  };
}
