-- The OAuth-protected MCP endpoint (issue 39, docs/mcp.md "OAuth"): the service is the authorization server for MCP
-- clients, and signs end users in at the operator's OpenID provider.
--
-- mcp_oauth_settings: a server's own OpenID provider (absent: the MCP_OAUTH_OIDC_* settings apply). The client
-- secret is sealed (AAD `mcp_oauth_settings:<server_id>:oidc_client_secret`).
CREATE TABLE mcp_oauth_settings (
  server_id TEXT PRIMARY KEY REFERENCES mcp_servers(id) ON DELETE CASCADE,
  oidc_issuer TEXT NOT NULL,
  oidc_client_id TEXT NOT NULL,
  oidc_client_secret_sealed TEXT,
  identifier_claim TEXT NOT NULL,
  updated_at BIGINT NOT NULL
);

-- Clients registered by Dynamic Client Registration (RFC 7591); clients identified by a Client ID Metadata
-- Document are fetched and cached, never stored. metadata: the registered client metadata (JSON).
CREATE TABLE mcp_oauth_clients (
  client_id TEXT PRIMARY KEY,
  metadata TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

-- Every secret the authorization server hands out, by the SHA-256 of its value (token_hash), never the value:
-- `session` (a browser's authorization in progress, keyed by its cookie), `code`, `access` and `refresh`. A grant's
-- rows share `family` (its first session's id): revoking a token, or presenting a used refresh token again, revokes
-- the family. data: what the kind needs (JSON): the authorization request, the audience (`resource`), the PKCE
-- challenge. used_at: a code or refresh token spent (a single use, set by a compare-and-set).
CREATE TABLE mcp_oauth_grants (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('session', 'code', 'access', 'refresh')),
  token_hash TEXT NOT NULL UNIQUE,
  family TEXT NOT NULL,
  server_id TEXT NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
  client_id TEXT NOT NULL,
  identifier TEXT,
  data TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT,
  revoked_at BIGINT,
  created_at BIGINT NOT NULL
);
CREATE INDEX mcp_oauth_grants_family ON mcp_oauth_grants (family);
CREATE INDEX mcp_oauth_grants_expiry ON mcp_oauth_grants (expires_at);
