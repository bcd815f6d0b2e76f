/**
 * Every error code the service answers with, its HTTP status and what it means: the one catalogue. ServiceError,
 * UpstreamFailure and the API's error bodies take only these codes (the type ErrorCode), docs/http-api.md lists
 * them ("Error codes"), and test/unit/error-codes.test.ts checks both against this table and each status a
 * call site gives against the code's.
 *
 * `status` is the one status of the code; `provider_error` carries the provider's own.
 */
export const ERROR_CODES = {
  // The request
  bad_request: { status: 400, meaning: 'the request cannot be read (HTTP version, encoding, framing)' },
  invalid_json: { status: 400, meaning: 'the body is not valid JSON' },
  invalid_input: {
    status: 400,
    meaning: 'the input is not what the endpoint or tool takes; `details` names each field',
  },
  invalid_header: { status: 400, meaning: 'a header the route reads has a value it cannot take' },
  invalid_proxy_path: { status: 400, meaning: 'the proxied path is not a path the connection may reach' },
  credential_header_not_allowed: {
    status: 400,
    meaning: 'the proxied request carries a header the service sets itself (the credential)',
  },
  host_not_allowed: { status: 400, meaning: "a host is not in the connector's host allowlist" },
  ambiguous_connection: {
    status: 400,
    meaning: 'the identifier has accounts on several connections of the tool’s connector; give connection_name',
  },
  trigger_connector_mismatch: {
    status: 400,
    meaning: "the trigger belongs to another connector than the connection's",
  },
  tool_connector_mismatch: {
    status: 400,
    meaning: "the tool belongs to another connector than the account's connection",
  },
  not_oauth: { status: 400, meaning: 'the operation needs an OAuth connection' },
  not_key_auth: { status: 400, meaning: 'the operation needs an API-key, bearer or basic connection' },
  invalid_credentials: { status: 400, meaning: 'the provider refused the credentials when they were verified' },
  invalid_link: { status: 400, meaning: 'the authorization link is unknown or expired' },
  invalid_state: { status: 400, meaning: 'the OAuth state of a callback is unknown, used or expired' },
  invalid_callback: { status: 400, meaning: 'the provider called back without a code, or with an error' },
  unauthorized: { status: 401, meaning: 'no valid bearer token (or session, or MCP URL)' },
  invalid_client: { status: 401, meaning: 'the client id and secret do not match an API credential' },
  identifier_mismatch: { status: 403, meaning: 'the verification names another identifier than the link was made for' },
  not_found: { status: 404, meaning: 'no route, or no such resource' },
  account_not_found: { status: 404, meaning: 'no such connected account' },
  connection_not_found: { status: 404, meaning: 'no such connection' },
  connector_not_found: { status: 404, meaning: 'no such connector' },
  unknown_tool: { status: 404, meaning: 'no such tool; the message names the closest one' },
  mcp_server_not_found: { status: 404, meaning: 'no such MCP server' },
  trigger_not_found: { status: 404, meaning: 'no trigger of that name in any connector' },
  trigger_instance_not_found: { status: 404, meaning: 'no such trigger instance' },
  mcp_url_not_found: { status: 404, meaning: 'no such MCP URL' },
  webhook_not_found: { status: 404, meaning: 'no such webhook endpoint' },
  delivery_not_found: { status: 404, meaning: 'no such webhook delivery' },
  deletion_not_found: { status: 404, meaning: 'no such connection deletion' },
  verification_not_found: { status: 404, meaning: 'no such pending user verification' },
  task_not_found: { status: 404, meaning: 'the provider has no such task' },
  assignee_not_found: { status: 404, meaning: 'the provider has no user by that email' },
  request_timeout: { status: 408, meaning: 'the request (headers or body) did not arrive in time' },
  already_exists: { status: 409, meaning: 'the account exists already' },
  connection_exists: { status: 409, meaning: 'a connection has that name already' },
  mcp_server_exists: { status: 409, meaning: 'an MCP server has that name already' },
  already_revoked: { status: 409, meaning: 'the credential or URL was revoked already' },
  connection_incomplete: { status: 409, meaning: 'the OAuth connection has no client id and secret yet' },
  account_incomplete: { status: 409, meaning: 'the account has no credentials yet (PENDING_AUTH)' },
  account_not_authorized: { status: 409, meaning: 'the account is not authorized yet; send an authorization link' },
  account_pending_verification: { status: 409, meaning: 'the account waits for your application to verify its user' },
  insufficient_scope: {
    status: 403,
    meaning: 'the API credential does not hold the scope the call needs (named in `details.required_scope`)',
  },
  connection_not_allowed: { status: 403, meaning: 'the API credential is restricted to other connections' },
  authorization_required: {
    status: 403,
    meaning:
      'the end user must connect (or reconnect, or grant more scopes to) an account first: `error.link` is a single-use link for them',
  },
  account_expired: { status: 409, meaning: 'the provider refused the refresh token; send a new authorization link' },
  account_disconnected: { status: 409, meaning: 'the account was disconnected' },
  credentials_unreadable: {
    status: 409,
    meaning: 'the stored credentials do not decrypt; upsert them again or send a new link',
  },
  verification_not_pending: { status: 409, meaning: 'the account does not wait for a verification' },
  link_used: { status: 410, meaning: 'the authorization link was used already' },
  payload_too_large: { status: 413, meaning: "the body is larger than the route's limit" },
  unsupported_media_type: { status: 415, meaning: 'the body has an encoding the service does not read' },
  too_many_attempts: { status: 429, meaning: 'too many failed attempts; wait and try again' },
  client_gone: { status: 499, meaning: 'the client went away before the provider answered (logged, never sent)' },
  // The service
  internal_error: { status: 500, meaning: 'a fault of the service; quote the request id' },
  not_supported_by_provider: { status: 501, meaning: 'the provider offers no way to do this' },
  account_busy: { status: 503, meaning: "another refresh of the account's token is still running; try again" },
  refresh_conflict: { status: 503, meaning: 'the refreshed tokens could not be stored; try again' },
  refresh_paced: {
    status: 503,
    meaning: "the connection's token endpoint refuses or fails most refreshes, and too many wait their turn; try again",
  },
  starting: { status: 503, meaning: 'the service is starting; retry shortly' },
  // The provider
  provider_error: {
    status: 0,
    meaning: 'the provider refused: its own status, with `provider_status` and `provider_body`',
  },
  provider_malformed_response: {
    status: 502,
    meaning: 'the provider answered something unusable (invalid JSON or HTTP, broken compression)',
  },
  response_too_large: { status: 502, meaning: "the provider's answer is larger than TOOL_RESPONSE_LIMIT_BYTES" },
  upstream_unreachable: { status: 502, meaning: 'the provider could not be reached' },
  upstream_connection_reset: { status: 502, meaning: 'the provider closed the connection' },
  upstream_error: { status: 502, meaning: 'the request to the provider failed otherwise (the message names how)' },
  upstream_redirect_refused: { status: 502, meaning: 'the provider redirected to another host' },
  upstream_host_not_public: {
    status: 502,
    meaning: 'the provider host resolves to a private address (WEBHOOK_ALLOWED_HOSTS for webhooks)',
  },
  upstream_timeout: { status: 504, meaning: 'the provider did not answer in time' },
  refresh_failed: { status: 503, meaning: 'the token refresh failed (not a refusal); the next call tries again' },
  refresh_rejected: { status: 502, meaning: 'the provider refused the token refresh' },
  verification_failed: { status: 502, meaning: 'the credentials could not be verified with the provider' },
  mcp_discovery_failed: { status: 502, meaning: "the provider's MCP server gave no usable OAuth discovery" },
  mcp_registration_unsupported: { status: 502, meaning: "the provider's MCP server offers no dynamic registration" },
  mcp_registration_failed: { status: 502, meaning: "the dynamic registration at the provider's MCP server failed" },
  mcp_initialize_failed: { status: 502, meaning: "the provider's MCP server refused to start a session" },
  actor_run_not_finished: { status: 504, meaning: 'the provider’s run did not finish in time; poll it' },
  not_implemented: { status: 501, meaning: 'this version of the service cannot do that yet (a push trigger)' },
  trigger_unknown: { status: 500, meaning: 'a stored trigger instance names a trigger this service no longer has' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
