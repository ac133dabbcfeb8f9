-- A key revoked because it was found public says so to its owner, with where it was found; a
-- report arriving again for the same key changes nothing.
ALTER TABLE apikeys ADD COLUMN leaked_at timestamptz;
ALTER TABLE apikeys ADD COLUMN leaked_url text;
