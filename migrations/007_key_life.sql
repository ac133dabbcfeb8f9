-- A key's life (CONTRACT 14): rotation links a key to its successor, and usage keeps daily totals.
-- rotated_to is set once, when a successor is issued; the old key then stops counting toward
-- maxKeysPerUser at once and leaves every key route when its grace period (its expires_at) ends.
ALTER TABLE apikeys ADD COLUMN rotated_from uuid REFERENCES apikeys(id) ON DELETE SET NULL;
ALTER TABLE apikeys ADD COLUMN rotated_to uuid REFERENCES apikeys(id) ON DELETE SET NULL;

-- The rotation audit entry names the key it replaced as well as the new one.
ALTER TABLE audit_log ADD COLUMN previous_key_id uuid;
ALTER TABLE audit_log DROP CONSTRAINT IF EXISTS audit_log_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_type_check
  CHECK (type IN ('API_KEY_CREATED', 'API_KEY_REVOKED', 'API_KEY_ROTATED'));

-- Daily totals per key, written in batches from each instance's in-memory tallies (one upsert per
-- flush, never one write per request) and kept 90 days. They live in PostgreSQL whatever the counter
-- store, so a Redis restart does not lose past days.
CREATE TABLE key_usage_daily (
  key_id uuid NOT NULL REFERENCES apikeys(id) ON DELETE CASCADE,
  day date NOT NULL,
  requests bigint NOT NULL DEFAULT 0,
  refused bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, day)
);
CREATE INDEX key_usage_daily_day_idx ON key_usage_daily (day);
