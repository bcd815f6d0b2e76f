/**
 * The tables as the query builder sees them (runtime/store/migrations/*.sql creates them). Times are epoch
 * milliseconds; JSON-valued columns are TEXT on both databases, parsed in rows.ts.
 */
export interface Database {
  schema_migrations: { version: string; applied_at: number };
  meta: { key: string; value: string };
  api_credentials: {
    id: string;
    client_id: string;
    secret_hash: string;
    name: string;
    created_at: number;
    revoked_at: number | null;
    last_used_at: number | null;
    /** Migration 010: space-separated scopes, or `*`. */
    scopes: string;
    /** Migration 010: a JSON array of connection names, or null. */
    connection_names: string | null;
  };
  audit_events: {
    seq: number;
    id: string;
    at: number;
    actor_type: string;
    actor_id: string;
    action: string;
    target_type: string;
    target_id: string;
    source_address: string | null;
    request_id: string | null;
    changes: string;
    prev_hash: string;
    hash: string;
  };
  audit_head: { id: number; seq: number; hash: string; anchor_seq: number; anchor_hash: string };
  connections: {
    id: string;
    name: string;
    connector: string;
    auth_kind: string;
    /** Migration 019: the kinds a user may choose between (JSON list), NULL for `auth_kind` alone. */
    auth_kinds: string | null;
    client_id: string | null;
    client_secret_sealed: string | null;
    scopes: string;
    api_base_url: string | null;
    api_hosts: string;
    oauth: string;
    registration_sealed: string | null;
    created_at: number;
    updated_at: number;
    /** Set while the connection is deleted in the background (migration 009): no read returns it then. */
    deleting_since: number | null;
  };
  connection_deletions: {
    id: string;
    connection_id: string;
    connection_name: string;
    connector: string;
    status: string;
    accounts_deleted: number;
    requested_at: number;
    updated_at: number;
    finished_at: number | null;
    lease_owner: string | null;
    lease_until: number | null;
  };
  /** SQLite only (migration 009b): accounts per connection and stored status, kept by triggers. */
  account_counts: { connection_id: string; status: string; n: number };
  /** PostgreSQL only (migration 014): count changes not yet folded into account_counts. */
  account_count_deltas: { id: number; connection_id: string; status: string; d: number };
  connected_accounts: {
    id: string;
    connection_id: string;
    identifier: string;
    status: string;
    fields: string;
    secrets_sealed: string | null;
    token_expires_at: number | null;
    last_used_at: number | null;
    last_error: string | null;
    version: number;
    /** SQLite's account lease (runtime/store/sqlite.ts); unused on PostgreSQL, which takes an advisory lock. */
    lock_until: number | null;
    lock_owner: string | null;
    /** Set while the account waits for its user's verification (it is then PENDING_VERIFICATION). */
    verification_pending_since: number | null;
    granted_scopes: string | null;
    /** Migration 019: the auth kind the account was connected with; NULL: the connection's `auth_kind`. */
    auth_kind: string | null;
    created_at: number;
    updated_at: number;
  };
  oauth_links: {
    token_hash: string;
    connection_id: string;
    account_id: string;
    redirect_url: string | null;
    expires_at: number;
    opened_at: number | null;
    used_at: number | null;
    user_verify_url: string | null;
    scopes: string | null;
    token_sealed: string | null;
    identifier: string | null;
  };
  account_verifications: {
    request_hash: string;
    account_id: string;
    expires_at: number;
    used_at: number | null;
    secrets_sealed: string | null;
    token_expires_at: number | null;
    fields: string | null;
  };
  oauth_states: {
    state_hash: string;
    connection_id: string;
    account_id: string;
    verifier_sealed: string;
    redirect_url: string | null;
    expires_at: number;
    used_at: number | null;
    link_hash: string | null;
  };
  activity: {
    id: string;
    kind: string;
    name: string;
    connection_name: string | null;
    account_id: string | null;
    identifier: string | null;
    status: number;
    error_code: string | null;
    latency_ms: number;
    created_at: number;
  };
  dashboard_users: {
    id: string;
    username: string;
    password_hash: string;
    created_at: number;
    updated_at: number;
    role?: string;
    oidc_subject?: string | null;
  };
  dashboard_invitations: {
    id: string;
    token_hash: string;
    username: string;
    role: string;
    created_by: string;
    created_at: number;
    expires_at: number;
    used_at: number | null;
  };
  webhook_endpoints: {
    id: string;
    url: string;
    /** JSON array of event types. */
    events: string;
    secret_sealed: string;
    created_at: number;
    updated_at: number;
  };
  webhook_outbox: { id: string; type: string; payload: string; created_at: number; ordering_key?: string | null };
  trigger_instances: {
    id: string;
    trigger_name: string;
    connector: string;
    kind: string;
    connection_id: string;
    account_id: string;
    config: string;
    status: string;
    interval_ms: number;
    state: string;
    secret_sealed: string | null;
    next_run_at: number | null;
    lease_owner: string | null;
    lease_until: number | null;
    failures: number;
    events_sent: number;
    last_event_at: number | null;
    last_poll_at: number | null;
    last_error: string | null;
    last_error_at: number | null;
    created_at: number;
    updated_at: number;
    /** Push triggers routed by an account's provider id (migration 016). */
    route_key?: string | null;
  };
  /** Push triggers: each connection's ingress token (migration 016). */
  trigger_ingress: { connection_id: string; token: string; created_at: number };
  webhook_deliveries: {
    id: string;
    endpoint_id: string;
    event_id: string;
    event_type: string;
    payload: string;
    status: string;
    attempts: number;
    next_attempt_at: number | null;
    last_status: number | null;
    last_error: string | null;
    last_latency_ms: number | null;
    created_at: number;
    updated_at: number;
    delivered_at: number | null;
    ordering_key?: string | null;
  };
  dashboard_sessions: {
    id_hash: string;
    user_id: string;
    created_at: number;
    expires_at: number;
  };
  mcp_servers: {
    id: string;
    name: string;
    mode: string;
    tools: string;
    connections: string;
    user_verify_url: string | null;
    created_at: number;
    updated_at: number;
  };
  mcp_oauth_settings: {
    server_id: string;
    oidc_issuer: string;
    oidc_client_id: string;
    oidc_client_secret_sealed: string | null;
    identifier_claim: string;
    updated_at: number;
  };
  mcp_oauth_clients: {
    client_id: string;
    metadata: string;
    created_at: number;
  };
  mcp_oauth_grants: {
    id: string;
    kind: string;
    token_hash: string;
    family: string;
    server_id: string;
    client_id: string;
    identifier: string | null;
    data: string;
    expires_at: number;
    used_at: number | null;
    revoked_at: number | null;
    created_at: number;
  };
  mcp_urls: {
    id: string;
    server_id: string;
    identifier: string;
    token_hash: string;
    expires_at: number;
    revoked_at: number | null;
    created_at: number;
    last_used_at: number | null;
  };
  throttles: {
    key: string;
    count: number;
    last_at: number;
    blocked_until: number;
    version: number;
  };
}
