-- The counter store used when no Redis is configured: daily create counts and request quotas.
-- One row per (name, window); expired windows are deleted lazily.
CREATE TABLE counters (
  name text NOT NULL,
  window_start timestamptz NOT NULL,
  value bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (name, window_start)
);
CREATE INDEX counters_expires_idx ON counters (expires_at);
