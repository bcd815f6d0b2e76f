-- Triggers (issue 41, docs/triggers.md): one row per trigger instance, removed with its account or connection
-- (foreign keys). A polling instance keeps its feed position in `state` (cursor, since, ids seen) and is due at
-- `next_run_at`; a poller leases it (lease_owner, lease_until; FOR UPDATE SKIP LOCKED on PostgreSQL) so that no two
-- instances of the service poll it at once, and advances `state` in the transaction that writes its events to the
-- outbox. A push instance keeps its registration with the provider in `state` and its sealed per-instance secret.
CREATE TABLE trigger_instances (
  id TEXT PRIMARY KEY,
  trigger_name TEXT NOT NULL,
  connector TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('polling', 'push')),
  connection_id TEXT NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES connected_accounts(id) ON DELETE CASCADE,
  config TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'failing', 'needs_reauth')),
  interval_ms BIGINT NOT NULL,
  state TEXT NOT NULL DEFAULT '{}',
  secret_sealed TEXT,
  next_run_at BIGINT,
  lease_owner TEXT,
  lease_until BIGINT,
  failures INTEGER NOT NULL DEFAULT 0,
  events_sent BIGINT NOT NULL DEFAULT 0,
  last_event_at BIGINT,
  last_poll_at BIGINT,
  last_error TEXT,
  last_error_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
-- The scheduler reads the instances due, soonest first: a range of this index, whatever the population.
CREATE INDEX trigger_instances_due ON trigger_instances (next_run_at);
CREATE INDEX trigger_instances_page ON trigger_instances (created_at, id);
CREATE INDEX trigger_instances_connection ON trigger_instances (connection_id, created_at, id);
CREATE INDEX trigger_instances_account ON trigger_instances (account_id);

-- Events of one trigger instance are delivered in order: a delivery waits while an earlier one with the same
-- ordering key is pending for the same endpoint.
ALTER TABLE webhook_outbox ADD COLUMN ordering_key TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN ordering_key TEXT;
CREATE INDEX webhook_deliveries_ordering ON webhook_deliveries (endpoint_id, ordering_key, status, created_at);
