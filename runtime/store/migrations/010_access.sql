-- Issue 37: least privilege and accountability.
--
-- An API credential holds scopes (core/api/scopes.ts), space-separated, or `*` for every scope present and future
-- (the first credential, and every credential made before scopes existed: they could do everything then), and may
-- be restricted to named connections (a JSON array; NULL: every connection).
ALTER TABLE api_credentials ADD COLUMN scopes TEXT NOT NULL DEFAULT '*';
ALTER TABLE api_credentials ADD COLUMN connection_names TEXT;

-- The audit log (runtime/audit/log.ts): append-only, each entry's hash chained to the one before it. `audit_head`
-- is a single row holding the last entry's sequence number and hash; every append updates it in the same
-- transaction, which serialises appenders (a row lock on PostgreSQL, the one writer on SQLite), so the chain has
-- no fork however many instances write. Pruning (the retention setting) moves the anchor: the sequence number and
-- hash of the last entry removed, from which the rest still verifies.
CREATE TABLE audit_events (
  seq BIGINT PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  at BIGINT NOT NULL,
  actor_type TEXT NOT NULL,
  actor_id TEXT NOT NULL,
  action TEXT NOT NULL,
  target_type TEXT NOT NULL,
  target_id TEXT NOT NULL,
  source_address TEXT,
  request_id TEXT,
  changes TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE INDEX audit_events_at ON audit_events (at, seq);
CREATE INDEX audit_events_actor ON audit_events (actor_id, seq);
CREATE INDEX audit_events_target ON audit_events (target_id, seq);
CREATE INDEX audit_events_action ON audit_events (action, seq);

CREATE TABLE audit_head (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq BIGINT NOT NULL,
  hash TEXT NOT NULL,
  anchor_seq BIGINT NOT NULL,
  anchor_hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash, anchor_seq, anchor_hash) VALUES (
  1, 0, '0000000000000000000000000000000000000000000000000000000000000000',
  0, '0000000000000000000000000000000000000000000000000000000000000000'
);
