-- MCP servers (issue 10): a named configuration of the tools an MCP client sees, and the per-end-user URLs that
-- reach it. A URL carries a random 32-byte token; only its SHA-256 is stored (token_hash), so a copy of the store
-- opens no MCP endpoint. tools and connections are JSON arrays of names (TEXT, as every JSON column here).
CREATE TABLE mcp_servers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  mode TEXT NOT NULL,
  tools TEXT NOT NULL,
  connections TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE mcp_urls (
  id TEXT PRIMARY KEY,
  server_id TEXT NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
  identifier TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  expires_at BIGINT NOT NULL,
  revoked_at BIGINT,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT
);
CREATE INDEX mcp_urls_server ON mcp_urls (server_id, created_at);
