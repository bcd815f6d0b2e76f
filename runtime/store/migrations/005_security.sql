-- Failed-attempt throttles (runtime/auth/throttle.ts), shared by every process on the store: one row per
-- scope and key (a client id, a user name, an address). `count` decays slowly; `version` makes each update a
-- compare-and-set, so concurrent attempts in several processes are all counted.
CREATE TABLE throttles (
  key TEXT PRIMARY KEY,
  count INTEGER NOT NULL,
  last_at BIGINT NOT NULL,
  blocked_until BIGINT NOT NULL,
  version INTEGER NOT NULL
);
CREATE INDEX throttles_last_at ON throttles (last_at);
