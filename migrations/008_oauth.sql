-- OAuth 2.1 for MCP clients (CONTRACT section 15).
-- oauth_store holds what oidc-provider persists (registrations, codes, tokens, grants, sessions,
-- interactions). Rows are found by the SHA-256 of their id, never the id itself: for a token or a
-- code the id is the secret, so a read of this table yields nothing a client could present.
CREATE TABLE oauth_store (
  model text NOT NULL,
  id_hash bytea NOT NULL,
  -- Sessions are also looked up by their uid, which is as secret as the id.
  uid_hash bytea,
  grant_id text,
  payload jsonb NOT NULL,
  expires_at timestamptz,
  consumed_at timestamptz,
  PRIMARY KEY (model, id_hash)
);
CREATE INDEX oauth_store_grant_idx ON oauth_store (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oauth_store_uid_idx ON oauth_store (model, uid_hash) WHERE uid_hash IS NOT NULL;
CREATE INDEX oauth_store_expires_idx ON oauth_store (expires_at) WHERE expires_at IS NOT NULL;

-- A person's consent to one client: the unit they see under Connected apps and revoke. Its quota
-- is stamped from the owner's plan when granted, as a key's is when created. Deleting the account
-- deletes its grants, and with them every token's standing.
CREATE TABLE oauth_grants (
  id text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  client_id text NOT NULL,
  client_name text NOT NULL,
  request_quota integer NOT NULL CHECK (request_quota > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX oauth_grants_user_idx ON oauth_grants (user_id, created_at DESC);

-- Secrets every instance must share: the cookie signing key of the authorization flow and the
-- signing key oidc-provider requires. Made once, by whichever instance starts first.
CREATE TABLE oauth_secrets (
  id integer PRIMARY KEY CHECK (id = 1),
  cookie_key text NOT NULL,
  jwk jsonb NOT NULL
);

ALTER TABLE audit_log ADD COLUMN grant_id text;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_type_check;
-- The closed list of kinds is the AuditType union in src/store/audit.ts. Other migrations of this
-- round add kinds too; a list here would undo theirs depending on the order they run in.
ALTER TABLE audit_log ADD CONSTRAINT audit_log_type_check CHECK (type ~ '^[A-Z][A-Z0-9_]{2,63}$');
