-- Issue 37, item 4: several dashboard users with roles, invited by one-time links, or signed in through the
-- company's OpenID Connect provider (runtime/dashboard/users.ts, runtime/dashboard/oidc.ts).
--
-- The user made before roles existed (`admin`) is an admin. A user who signs in only through OpenID Connect has
-- an empty password hash, which no password matches, and the provider's issuer and subject (`issuer|sub`).
ALTER TABLE dashboard_users ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE dashboard_users ADD COLUMN oidc_subject TEXT;
CREATE UNIQUE INDEX dashboard_users_oidc_subject ON dashboard_users (oidc_subject);
CREATE INDEX dashboard_users_role ON dashboard_users (role);

-- An invitation: the SHA-256 of its random token (the link holds the token; a copy of the store does not), the
-- name and role the invitee gets, when it expires, and when it was used (once only).
CREATE TABLE dashboard_invitations (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  username TEXT NOT NULL,
  role TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX dashboard_invitations_expires ON dashboard_invitations (expires_at);
