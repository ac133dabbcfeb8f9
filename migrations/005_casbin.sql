-- The policy store read by casbin-pg-adapter: the same table its own migration would create,
-- made here so that it is created once, under our migration lock, with everything else.
CREATE TABLE casbin (
  id serial PRIMARY KEY,
  ptype text NOT NULL,
  rule jsonb NOT NULL
);
CREATE UNIQUE INDEX casbin_rule_key ON casbin (rule);
