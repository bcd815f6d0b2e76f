-- The audit log is append-only: an entry is never changed. (Pruning deletes the oldest entries, and moves the
-- anchor in the same transaction.)
CREATE OR REPLACE FUNCTION acs_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit events are append-only';
END;
$$;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION acs_audit_append_only();
