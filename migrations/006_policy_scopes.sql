-- The live scopes file (policies/scopes.yaml) beside the casbin rows: `policy apply` and first-start
-- seeding write both in one transaction, and every reload reads both, so a running instance never
-- decides with one policy's lines and another's scopes. One row: there is one live policy.
CREATE TABLE policy_scopes (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  text text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
