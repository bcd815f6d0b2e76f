-- Accounts per connection and stored status, kept by triggers (SQLite only), so that counting them (the metrics'
-- accounts by status, a connection's account count) reads a few rows instead of an index of a million entries on
-- the event loop. SQLite has one writer at a time, so the counter rows cost no contention; PostgreSQL counts on
-- the server, off the event loop, where a counter row would serialise every insert on a connection.
CREATE TABLE account_counts (
  connection_id TEXT NOT NULL,
  status TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (connection_id, status)
);
INSERT INTO account_counts (connection_id, status, n)
  SELECT connection_id, status, count(*) FROM connected_accounts GROUP BY connection_id, status;

CREATE TRIGGER account_counts_insert AFTER INSERT ON connected_accounts BEGIN
  INSERT INTO account_counts (connection_id, status, n) VALUES (NEW.connection_id, NEW.status, 1)
    ON CONFLICT (connection_id, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER account_counts_delete AFTER DELETE ON connected_accounts BEGIN
  UPDATE account_counts SET n = n - 1 WHERE connection_id = OLD.connection_id AND status = OLD.status;
END;
CREATE TRIGGER account_counts_update AFTER UPDATE OF status, connection_id ON connected_accounts
  WHEN OLD.status IS NOT NEW.status OR OLD.connection_id IS NOT NEW.connection_id BEGIN
  UPDATE account_counts SET n = n - 1 WHERE connection_id = OLD.connection_id AND status = OLD.status;
  INSERT INTO account_counts (connection_id, status, n) VALUES (NEW.connection_id, NEW.status, 1)
    ON CONFLICT (connection_id, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER account_counts_connection_gone AFTER DELETE ON connections BEGIN
  DELETE FROM account_counts WHERE connection_id = OLD.id;
END;
