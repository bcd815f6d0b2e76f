import type {
  Account,
  AccountStatus,
  AccountVerification,
  ActivityRecord,
  ApiCredential,
  AuditActorType,
  AuditEvent,
  Connection,
  ConnectionDeletion,
  DashboardSession,
  DashboardUser,
  DashboardRole,
  DashboardInvitation,
  McpOAuthClient,
  McpOAuthGrant,
  McpOAuthGrantKind,
  McpOAuthSettings,
  McpServerConfig,
  McpUrl,
  OAuthLink,
  OAuthState,
  SealedCell,
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  TriggerInstance,
  TriggerStatus,
} from './types.ts';

/** Row ↔ record mapping shared by both stores (same column names and JSON-in-TEXT columns). */
export type Row = Record<string, unknown>;

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v));
const str = (v: unknown): string => String(v);
// eslint-disable-next-line @typescript-eslint/no-base-to-string -- a column value is a scalar; String() is its text form
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

export const toCredential = (r: Row): ApiCredential => ({
  id: str(r.id),
  clientId: str(r.client_id),
  secretHash: str(r.secret_hash),
  name: str(r.name),
  createdAt: num(r.created_at),
  revokedAt: numOrNull(r.revoked_at),
  lastUsedAt: numOrNull(r.last_used_at),
  scopes: r.scopes === undefined || r.scopes === '*' ? '*' : str(r.scopes).split(' ').filter(Boolean),
  connectionNames: r.connection_names == null ? null : (JSON.parse(str(r.connection_names)) as string[]),
});

export const toAuditEvent = (r: Row): AuditEvent => ({
  seq: num(r.seq),
  id: str(r.id),
  at: num(r.at),
  actorType: str(r.actor_type) as AuditActorType,
  actorId: str(r.actor_id),
  action: str(r.action),
  targetType: str(r.target_type),
  targetId: str(r.target_id),
  sourceAddress: strOrNull(r.source_address),
  requestId: strOrNull(r.request_id),
  changes: JSON.parse(str(r.changes)) as Record<string, unknown>,
  prevHash: str(r.prev_hash),
  hash: str(r.hash),
});

export const toConnection = (r: Row): Connection => ({
  id: str(r.id),
  name: str(r.name),
  connector: str(r.connector),
  authKind: str(r.auth_kind),
  // Only when the connection lets its users choose (migration 019).
  ...(r.auth_kinds == null ? {} : { authKinds: JSON.parse(str(r.auth_kinds)) as string[] }),
  clientId: strOrNull(r.client_id),
  clientSecretSealed: strOrNull(r.client_secret_sealed),
  scopes: JSON.parse(str(r.scopes)) as string[],
  apiBaseUrl: strOrNull(r.api_base_url),
  apiHosts: JSON.parse(str(r.api_hosts)) as Record<string, string>,
  oauth: JSON.parse(str(r.oauth)) as Connection['oauth'],
  registrationSealed: strOrNull(r.registration_sealed),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

export const toConnectionDeletion = (r: Row): ConnectionDeletion => ({
  id: str(r.id),
  connectionId: str(r.connection_id),
  connectionName: str(r.connection_name),
  connector: str(r.connector),
  status: str(r.status) as ConnectionDeletion['status'],
  accountsDeleted: num(r.accounts_deleted),
  requestedAt: num(r.requested_at),
  updatedAt: num(r.updated_at),
  finishedAt: numOrNull(r.finished_at),
});

export const toAccount = (r: Row): Account => ({
  id: str(r.id),
  connectionId: str(r.connection_id),
  identifier: str(r.identifier),
  // See migration 004: the column keeps PENDING_AUTH while the account waits for its user's verification.
  status: r.verification_pending_since == null ? (str(r.status) as AccountStatus) : 'PENDING_VERIFICATION',
  // Only when recorded: an account without a grant reads as it did before migration 013.
  ...(r.granted_scopes == null ? {} : { grantedScopes: JSON.parse(str(r.granted_scopes)) as string[] }),
  ...(r.auth_kind == null ? {} : { authKind: str(r.auth_kind) }),
  fields: JSON.parse(str(r.fields)) as Record<string, string>,
  secretsSealed: strOrNull(r.secrets_sealed),
  tokenExpiresAt: numOrNull(r.token_expires_at),
  lastUsedAt: numOrNull(r.last_used_at),
  lastError: strOrNull(r.last_error),
  version: num(r.version),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

export const toLink = (r: Row): OAuthLink => ({
  tokenHash: str(r.token_hash),
  connectionId: str(r.connection_id),
  accountId: str(r.account_id),
  redirectUrl: strOrNull(r.redirect_url),
  expiresAt: num(r.expires_at),
  userVerifyUrl: strOrNull(r.user_verify_url),
  openedAt: numOrNull(r.opened_at),
  usedAt: numOrNull(r.used_at),
  // Only when set: a link made before migration 013 reads as it did.
  ...(r.scopes == null ? {} : { scopes: JSON.parse(str(r.scopes)) as string[] }),
  ...(r.token_sealed == null ? {} : { tokenSealed: str(r.token_sealed) }),
  ...(r.identifier == null ? {} : { identifier: str(r.identifier) }),
});

export const toVerification = (r: Row): AccountVerification => ({
  requestHash: str(r.request_hash),
  accountId: str(r.account_id),
  expiresAt: num(r.expires_at),
  usedAt: numOrNull(r.used_at),
  secretsSealed: strOrNull(r.secrets_sealed),
  tokenExpiresAt: numOrNull(r.token_expires_at),
  fields: r.fields == null ? null : (JSON.parse(str(r.fields)) as Record<string, string>),
});

export const toState = (r: Row): OAuthState => ({
  stateHash: str(r.state_hash),
  connectionId: str(r.connection_id),
  accountId: str(r.account_id),
  verifierSealed: str(r.verifier_sealed),
  redirectUrl: strOrNull(r.redirect_url),
  expiresAt: num(r.expires_at),
  usedAt: numOrNull(r.used_at),
  linkHash: strOrNull(r.link_hash),
});

export const toActivity = (r: Row): ActivityRecord => ({
  id: str(r.id),
  kind: str(r.kind) as ActivityRecord['kind'],
  name: str(r.name),
  connectionName: strOrNull(r.connection_name),
  accountId: strOrNull(r.account_id),
  identifier: strOrNull(r.identifier),
  status: num(r.status),
  errorCode: strOrNull(r.error_code),
  latencyMs: num(r.latency_ms),
  createdAt: num(r.created_at),
});

export const toDashboardUser = (r: Row): DashboardUser => ({
  id: str(r.id),
  username: str(r.username),
  passwordHash: str(r.password_hash),
  role: dashboardRole(r.role),
  oidcSubject: strOrNull(r.oidc_subject),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

/** A stored role; anything else (never written) reads as the least privileged. */
function dashboardRole(v: unknown): DashboardRole {
  return v === 'admin' || v === 'operator' ? v : 'viewer';
}

export const toDashboardInvitation = (r: Row): DashboardInvitation => ({
  id: str(r.id),
  tokenHash: str(r.token_hash),
  username: str(r.username),
  role: dashboardRole(r.role),
  createdBy: str(r.created_by),
  createdAt: num(r.created_at),
  expiresAt: num(r.expires_at),
  usedAt: r.used_at == null ? null : num(r.used_at),
});

export const toDashboardSession = (r: Row): DashboardSession & { username: string; role: DashboardRole } => ({
  idHash: str(r.id_hash),
  userId: str(r.user_id),
  username: str(r.username),
  role: dashboardRole(r.role),
  createdAt: num(r.created_at),
  expiresAt: num(r.expires_at),
});

export const toMcpServer = (r: Row): McpServerConfig => ({
  id: str(r.id),
  name: str(r.name),
  mode: str(r.mode) as McpServerConfig['mode'],
  tools: JSON.parse(str(r.tools)) as string[],
  connections: JSON.parse(str(r.connections)) as string[],
  userVerifyUrl: strOrNull(r.user_verify_url),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

export const toWebhookEndpoint = (r: Row): WebhookEndpoint => ({
  id: str(r.id),
  url: str(r.url),
  events: JSON.parse(str(r.events)) as string[],
  secretSealed: str(r.secret_sealed),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

export const toMcpUrl = (r: Row): McpUrl => ({
  id: str(r.id),
  serverId: str(r.server_id),
  identifier: str(r.identifier),
  tokenHash: str(r.token_hash),
  expiresAt: num(r.expires_at),
  revokedAt: numOrNull(r.revoked_at),
  createdAt: num(r.created_at),
  lastUsedAt: numOrNull(r.last_used_at),
});

export const toMcpOAuthSettings = (r: Row): McpOAuthSettings => ({
  serverId: str(r.server_id),
  oidcIssuer: str(r.oidc_issuer),
  oidcClientId: str(r.oidc_client_id),
  oidcClientSecretSealed: strOrNull(r.oidc_client_secret_sealed),
  identifierClaim: str(r.identifier_claim),
  updatedAt: num(r.updated_at),
});

export const toMcpOAuthClient = (r: Row): McpOAuthClient => ({
  clientId: str(r.client_id),
  metadata: JSON.parse(str(r.metadata)) as Record<string, unknown>,
  createdAt: num(r.created_at),
});

export const toMcpOAuthGrant = (r: Row): McpOAuthGrant => ({
  id: str(r.id),
  kind: str(r.kind) as McpOAuthGrantKind,
  tokenHash: str(r.token_hash),
  family: str(r.family),
  serverId: str(r.server_id),
  clientId: str(r.client_id),
  identifier: strOrNull(r.identifier),
  data: JSON.parse(str(r.data)) as Record<string, unknown>,
  expiresAt: num(r.expires_at),
  usedAt: numOrNull(r.used_at),
  revokedAt: numOrNull(r.revoked_at),
  createdAt: num(r.created_at),
});

export const toWebhookDelivery = (r: Row): WebhookDelivery => ({
  id: str(r.id),
  endpointId: str(r.endpoint_id),
  eventId: str(r.event_id),
  eventType: str(r.event_type),
  payload: str(r.payload),
  status: str(r.status) as WebhookDeliveryStatus,
  attempts: num(r.attempts),
  nextAttemptAt: numOrNull(r.next_attempt_at),
  lastStatus: numOrNull(r.last_status),
  lastError: strOrNull(r.last_error),
  lastLatencyMs: numOrNull(r.last_latency_ms),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
  deliveredAt: numOrNull(r.delivered_at),
});

export const toTriggerInstance = (r: Row): TriggerInstance => ({
  id: str(r.id),
  trigger: str(r.trigger_name),
  connector: str(r.connector),
  kind: str(r.kind) as TriggerInstance['kind'],
  connectionId: str(r.connection_id),
  accountId: str(r.account_id),
  config: JSON.parse(str(r.config)) as Record<string, unknown>,
  status: str(r.status) as TriggerStatus,
  intervalMs: num(r.interval_ms),
  state: JSON.parse(str(r.state)) as Record<string, unknown>,
  secretSealed: strOrNull(r.secret_sealed),
  nextRunAt: numOrNull(r.next_run_at),
  leaseOwner: strOrNull(r.lease_owner),
  leaseUntil: numOrNull(r.lease_until),
  failures: num(r.failures),
  eventsSent: num(r.events_sent),
  lastEventAt: numOrNull(r.last_event_at),
  lastPollAt: numOrNull(r.last_poll_at),
  lastError: strOrNull(r.last_error),
  lastErrorAt: numOrNull(r.last_error_at),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

/** Columns that hold sealed values, for key rotation: [table, id column, sealed column]. */
export const SEALED_COLUMNS: ReadonlyArray<readonly [SealedCell['table'], string, string]> = [
  ['connections', 'id', 'client_secret_sealed'],
  ['connections', 'id', 'registration_sealed'],
  ['connected_accounts', 'id', 'secrets_sealed'],
  ['oauth_states', 'state_hash', 'verifier_sealed'],
  ['oauth_links', 'token_hash', 'token_sealed'],
  ['webhook_endpoints', 'id', 'secret_sealed'],
  ['account_verifications', 'request_hash', 'secrets_sealed'],
  ['trigger_instances', 'id', 'secret_sealed'],
  ['mcp_oauth_settings', 'server_id', 'oidc_client_secret_sealed'],
];

/** Meta keys whose values are sealed. */
export const SEALED_META_KEYS = ['service_token_key', 'dashboard_cookie_key'];

export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}
