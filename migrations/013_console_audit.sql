-- The operator console's audit kinds: who acted when no user did (`cli`), and what a change
-- changed (a key update's fields, a role's before and after, a policy version).
ALTER TABLE audit_log ADD COLUMN actor text;
ALTER TABLE audit_log ADD COLUMN detail jsonb;
-- The console filters the log by kind and by time; the export walks it by id.
CREATE INDEX audit_log_type_idx ON audit_log (type, id DESC);
