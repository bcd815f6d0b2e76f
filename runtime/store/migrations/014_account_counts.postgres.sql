-- Accounts per connection and status on PostgreSQL, kept as SQLite keeps them (009b), so that `/metrics` and a
-- connection listing read a few rows instead of counting an index of a million entries (issue 35).
--
-- A counter row per (connection, status) updated by every insert would serialise the writers of one connection,
-- and two transactions touching two such rows in opposite orders would deadlock. So writes only append: each
-- statement that changes accounts adds one delta row per (connection, status) it changed (statement-level
-- triggers over the transition tables: a bulk insert of 5,000 accounts adds one row), and whoever reads the counts
-- folds the deltas into account_counts (DELETE … RETURNING, so two instances folding at once never count a delta
-- twice). A count is account_counts plus the deltas not yet folded.
CREATE TABLE account_counts (
  connection_id TEXT NOT NULL,
  status TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (connection_id, status)
);
CREATE TABLE account_count_deltas (
  id BIGSERIAL PRIMARY KEY,
  connection_id TEXT NOT NULL,
  status TEXT NOT NULL,
  d BIGINT NOT NULL
);
INSERT INTO account_counts (connection_id, status, n)
  SELECT connection_id, status, count(*) FROM connected_accounts GROUP BY connection_id, status;

CREATE FUNCTION account_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO account_count_deltas (connection_id, status, d)
    SELECT connection_id, status, count(*) FROM new_rows GROUP BY connection_id, status;
  RETURN NULL;
END $$;
CREATE FUNCTION account_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO account_count_deltas (connection_id, status, d)
    SELECT connection_id, status, -count(*) FROM old_rows GROUP BY connection_id, status;
  RETURN NULL;
END $$;
CREATE FUNCTION account_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO account_count_deltas (connection_id, status, d)
    SELECT connection_id, status, sum(d) FROM (
      SELECT o.connection_id, o.status, -1 AS d FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.status IS DISTINCT FROM n.status OR o.connection_id IS DISTINCT FROM n.connection_id
      UNION ALL
      SELECT n.connection_id, n.status, 1 AS d FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.status IS DISTINCT FROM n.status OR o.connection_id IS DISTINCT FROM n.connection_id
    ) changed GROUP BY connection_id, status;
  RETURN NULL;
END $$;
CREATE TRIGGER account_counts_insert AFTER INSERT ON connected_accounts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_counts_inserted();
CREATE TRIGGER account_counts_delete AFTER DELETE ON connected_accounts
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_counts_deleted();
CREATE TRIGGER account_counts_update AFTER UPDATE ON connected_accounts
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_counts_updated();
