import type Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { PolicyHolder } from '../policy/engine.ts';
import type { AccountService } from '../services/accounts.ts';
import type { AuditService } from '../services/audit.ts';
import type { ConsoleService } from '../services/console.ts';
import type { SecretScanning } from '../services/events/secret-scanning.ts';
import type { WebhookService } from '../services/events/webhooks.ts';
import type { RotationService } from '../services/keys/rotation.ts';
import type { KeyService } from '../services/keys/service.ts';
import type { GrantService } from '../services/oauth-grants.ts';
import type { UsageService } from '../services/usage.ts';
import { buildOpenApi } from './openapi.ts';
import { servedRoutes, type ServedRoute } from './local-routes.ts';
import { adminRoutes } from './routes/admin.ts';
import { apiKeyRoutes } from './routes/api-keys.ts';
import { authRoutes } from './routes/auth.ts';
import { consoleRoutes } from './routes/console.ts';
import { healthRoutes, type Probe } from './routes/health.ts';
import { keyLifeRoutes } from './routes/key-life.ts';
import { leakedKeyRoutes } from './routes/leaked-keys.ts';
import { oauthGrantRoutes } from './routes/oauth-grants.ts';
import { openApiRoutes } from './routes/openapi.ts';
import { scopeRoutes } from './routes/scopes.ts';
import { secretScanningRoutes } from './routes/secret-scanning.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import type { GatewayState } from './state.ts';

// Every router the gateway serves itself, in dispatch order: the API's under the prefix, then the
// ones handed in from above http/ (the MCP endpoint, the pages). What they serve is the route
// table: the OpenAPI document and the policy's coverage are both read from it.

export interface RouterDeps {
  config: Config;
  accounts: AccountService;
  audit: AuditService;
  console: ConsoleService;
  keys: KeyService;
  rotation: RotationService;
  usage: UsageService;
  policy: PolicyHolder;
  probes: Probe[];
  registry: Registry;
  readiness?: () => Record<string, unknown>;
  oauth?: { grants: GrantService };
  webhooks?: WebhookService;
  secretScanning?: SecretScanning | null;
  extraRouters?: Router<GatewayState>[];
}

export function gatewayRouters(deps: RouterDeps): { routers: Router<GatewayState>[]; routes: ServedRoute[] } {
  const { config, oauth } = deps;
  const prefix = config.apiPrefix;
  const { features, variant } = config.surface;
  const secureCookies = config.publicUrl?.startsWith('https:') ?? false;
  const routers = [
    healthRoutes({ probes: deps.probes, registry: deps.registry, readiness: deps.readiness }),
    authRoutes({ accounts: deps.accounts, signUp: config.auth.signUp, secureCookies }).prefix(prefix),
    ...(features.apiKeys
      ? [apiKeyRoutes({ keys: deps.keys, variant }).prefix(prefix), leakedKeyRoutes({ keys: deps.keys }).prefix(prefix)]
      : []),
    adminRoutes({ keys: deps.keys, accounts: deps.accounts, audit: deps.audit, usage: deps.usage }).prefix(prefix),
    consoleRoutes({ console: deps.console, accounts: deps.accounts, audit: deps.audit, plans: config.plans }).prefix(prefix),
    scopeRoutes({ policy: deps.policy, config }).prefix(prefix),
    ...(features.apiKeys ? [keyLifeRoutes({ rotation: deps.rotation, usage: deps.usage, variant }).prefix(prefix)] : []),
    // Built on the first request, when `routes` below is known: the pages are described from it.
    openApiRoutes(() => buildOpenApi(config, routes)).prefix(prefix),
    ...(oauth ? [oauthGrantRoutes({ grants: oauth.grants }).prefix(prefix)] : []),
    ...(deps.webhooks ? [webhookRoutes({ webhooks: deps.webhooks }).prefix(prefix)] : []),
    secretScanningRoutes({ scanning: deps.secretScanning ?? null }).prefix(prefix),
    ...(deps.extraRouters ?? []),
  ];
  const routes = servedRoutes(routers);
  return { routers, routes };
}
