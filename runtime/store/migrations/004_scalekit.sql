-- Single-use authorization links and user verification after OAuth (issue 11 point 4, issue 12 point 3).
-- A link records when it was first opened and when a flow completed through it (or a newer link for the same
-- account replaced it after it had been opened); each OAuth state names the link it came from, so the callback
-- consumes that link atomically and a second completion finds it used.
ALTER TABLE oauth_links ADD COLUMN opened_at BIGINT;
ALTER TABLE oauth_links ADD COLUMN used_at BIGINT;
ALTER TABLE oauth_links ADD COLUMN user_verify_url TEXT;
CREATE INDEX oauth_links_account ON oauth_links (account_id);
ALTER TABLE oauth_states ADD COLUMN link_hash TEXT;

-- An account authorized through a link with a user_verify_url waits for the client application to confirm the
-- user (PENDING_VERIFICATION). The status column keeps PENDING_AUTH meanwhile (its CHECK predates the new
-- status, and SQLite cannot widen a CHECK in place without rebuilding the table under its children's foreign
-- keys); this column, set, is what makes the account PENDING_VERIFICATION (runtime/store/rows.ts).
ALTER TABLE connected_accounts ADD COLUMN verification_pending_since BIGINT;

-- One row per pending verification: the SHA-256 of the auth_request_id sent to the user's browser.
CREATE TABLE account_verifications (
  request_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES connected_accounts(id) ON DELETE CASCADE,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX account_verifications_account ON account_verifications (account_id);
