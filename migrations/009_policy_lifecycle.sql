-- The policy's lifecycle (CONTRACT 13): every apply is kept as a version an operator can read back
-- and roll back to; a candidate can be evaluated beside the live policy before it decides anything;
-- each instance says which version it runs, so a fleet that lags is visible.

-- The live version is the highest one: a rollback or a promote stores a new version, so the record
-- never rewrites history. The casbin table keeps holding the live lines the gateways load.
CREATE TABLE policy_versions (
  version integer PRIMARY KEY CHECK (version > 0),
  sha256 text NOT NULL,
  model_text text NOT NULL,
  policy_text text NOT NULL,
  scopes_text text NOT NULL,
  applied_at timestamptz NOT NULL,
  applied_by text NOT NULL,
  message text NOT NULL
);

-- At most one candidate at a time; its id changes with each `apply --shadow`, so divergences
-- counted for an earlier candidate never mix with the new one's.
CREATE TABLE policy_shadow (
  id bigserial PRIMARY KEY,
  singleton boolean NOT NULL DEFAULT true UNIQUE CHECK (singleton),
  sha256 text NOT NULL,
  model_text text NOT NULL,
  policy_text text NOT NULL,
  scopes_text text NOT NULL,
  created_at timestamptz NOT NULL,
  created_by text NOT NULL,
  message text NOT NULL
);

-- Counts are added by each instance; the example is the first request seen, with no ids or secrets.
CREATE TABLE policy_shadow_divergences (
  shadow_id bigint NOT NULL REFERENCES policy_shadow (id) ON DELETE CASCADE,
  live_rule text NOT NULL,
  shadow_rule text NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('would-allow', 'would-deny')),
  count bigint NOT NULL,
  example jsonb NOT NULL,
  PRIMARY KEY (shadow_id, live_rule, shadow_rule, outcome)
);

-- One row per running instance, refreshed by its heartbeat; rows older than the horizon are
-- instances that stopped and are simply not listed.
CREATE TABLE policy_instances (
  instance_id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  policy_version integer NOT NULL,
  shadow_id bigint,
  started_at timestamptz NOT NULL,
  seen_at timestamptz NOT NULL
);
CREATE INDEX policy_instances_seen ON policy_instances (seen_at);
