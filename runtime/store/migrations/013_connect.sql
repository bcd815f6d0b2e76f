-- Issue 38: end users connect themselves.
-- A link asks for a set of scopes (JSON list; NULL: the connection's scopes, as before). Its token is kept sealed
-- (`oauth_link:<hash>:token`) so that a tool call for the same account and scopes hands out the same unexpired link
-- again instead of minting a row per call.
ALTER TABLE oauth_links ADD COLUMN scopes TEXT;
ALTER TABLE oauth_links ADD COLUMN token_sealed TEXT;
-- The scopes the provider granted an OAuth account (JSON list; NULL: not recorded, every scope assumed).
ALTER TABLE connected_accounts ADD COLUMN granted_scopes TEXT;
