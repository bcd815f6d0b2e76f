-- Issue 34, finding 5: an authorization that waits for the application's user verification keeps its tokens here,
-- sealed, until the verification succeeds; the account keeps working on its last good credentials meanwhile, and a
-- refused or expired verification leaves it as it was.
ALTER TABLE account_verifications ADD COLUMN secrets_sealed TEXT;
ALTER TABLE account_verifications ADD COLUMN token_expires_at BIGINT;
ALTER TABLE account_verifications ADD COLUMN fields TEXT;
CREATE INDEX connected_accounts_verification_pending ON connected_accounts (verification_pending_since)
  WHERE verification_pending_since IS NOT NULL;

-- Issue 34, finding 6: authorization links an MCP server hands out follow the operator's verification setting.
ALTER TABLE mcp_servers ADD COLUMN user_verify_url TEXT;
