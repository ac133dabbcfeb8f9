-- Daily totals per OAuth grant (CONTRACT 22), apart from key_usage_daily: a grant's id is not a
-- key's uuid, and one table for both let a grant's tally fail every key's batch. Written and kept
-- as key usage is: batched from each instance's tallies, 90 days.
CREATE TABLE grant_usage_daily (
  grant_id text NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
  day date NOT NULL,
  requests bigint NOT NULL DEFAULT 0,
  refused bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (grant_id, day)
);
CREATE INDEX grant_usage_daily_day_idx ON grant_usage_daily (day);
