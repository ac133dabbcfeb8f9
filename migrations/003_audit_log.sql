-- Audit entries are written in the same transaction as the change they record.
-- They outlive the key and the account they name, so there are no foreign keys here.
CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  type text NOT NULL CHECK (type IN ('API_KEY_CREATED', 'API_KEY_REVOKED')),
  actor_user_id uuid,
  owner_user_id uuid,
  key_id uuid,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  ip text,
  user_agent text
);
CREATE INDEX audit_log_at_idx ON audit_log (at DESC, id DESC);
