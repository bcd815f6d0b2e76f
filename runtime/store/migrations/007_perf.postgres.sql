-- Cross-instance cache invalidation (issue 15 point 2): every insert, update or delete of a row the service caches
-- sends `table:id` on the schema's channel (runtime/store/postgres.ts listens), when the transaction commits.
-- An update that only moves a last-use time (every call) or a SQLite-style lease (unused on PostgreSQL) is silent.
CREATE OR REPLACE FUNCTION acs_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  new_row jsonb := CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE to_jsonb(NEW) END;
  old_row jsonb := CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE to_jsonb(OLD) END;
BEGIN
  IF TG_OP = 'UPDATE'
     AND new_row - 'last_used_at' - 'lock_until' - 'lock_owner' = old_row - 'last_used_at' - 'lock_until' - 'lock_owner' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify(left('acs_' || TG_TABLE_SCHEMA, 63), TG_TABLE_NAME || ':' || (COALESCE(new_row, old_row) ->> TG_ARGV[0]));
  RETURN NULL;
END
$$;

CREATE TRIGGER connections_changed AFTER INSERT OR UPDATE OR DELETE ON connections
  FOR EACH ROW EXECUTE FUNCTION acs_notify_change('id');
CREATE TRIGGER connected_accounts_changed AFTER INSERT OR UPDATE OR DELETE ON connected_accounts
  FOR EACH ROW EXECUTE FUNCTION acs_notify_change('id');
CREATE TRIGGER api_credentials_changed AFTER INSERT OR UPDATE OR DELETE ON api_credentials
  FOR EACH ROW EXECUTE FUNCTION acs_notify_change('id');
CREATE TRIGGER meta_changed AFTER INSERT OR UPDATE OR DELETE ON meta
  FOR EACH ROW EXECUTE FUNCTION acs_notify_change('key');
