-- Issue 38: a connection may let its users choose between several of its connector's auth kinds (call intelligence:
-- OAuth or an access key). `connections.auth_kinds` lists them (JSON, the first being `auth_kind`); NULL: the one
-- kind `auth_kind` names, as before. `connected_accounts.auth_kind` is the kind an account was connected with;
-- NULL: the connection's `auth_kind`, so every account made before this migration reads as it did.
ALTER TABLE connections ADD COLUMN auth_kinds TEXT;
ALTER TABLE connected_accounts ADD COLUMN auth_kind TEXT;
