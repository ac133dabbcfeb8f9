-- Version 0 (CONTRACT 21): the first apply over a store seeded from the files at first start keeps
-- what was seeded as version 0, so `keygate policy rollback 0` can return to it.
ALTER TABLE policy_versions DROP CONSTRAINT policy_versions_version_check;
ALTER TABLE policy_versions ADD CONSTRAINT policy_versions_version_check CHECK (version >= 0);
