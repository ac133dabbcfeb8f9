import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from './config.ts';
import type { AuditService } from './services/audit.ts';
import type { AccountService } from './services/accounts.ts';
import type { KeyService } from './services/keys/service.ts';
import type { CounterStore } from './store/quota/engine.ts';
import type { Clock } from './services/clock.ts';
import type { AppError } from './errors.ts';
import { canonicalPath } from './http/canonical-path.ts';
import { requireValidHost } from './http/host.ts';
import { featureGate } from './http/gate.ts';
import { noStoreForIdentity } from './http/cache-control.ts';
import { screens } from './http/screen.ts';
import { apiKeyResolver, resolveCaller, sessionResolver, type KeyAuthenticator } from './http/caller/resolve.ts';
import { spendKeyQuota } from './http/quota.ts';
import { enforcePolicy } from './http/policy/middleware.ts';
import type { PolicyHolder } from './policy/engine.ts';
import { permissionNames } from './policy/scopes.ts';
import { oneByOne, type QuotaSpender } from './services/quota/lease.ts';
import type { ConsoleService } from './services/console.ts';
import type { RotationService } from './services/keys/rotation.ts';
import type { UsageService } from './services/usage.ts';
import type { Probe } from './http/routes/health.ts';
import { contentRoute } from './http/proxy/content.ts';
import type { Upstream } from './http/proxy/upstream.ts';
import { forwardUpstream } from './http/proxy/forward.ts';
import type { CallerSlots } from './http/proxy/concurrency.ts';
import { limitHeaderCount, type PermissionSpelling } from './http/proxy/headers.ts';
import { BODY_IDLE_MS } from './http/body.ts';
import { mcpRefusal, isMcpRefusal } from './mcp/refusal.ts';
import { guardMcpHost } from './mcp/dns-rebinding.ts';
import type { OAuthHolder } from './oauth/holder.ts';
import type { GrantService } from './services/oauth-grants.ts';
import type { UnknownTokenScreen } from './services/keys/unknown-tokens.ts';
import { dropOwnBearer, oauthTokenResolver } from './http/caller/oauth.ts';
import { localRoutes, routerIndex, type ServedRoute } from './http/local-routes.ts';
import type { GatewayContext, GatewayState } from './http/state.ts';
import type { Exhausted } from './services/events/exhaustion.ts';
import type { WebhookService } from './services/events/webhooks.ts';
import type { SecretScanning } from './services/events/secret-scanning.ts';
import { frontDoor, type ErrorAnswerer } from './http/front-door.ts';
import { admission } from './http/admit.ts';
import { gatewayRouters } from './http/routers.ts';

export type { ServedRoute } from './http/local-routes.ts';

export interface AppDeps {
  config: Config;
  accounts: AccountService;
  audit: AuditService;
  /** The operator console's reads and actions (policy, fleet, usage). */
  console: ConsoleService;
  keys: KeyService;
  /** Presented keys are verified here (cached, invalidated by signals); the caller chain asks it directly. */
  verifier: KeyAuthenticator;
  /** Rotation and usage history. */
  rotation: RotationService;
  usage: UsageService;
  counters: CounterStore;
  /** How key requests spend quota (leased blocks); default: one counter call each. */
  quota?: QuotaSpender;
  policy: PolicyHolder;
  upstream: Upstream | null;
  logger: Logger;
  clock: Clock;
  probes: Probe[];
  /** Extra members of /readyz's body (the policy version in force). */
  readiness?: () => Record<string, unknown>;
  registry: Registry;
  /** How long a body may send nothing, forwarded or not (10 s); tests shorten it. */
  bodyIdleMs?: number;
  /** OAuth for MCP clients; the holder stays empty while there is no issuer. */
  oauth?: { holder: OAuthHolder; grants: GrantService; unknownTokens: UnknownTokenScreen };
  /** Each caller's share of upstream.maxConcurrentPerCaller, held by REST and MCP forwards alike. */
  slots?: CallerSlots;
  /** Webhook endpoints and their deliveries (the admin API). */
  webhooks?: WebhookService;
  /** GitHub's reports of keys found public; null while secretScanning.github.enabled is false. */
  secretScanning?: SecretScanning | null;
  /** Told when a key's or grant's day is refused (the quota.exhausted event). */
  onExhausted?: (who: Exhausted, at: Date) => void;
  /** Routers served by the gateway itself beyond the API: the MCP endpoint, the pages. */
  extraRouters?: Router<GatewayState>[];
  /** Answers a refused or unknown browser navigation as a page; false leaves it a problem. */
  pageErrors?: (ctx: Koa.Context, err: unknown) => Promise<boolean>;
  /** Requests that need no caller (the pages' assets): none is resolved, they are decided as anonymous. */
  callerless?: (ctx: GatewayContext) => boolean;
}

export function createApp(deps: AppDeps): { app: Koa<GatewayState>; routes: ServedRoute[] } {
  const { config, logger } = deps;
  const app = new Koa<GatewayState>();
  app.proxy = false;
  // What reaches here is a response stream that broke after the pipeline was done (a client that
  // hung up, say); errors of the pipeline itself are answered and logged by the front door.
  app.on('error', (err: Error) => logger.debug({ err: { name: err.name, message: err.message } }, 'response stream ended early'));
  const prefix = config.apiPrefix;
  const bodyIdleMs = deps.bodyIdleMs ?? BODY_IDLE_MS;
  const { routers, routes } = gatewayRouters(deps);

  app.use(frontDoor({ logger, registry: deps.registry, bodyIdleMs, answerers: errorAnswerers(deps) }));
  app.use(screens(
    limitHeaderCount,
    canonicalPath,
    noStoreForIdentity(prefix),
    requireValidHost,
    // Before the feature gate and any credential: a rebound name is refused whoever it claims to be.
    guardMcpHost(config),
    // A feature that is off answers for its paths before anyone is resolved or any quota spent.
    featureGate(config.surface),
    // Before anything that forwards (the content route included): a keygate key or token never leaves.
    dropOwnBearer(config),
  ));
  app.use(contentRoute(deps.upstream, config.contentApiKey));
  app.use(admission(
    resolveUnlessCallerless(resolveCaller(callerResolvers(deps)), deps.callerless),
    spendKeyQuota(deps.quota ?? oneByOne(deps.counters), deps.clock, deps.usage.record, deps.onExhausted),
    enforcePolicy(deps.policy, { apiPrefix: prefix, publicUrl: config.publicUrl }),
  ));
  // Which router first has a route for a path (any method): a route's expression is run only for
  // paths that start with its literal part, so a forwarded path costs a few string comparisons.
  const firstRouter = routerIndex(routers);
  // A path the gateway serves is never forwarded under another letter case: the policy decided
  // it as the gateway's route, so the upstream must not get to answer it differently.
  const servedHere = (path: string) => firstRouter(path.toLowerCase()) >= 0;
  const { timeoutMs, maxConcurrentPerCaller } = config.upstream;
  const spell: PermissionSpelling = (p) => permissionNames(deps.policy.current.scopes, p);
  const limits = { timeoutMs, maxConcurrentPerCaller, bodyIdleMs, slots: deps.slots };
  app.use(forwardUpstream(deps.upstream, prefix, servedHere, spell, limits));
  app.use(localRoutes(routers, firstRouter));
  return { app, routes };
}

/**
 * Who is calling, unless the request needs no caller: a page's stylesheet must not wait for (or fail
 * with) the store a session cookie is looked up in.
 */
function resolveUnlessCallerless(resolve: (ctx: GatewayContext) => Promise<void> | undefined, callerless: AppDeps['callerless']) {
  return callerless ? (ctx: GatewayContext) => (callerless(ctx) ? undefined : resolve(ctx)) : resolve;
}

/** The chain of "who is calling", in order: an OAuth token, a key, a session; anonymous otherwise. */
function callerResolvers(deps: AppDeps) {
  const { config, oauth } = deps;
  return [
    ...(oauth ? [oauthTokenResolver(oauth.holder, oauth.grants, oauth.unknownTokens, config)] : []),
    ...(config.surface.features.apiKeys ? [apiKeyResolver(deps.verifier, config.surface.paths.mcp)] : []),
    sessionResolver(deps.accounts),
  ];
}

/** Errors answered in a form other than a problem: refusals on the MCP endpoint, then the pages'. */
function errorAnswerers(deps: AppDeps): ErrorAnswerer[] {
  const { config } = deps;
  const mcpPathLower = config.surface.paths.mcp.toLowerCase();
  // Any letter case: the policy decides /api/MCP as /api/mcp, so it is refused the same way.
  const onMcp = (ctx: GatewayContext) => {
    const lower = ctx.path.toLowerCase();
    return lower === mcpPathLower || lower.startsWith(mcpPathLower + '/');
  };
  const mcp: ErrorAnswerer = (ctx, err) => {
    if (!onMcp(ctx) || !isMcpRefusal(err)) return false;
    mcpRefusal(ctx, err as AppError, config.publicUrl);
    return true;
  };
  const { pageErrors } = deps;
  return pageErrors ? [mcp, (ctx, err) => pageErrors(ctx, err)] : [mcp];
}
