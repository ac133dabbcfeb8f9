-- The shipped policies used to say "everything under a prefix except these paths" with regular-
-- expression lookaheads. A gateway now refuses to load any path pattern that is not linear-time,
-- so a store seeded or applied from the old shipped files would stop every start. Those exact lines
-- (matched by rule id and the old pattern, nothing an operator wrote) are rewritten in the
-- `except` form, which decides every request the same way. Stored versions keep their texts: an
-- old version can no longer be rolled back to without re-applying it in the new form.
UPDATE casbin SET rule = jsonb_set(rule, '{3}', to_jsonb(v.new_path))
  FROM (VALUES
    ('anon.needs-caller', '^/api(/(?!(auth/sign-(up|in)/email|openapi\.json)$).*)?$',
     '/api/** except /api/auth/sign-up/email /api/auth/sign-in/email /api/openapi.json'),
    ('key.ai-needs-ai', '^/api/ai(/(?!automations(/|$)).*)?$',
     '/api/ai/** except /api/ai/automations/**'),
    ('key.auth-layer', '^/api/auth(/(?!(get-session|api-key/get|api-key/list|organization/list|organization/get-active-member)$).*)?$',
     '/api/auth/** except /api/auth/get-session /api/auth/api-key/get /api/auth/api-key/list /api/auth/organization/list /api/auth/organization/get-active-member'),
    ('key.account', '^/api/auth(/(?!(get-session|api-key/(create|update|delete|get|list)|organization/list|organization/get-active-member)$).*)?$',
     '/api/auth/** except /api/auth/get-session /api/auth/api-key/create /api/auth/api-key/update /api/auth/api-key/delete /api/auth/api-key/get /api/auth/api-key/list /api/auth/organization/list /api/auth/organization/get-active-member')
  ) AS v(rule_id, old_path, new_path)
  WHERE casbin.ptype = 'p' AND casbin.rule->>5 = v.rule_id AND casbin.rule->>3 = v.old_path;
