-- Issue 38: a just-in-time link for an end user who has no account yet creates no account row; the account is created
-- when the link is completed. The link (and the OAuth state made from it) names the account id reserved for it and,
-- for a link of a missing account, the identifier, so account_id no longer references connected_accounts. SQLite
-- cannot drop a foreign key in place: both tables are rebuilt (nothing references them). Deleting an account deletes
-- its links and states in the store (what ON DELETE CASCADE did).
CREATE TABLE oauth_links_017 (
  token_hash TEXT PRIMARY KEY,
  connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL,
  redirect_url TEXT,
  expires_at BIGINT NOT NULL,
  opened_at BIGINT,
  used_at BIGINT,
  user_verify_url TEXT,
  scopes TEXT,
  token_sealed TEXT,
  identifier TEXT
);
INSERT INTO oauth_links_017 (token_hash, connection_id, account_id, redirect_url, expires_at, opened_at, used_at,
  user_verify_url, scopes, token_sealed)
SELECT token_hash, connection_id, account_id, redirect_url, expires_at, opened_at, used_at, user_verify_url, scopes,
  token_sealed FROM oauth_links;
DROP TABLE oauth_links;
ALTER TABLE oauth_links_017 RENAME TO oauth_links;
CREATE INDEX oauth_links_account ON oauth_links (account_id);
CREATE INDEX oauth_links_connection ON oauth_links (connection_id, identifier);
CREATE INDEX oauth_links_expires ON oauth_links (expires_at);

CREATE TABLE oauth_states_017 (
  state_hash TEXT PRIMARY KEY,
  connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL,
  verifier_sealed TEXT NOT NULL,
  redirect_url TEXT,
  expires_at BIGINT NOT NULL,
  used_at BIGINT,
  link_hash TEXT
);
INSERT INTO oauth_states_017 (state_hash, connection_id, account_id, verifier_sealed, redirect_url, expires_at,
  used_at, link_hash)
SELECT state_hash, connection_id, account_id, verifier_sealed, redirect_url, expires_at, used_at, link_hash
  FROM oauth_states;
DROP TABLE oauth_states;
ALTER TABLE oauth_states_017 RENAME TO oauth_states;
CREATE INDEX oauth_states_account ON oauth_states (account_id);
CREATE INDEX oauth_states_connection ON oauth_states (connection_id);
CREATE INDEX oauth_states_expires ON oauth_states (expires_at);
