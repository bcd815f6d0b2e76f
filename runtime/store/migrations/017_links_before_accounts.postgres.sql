-- Issue 38: a just-in-time link for an end user who has no account yet creates no account row; the account is created
-- when the link is completed. The link (and the OAuth state made from it) names the account id reserved for it and,
-- for a link of a missing account, the identifier, so account_id no longer references connected_accounts. Deleting
-- an account deletes its links and states in the store (what ON DELETE CASCADE did).
ALTER TABLE oauth_links DROP CONSTRAINT oauth_links_account_id_fkey;
ALTER TABLE oauth_states DROP CONSTRAINT oauth_states_account_id_fkey;
ALTER TABLE oauth_links ADD COLUMN identifier TEXT;
DROP INDEX oauth_links_connection;
CREATE INDEX oauth_links_connection ON oauth_links (connection_id, identifier);
