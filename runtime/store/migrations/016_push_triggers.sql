-- Push triggers (issue 41, docs/triggers.md "Push triggers"). Each connection that has push instances gets one
-- ingress URL, /v1/ingress/<token>: the token is random (32 bytes), made when the connection's first push instance
-- is, and kept with the connection (removed with it). It only routes: every notification is still verified (a
-- signature, a per-instance secret, a clientState) before anything in it is used.
CREATE TABLE trigger_ingress (
  connection_id TEXT PRIMARY KEY REFERENCES connections(id) ON DELETE CASCADE,
  token TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL
);
-- App webhooks (one ingress for every account of the app) name the account by a provider field (HubSpot's
-- portalId): the instance keeps that value, and a notification finds its instances by it.
ALTER TABLE trigger_instances ADD COLUMN route_key TEXT;
CREATE INDEX trigger_instances_route ON trigger_instances (connection_id, route_key);
