-- Counts up to `wanted` requests of one caller in its day and each of its windows in one call:
-- the requests of one key that reach an instance together are counted in one statement instead
-- of one each. Each counter's row is made if missing, then locked in the order given (the caller
-- always passes one key's counters in the same order, so two calls for one key cannot deadlock);
-- the grant is the smallest room left under any limit (never below 0, at most `wanted`), and every
-- counter is raised by it, so a request that does not fit is counted nowhere. `vals` are the values
-- after the call. keygate_spend_windows (migration 014) stays for instances of the earlier release
-- during a rolling upgrade.
CREATE FUNCTION keygate_spend_windows_n(names text[], starts timestamptz[], limits bigint[], expiries timestamptz[], wanted bigint)
RETURNS TABLE (granted bigint, vals bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  i int;
  v bigint;
  got bigint[] := '{}';
  n bigint := GREATEST(wanted, 0);
BEGIN
  FOR i IN 1 .. array_length(names, 1) LOOP
    INSERT INTO counters (name, window_start, value, expires_at) VALUES (names[i], starts[i], 0, expiries[i])
      ON CONFLICT (name, window_start) DO NOTHING;
    SELECT c.value INTO v FROM counters c WHERE c.name = names[i] AND c.window_start = starts[i] FOR UPDATE;
    got := got || v;
    n := LEAST(n, GREATEST(limits[i] - v, 0));
  END LOOP;
  IF n > 0 THEN
    FOR i IN 1 .. array_length(names, 1) LOOP
      UPDATE counters c SET value = c.value + n WHERE c.name = names[i] AND c.window_start = starts[i];
      got[i] := got[i] + n;
    END LOOP;
  END IF;
  RETURN QUERY SELECT n, got;
END $$;
