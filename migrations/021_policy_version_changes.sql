-- The decisions each policy version changed against the one before. Working them out builds two
-- engines and asks both about every route and caller, seconds of CPU; versions never change, so
-- the answer is worked out once, kept here, and read by the console and its API ever after.
CREATE TABLE policy_version_changes (
  version integer PRIMARY KEY REFERENCES policy_versions (version) ON DELETE CASCADE,
  against integer,
  changed integer NOT NULL,
  decisions jsonb NOT NULL,
  computed_at timestamptz NOT NULL DEFAULT now()
);
