-- Leased quota blocks recorded on the PostgreSQL counters, as they are on Redis: each block's part
-- its holder has not yet claimed, and when the record expires (the holder's clock, passed in).
-- An expired record's unclaimed part goes back to its counter, so a holder killed without handing
-- back loses at most what it had claimed. A record lives no longer than its counter's window: it
-- goes with the counter's row when old windows are swept.
CREATE TABLE counter_leases (
  name text NOT NULL,
  window_start timestamptz NOT NULL,
  id text NOT NULL,
  unclaimed bigint NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (name, window_start, id),
  FOREIGN KEY (name, window_start) REFERENCES counters (name, window_start) ON DELETE CASCADE
);

-- Every function below that changes a counter locks the counter's row before any of its records,
-- so two of them for one window wait for each other instead of deadlocking. A claim locks one
-- record only. A record is deleted by whoever returns it (DELETE ... RETURNING), so it is returned
-- once: a second caller waiting on its lock finds it gone.

-- Deletes the window's expired records and answers what they still held, for the caller (which
-- holds the counter's row lock) to take off the counter.
CREATE FUNCTION keygate_reclaim_leases(cname text, ws timestamptz, now_at timestamptz)
RETURNS bigint LANGUAGE sql AS $$
  WITH gone AS (
    DELETE FROM counter_leases l WHERE l.name = cname AND l.window_start = ws AND l.expires_at <= now_at
    RETURNING l.unclaimed)
  SELECT COALESCE(sum(unclaimed), 0)::bigint FROM gone
$$;

-- Makes the window's counter row if it is missing and locks it, returns its expired records'
-- unclaimed parts to it, and answers its value after that. Every function below that counts
-- starts here, so each takes the counter's lock first.
CREATE FUNCTION keygate_lock_counter(cname text, ws timestamptz, window_expiry timestamptz, now_at timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v bigint;
  back bigint;
BEGIN
  INSERT INTO counters (name, window_start, value, expires_at) VALUES (cname, ws, 0, window_expiry)
    ON CONFLICT (name, window_start) DO NOTHING;
  SELECT c.value INTO v FROM counters c WHERE c.name = cname AND c.window_start = ws FOR UPDATE;
  back := keygate_reclaim_leases(cname, ws, now_at);
  IF back > 0 THEN
    v := v - back;
    UPDATE counters c SET value = v WHERE c.name = cname AND c.window_start = ws;
  END IF;
  RETURN v;
END $$;

-- Leases up to `want` while the counter stays at or under `cap` (the limit less the requests always
-- counted one by one). The holder gets `claim` of it now; the rest is recorded until `lease_until`.
CREATE FUNCTION keygate_lease_block(cname text, ws timestamptz, want bigint, cap bigint, window_expiry timestamptz,
  now_at timestamptz, lease_until timestamptz, lease_id text, claim bigint)
RETURNS TABLE (granted bigint, counted bigint, claimed bigint) LANGUAGE plpgsql AS $$
DECLARE
  v bigint := keygate_lock_counter(cname, ws, window_expiry, now_at);
  n bigint := GREATEST(0, LEAST(want, cap - v));
BEGIN
  IF n > 0 THEN
    UPDATE counters c SET value = v + n WHERE c.name = cname AND c.window_start = ws;
  END IF;
  IF n > LEAST(n, claim) THEN
    INSERT INTO counter_leases (name, window_start, id, unclaimed, expires_at)
      VALUES (cname, ws, lease_id, n - LEAST(n, claim), lease_until);
  END IF;
  RETURN QUERY SELECT n, v + n, LEAST(n, claim);
END $$;

-- Gives back `unspent` of what the holder claimed, and whatever its record still holds.
CREATE FUNCTION keygate_hand_back_lease(cname text, ws timestamptz, lease_id text, unspent bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  back bigint;
BEGIN
  PERFORM 1 FROM counters c WHERE c.name = cname AND c.window_start = ws FOR UPDATE;
  WITH gone AS (
    DELETE FROM counter_leases l WHERE l.name = cname AND l.window_start = ws AND l.id = lease_id
    RETURNING l.unclaimed)
  SELECT unspent + COALESCE(sum(unclaimed), 0) INTO back FROM gone;
  IF back > 0 THEN
    UPDATE counters c SET value = c.value - back WHERE c.name = cname AND c.window_start = ws;
  END IF;
  RETURN back;
END $$;

-- Counts one request unless the counter has reached `lim` (then counts nothing), after returning
-- expired records. Answers the count with this request: above `lim` when refused.
CREATE FUNCTION keygate_spend_one(cname text, ws timestamptz, lim bigint, window_expiry timestamptz, now_at timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v bigint := keygate_lock_counter(cname, ws, window_expiry, now_at);
BEGIN
  IF v < lim THEN
    UPDATE counters c SET value = v + 1 WHERE c.name = cname AND c.window_start = ws;
  END IF;
  RETURN v + 1;
END $$;
