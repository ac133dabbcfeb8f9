-- Short rate windows beside the daily quota, stamped on a key or a grant when it is made:
-- [{"window":"1s","limit":20}, ...], shortest first; [] for none (every key made before this).
ALTER TABLE apikeys ADD COLUMN rate_limits jsonb NOT NULL DEFAULT '[]';
ALTER TABLE oauth_grants ADD COLUMN rate_limits jsonb NOT NULL DEFAULT '[]';

-- Counts one request in a key's day and each of its windows, all or nothing, in one call (one
-- round trip, one statement for the caller). Each counter's row is made if missing, then locked
-- in the order given (the caller always passes one key's counters in the same order, so two calls
-- for one key cannot deadlock); when any has reached its limit nothing is added and the index
-- (1-based) of the first such counter is answered, else 0. `vals` are the values after the call.
CREATE FUNCTION keygate_spend_windows(names text[], starts timestamptz[], limits bigint[], expiries timestamptz[])
RETURNS TABLE (refused_by int, vals bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  i int;
  v bigint;
  got bigint[] := '{}';
  refused int := 0;
BEGIN
  FOR i IN 1 .. array_length(names, 1) LOOP
    INSERT INTO counters (name, window_start, value, expires_at) VALUES (names[i], starts[i], 0, expiries[i])
      ON CONFLICT (name, window_start) DO NOTHING;
    SELECT c.value INTO v FROM counters c WHERE c.name = names[i] AND c.window_start = starts[i] FOR UPDATE;
    got := got || v;
    IF refused = 0 AND v >= limits[i] THEN refused := i; END IF;
  END LOOP;
  IF refused = 0 THEN
    FOR i IN 1 .. array_length(names, 1) LOOP
      UPDATE counters c SET value = c.value + 1 WHERE c.name = names[i] AND c.window_start = starts[i];
      got[i] := got[i] + 1;
    END LOOP;
  END IF;
  RETURN QUERY SELECT refused, got;
END $$;
