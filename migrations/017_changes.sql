-- Every signal an instance may need (a key or a user's keys to forget, the policy to re-read) is
-- also recorded here, in the transaction that makes the change. An instance whose signal channel
-- was away reads what it missed from here, in order, instead of emptying its caches and sending
-- every key's next request to the database at once. Rows are kept about a day.
CREATE TABLE changes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('policy', 'key', 'user')),
  target uuid,
  -- When the row was written, not when its transaction began: the catch-up's margin is measured from it.
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK ((kind = 'policy') = (target IS NULL))
);
-- The catch-up re-reads what was recorded shortly before the channel was lost; the prune drops by age.
CREATE INDEX changes_recorded_at_idx ON changes (recorded_at);
