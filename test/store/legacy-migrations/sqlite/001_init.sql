-- Times are Unix epoch milliseconds. Sealed columns hold AES-256-GCM ciphertext (see runtime/crypto/sealer.ts).
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE api_credentials (
  id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL UNIQUE,
  secret_hash TEXT NOT NULL,
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER,
  last_used_at INTEGER
);

CREATE TABLE connections (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  connector TEXT NOT NULL,
  auth_kind TEXT NOT NULL,
  client_id TEXT,
  client_secret_sealed TEXT,
  scopes TEXT NOT NULL DEFAULT '[]',
  api_base_url TEXT,
  api_hosts TEXT NOT NULL DEFAULT '{}',
  oauth TEXT NOT NULL DEFAULT '{}',
  registration_sealed TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE connected_accounts (
  id TEXT PRIMARY KEY,
  connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  identifier TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('PENDING_AUTH', 'ACTIVE', 'EXPIRED', 'DISCONNECTED')),
  fields TEXT NOT NULL DEFAULT '{}',
  secrets_sealed TEXT,
  token_expires_at INTEGER,
  last_used_at INTEGER,
  last_error TEXT,
  version INTEGER NOT NULL DEFAULT 0,
  lock_until INTEGER,
  lock_owner TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (connection_id, identifier)
);
CREATE INDEX connected_accounts_status ON connected_accounts (connection_id, status);

CREATE TABLE oauth_links (
  token_hash TEXT PRIMARY KEY,
  connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES connected_accounts(id) ON DELETE CASCADE,
  redirect_url TEXT,
  expires_at INTEGER NOT NULL
);

CREATE TABLE oauth_states (
  state_hash TEXT PRIMARY KEY,
  connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES connected_accounts(id) ON DELETE CASCADE,
  verifier_sealed TEXT NOT NULL,
  redirect_url TEXT,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);

CREATE TABLE activity (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  connection_name TEXT,
  account_id TEXT,
  identifier TEXT,
  status INTEGER NOT NULL,
  error_code TEXT,
  latency_ms INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX activity_created ON activity (created_at);
