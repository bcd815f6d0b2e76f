-- The audit log is append-only: an entry is never changed. (Pruning deletes the oldest entries, and moves the
-- anchor in the same transaction.)
CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events BEGIN
  SELECT RAISE(ABORT, 'audit events are append-only');
END;
