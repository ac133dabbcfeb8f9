-- An instance that cannot load the live version keeps enforcing the one it has and says why here,
-- so the fleet's status shows it LAGGING with its reason instead of a silent old version.
ALTER TABLE policy_instances ADD COLUMN lag_reason text;
