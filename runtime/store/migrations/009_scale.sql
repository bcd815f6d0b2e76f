-- A population, not a request (issue 35): what a million connected accounts need.
--
-- A connection is deleted in the background (runtime/jobs/connection-deletions.ts): the request marks it
-- (deleting_since, and its name replaced by one no client can give, so the name is free at once) and records the
-- deletion; batches then remove its accounts, each batch in one transaction with its accounts' events, until the
-- connection row itself goes. The deletion outlives the connection, so that its progress stays readable.
ALTER TABLE connections ADD COLUMN deleting_since BIGINT;

CREATE TABLE connection_deletions (
  id TEXT PRIMARY KEY,
  connection_id TEXT NOT NULL,
  connection_name TEXT NOT NULL,
  connector TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'done')),
  accounts_deleted BIGINT NOT NULL DEFAULT 0,
  requested_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  finished_at BIGINT,
  lease_owner TEXT,
  lease_until BIGINT
);
CREATE INDEX connection_deletions_status ON connection_deletions (status, requested_at);

-- Keyset pages of accounts, everywhere and by connection, status or identifier, without a sort or a scan.
CREATE INDEX connected_accounts_page ON connected_accounts (created_at, id);
CREATE INDEX connected_accounts_connection_page ON connected_accounts (connection_id, created_at, id);
CREATE INDEX connected_accounts_status_page ON connected_accounts (status, created_at, id);
CREATE INDEX connected_accounts_identifier ON connected_accounts (identifier, created_at, id);
DROP INDEX connected_accounts_status;
CREATE INDEX connected_accounts_status ON connected_accounts (connection_id, status, created_at, id);
CREATE INDEX connected_accounts_verifying ON connected_accounts (created_at, id) WHERE verification_pending_since IS NOT NULL;

-- The outbox is read oldest first by (created_at, id): both in the index, so a batch is a range, never a sort.
DROP INDEX webhook_outbox_created;
CREATE INDEX webhook_outbox_created ON webhook_outbox (created_at, id);

-- Deleting an account or a connection cascades to these: without an index, each deleted row scans the table.
CREATE INDEX oauth_states_account ON oauth_states (account_id);
CREATE INDEX oauth_states_connection ON oauth_states (connection_id);
CREATE INDEX oauth_links_connection ON oauth_links (connection_id);

-- The expiry sweeps delete in bounded batches, found by these.
CREATE INDEX oauth_states_expires ON oauth_states (expires_at);
CREATE INDEX oauth_links_expires ON oauth_links (expires_at);
CREATE INDEX account_verifications_expires ON account_verifications (expires_at);
