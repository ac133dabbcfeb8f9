-- The console shows a new or rotated signing secret once, on the page its form redirects to, and
-- behind a load balancer that page may be served by any instance. So the instance that answers the
-- form leaves the reveal here, beside the secret it reveals: the SHA-256 of a random one-time token
-- (the token itself is only in the redirect's address), the admin it is for, and until when. The
-- instance that serves the page reads the secret and clears all three in one statement, so it is
-- shown once. A rotation by any other way clears them: the secret they would show is no longer new.
ALTER TABLE webhook_endpoints
  ADD COLUMN reveal_token_hash bytea,
  -- No reference to users: an admin removed meanwhile must not take the endpoint with them.
  ADD COLUMN reveal_user_id uuid,
  ADD COLUMN reveal_until timestamptz,
  ADD CONSTRAINT webhook_endpoints_reveal_whole
    CHECK ((reveal_token_hash IS NULL) = (reveal_user_id IS NULL) AND (reveal_token_hash IS NULL) = (reveal_until IS NULL));
