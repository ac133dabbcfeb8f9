-- API keys. Only the SHA-256 of the whole key is kept; `start` is its first 12 characters for display.
-- A revoked key keeps its row so the daily create limit and the audit trail stay exact.
CREATE TABLE apikeys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name text NOT NULL,
  key_hash bytea NOT NULL,
  start text NOT NULL,
  prefix text NOT NULL,
  permissions jsonb NOT NULL DEFAULT '{}'::jsonb,
  request_quota integer NOT NULL CHECK (request_quota > 0),
  enabled boolean NOT NULL DEFAULT true,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_used_at timestamptz
);
CREATE UNIQUE INDEX apikeys_key_hash_key ON apikeys (key_hash);
-- The owner's list and the admin list both read newest first; (created_at, id) is the keyset cursor.
CREATE INDEX apikeys_user_created_idx ON apikeys (user_id, created_at DESC, id DESC);
CREATE INDEX apikeys_created_idx ON apikeys (created_at DESC, id DESC);
