import { randomUUID } from 'node:crypto';
import Koa, { type Next } from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Config } from './config.ts';
import type { Pool } from './store/db.ts';
import type { AccountService } from './services/accounts.ts';
import type { KeyService } from './services/keys/service.ts';
import type { CounterStore } from './services/counters.ts';
import type { Clock } from './services/clock.ts';
import { AppError } from './services/errors.ts';
import { handleError } from './http/problem.ts';
import { canonicalPath } from './http/canonical-path.ts';
import { apiKeyResolver, resolveCaller, sessionResolver } from './http/caller/resolve.ts';
import { spendKeyQuota } from './http/quota.ts';
import { enforcePolicy, type PolicyHolder } from './http/policy/middleware.ts';
import { authRoutes } from './http/routes/auth.ts';
import { apiKeyRoutes } from './http/routes/api-keys.ts';
import { adminRoutes } from './http/routes/admin.ts';
import { healthRoutes, type Probe } from './http/routes/health.ts';
import { contentRoute } from './http/proxy/content.ts';
import { forwardUpstream, type Upstream } from './http/proxy/upstream.ts';
import { mcpRefusal, isMcpRefusal } from './mcp/refusal.ts';
import { mcpSwitch } from './mcp/routes.ts';
import type { Caller, GatewayState } from './http/state.ts';

export interface AppDeps {
  config: Config;
  pool: Pool;
  accounts: AccountService;
  keys: KeyService;
  counters: CounterStore;
  policy: PolicyHolder;
  upstream: Upstream | null;
  logger: Logger;
  clock: Clock;
  probes: Probe[];
  registry: Registry;
  /** Routers served by the gateway itself beyond the API: the MCP endpoint, the pages. */
  extraRouters?: Router<GatewayState>[];
}

const apiKeyPaths = (prefix: string) => [`${prefix}/api-keys`, `${prefix}/admin/api-keys`, `${prefix}/auth/api-key`];

// Read through a function: TypeScript would otherwise keep the narrowing of the initial assignment.
const callerOf = (state: GatewayState): Caller => state.caller;

/** A route the gateway serves itself, as its routers hold it. */
export interface ServedRoute { methods: string[]; path: string }

export function createApp(deps: AppDeps): { app: Koa<GatewayState>; routes: ServedRoute[] } {
  const { config, logger } = deps;
  const app = new Koa<GatewayState>();
  app.proxy = false;
  // What reaches here is a response stream that broke after the pipeline was done (a client that
  // hung up, say); errors of the pipeline itself are answered and logged by `problems`.
  app.on('error', (err: Error) => logger.debug({ err: { name: err.name, message: err.message } }, 'response stream ended early'));
  const prefix = config.apiPrefix;
  const mcpPath = `${prefix}/mcp`;
  const mcpPathLower = mcpPath.toLowerCase();

  const requests = new Counter({ name: 'keygate_http_requests_total', help: 'HTTP requests by method, status and caller kind', labelNames: ['method', 'status', 'caller'], registers: [deps.registry] });
  const duration = new Histogram({ name: 'keygate_http_request_duration_seconds', help: 'Request duration', labelNames: ['method'], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers: [deps.registry] });

  /** Request id, one log line per request (never a header value), metrics. */
  async function observe(ctx: Koa.ParameterizedContext<GatewayState>, next: Next) {
    const started = process.hrtime.bigint();
    ctx.state.requestId = randomUUID();
    ctx.state.caller = { kind: 'anonymous' };
    ctx.set('x-request-id', ctx.state.requestId);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const caller = callerOf(ctx.state);
      requests.inc({ method: ctx.method, status: String(ctx.status), caller: caller.kind });
      duration.observe({ method: ctx.method }, seconds);
      if (logger.isLevelEnabled('debug') || ctx.status >= 500) {
        logger[ctx.status >= 500 ? 'warn' : 'debug']({ reqId: ctx.state.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1e4) / 10, caller: caller.kind, userId: caller.kind === 'anonymous' ? undefined : caller.user.id }, 'request');
      }
    }
  }

  /** Typed errors become problems; refusals on the MCP endpoint take the OAuth form instead. */
  async function problems(ctx: Koa.ParameterizedContext<GatewayState>, next: Next) {
    try {
      await next();
    } catch (err) {
      // Any letter case: the policy decides /api/MCP as /api/mcp, so it is refused the same way.
      const lower = ctx.path.toLowerCase();
      if ((lower === mcpPathLower || lower.startsWith(mcpPathLower + '/')) && isMcpRefusal(err)) return mcpRefusal(ctx, err as AppError, config.publicUrl);
      handleError(ctx, err, (e) => logger.error({ reqId: ctx.state.requestId, err: e }, 'unexpected error'));
    }
  }

  /** With API keys off, the key routes answer 400 to every caller, before anyone is resolved. */
  async function apiKeysSwitch(ctx: Koa.ParameterizedContext<GatewayState>, next: Next) {
    if (!config.apiKeys.enabled && apiKeyPaths(prefix).some((p) => ctx.path === p || ctx.path.startsWith(p + '/'))) {
      throw new AppError('API_KEYS_DISABLED', 'API keys are turned off on this server.');
    }
    await next();
  }

  const resolvers = [...(config.apiKeys.enabled ? [apiKeyResolver(deps.keys, mcpPath)] : []), sessionResolver(deps.accounts)];
  const local = [
    healthRoutes({ probes: deps.probes, registry: deps.registry }),
    authRoutes({ accounts: deps.accounts, signUp: config.auth.signUp, secureCookies: config.publicUrl?.startsWith('https:') ?? false }).prefix(prefix),
    ...(config.apiKeys.enabled ? [apiKeyRoutes({ keys: deps.keys, variant: config.apiKeys.variant }).prefix(prefix)] : []),
    adminRoutes({ keys: deps.keys, accounts: deps.accounts, pool: deps.pool }).prefix(prefix),
    ...(deps.extraRouters ?? []),
  ];

  app.use(observe);
  app.use(problems);
  app.use(canonicalPath);
  app.use(apiKeysSwitch);
  app.use(mcpSwitch(config));
  app.use(contentRoute(deps.upstream, config.contentApiKey));
  app.use(resolveCaller(resolvers));
  app.use(spendKeyQuota(deps.counters, deps.clock));
  app.use(enforcePolicy(deps.policy, { apiPrefix: prefix, publicUrl: config.publicUrl }));
  // A path the gateway serves is never forwarded under another letter case: the policy decided
  // it as the gateway's route, so the upstream must not get to answer it differently.
  const servedHere = (path: string) => local.some((r) => r.match(path.toLowerCase(), 'GET').path.length > 0);
  app.use(forwardUpstream(deps.upstream, prefix, servedHere));
  for (const router of local) app.use(router.routes());
  const routes = local.flatMap((r) => r.stack.map((layer) => ({ methods: [...layer.methods], path: String(layer.path) })));
  return { app, routes };
}
