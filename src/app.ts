import { randomUUID } from 'node:crypto';
import Koa, { type Next } from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Config } from './config.ts';
import type { AuditService } from './services/audit.ts';
import type { AccountService } from './services/accounts.ts';
import type { KeyService } from './services/keys/service.ts';
import type { CounterStore } from './store/quota/engine.ts';
import type { Clock } from './services/clock.ts';
import { AppError } from './errors.ts';
import { handleError } from './http/problem.ts';
import { canonicalPath } from './http/canonical-path.ts';
import { requireValidHost } from './http/host.ts';
import { featureGate } from './http/gate.ts';
import { noStoreForIdentity } from './http/cache-control.ts';
import { bodyDeadline, bodyTimedOut, clientGone, standDown } from './http/body-deadline.ts';
import { screens } from './http/screen.ts';
import { apiKeyResolver, resolveCaller, sessionResolver, type KeyAuthenticator } from './http/caller/resolve.ts';
import { spendKeyQuota } from './http/quota.ts';
import { enforcePolicy } from './http/policy/middleware.ts';
import type { PolicyHolder } from './policy/engine.ts';
import { permissionNames } from './policy/scopes.ts';
import { oneByOne, type QuotaSpender } from './services/quota/lease.ts';
import { authRoutes } from './http/routes/auth.ts';
import { apiKeyRoutes } from './http/routes/api-keys.ts';
import { adminRoutes } from './http/routes/admin.ts';
import { consoleRoutes } from './http/routes/console.ts';
import type { ConsoleService } from './services/console.ts';
import { scopeRoutes } from './http/routes/scopes.ts';
import { keyLifeRoutes } from './http/routes/key-life.ts';
import { openApiRoutes } from './http/routes/openapi.ts';
import { buildOpenApi } from './http/openapi.ts';
import type { RotationService } from './services/keys/rotation.ts';
import type { UsageService } from './services/usage.ts';
import { healthRoutes, type Probe } from './http/routes/health.ts';
import { contentRoute } from './http/proxy/content.ts';
import type { Upstream } from './http/proxy/upstream.ts';
import { forwardUpstream } from './http/proxy/forward.ts';
import type { CallerSlots } from './http/proxy/concurrency.ts';
import { limitHeaderCount } from './http/proxy/headers.ts';
import { BODY_IDLE_MS } from './http/body.ts';
import { mcpRefusal, isMcpRefusal } from './mcp/refusal.ts';
import { guardMcpHost } from './mcp/dns-rebinding.ts';
import type { OAuthHolder } from './oauth/holder.ts';
import type { GrantService } from './services/oauth-grants.ts';
import type { UnknownTokenScreen } from './services/keys/unknown-tokens.ts';
import { dropOwnBearer, oauthTokenResolver } from './http/caller/oauth.ts';
import { oauthGrantRoutes } from './http/routes/oauth-grants.ts';
import { localRoutes, routerIndex } from './http/local-routes.ts';
import type { Caller, GatewayState } from './http/state.ts';
import type { Exhausted } from './services/events/exhaustion.ts';
import type { WebhookService } from './services/events/webhooks.ts';
import { webhookRoutes } from './http/routes/webhooks.ts';
import { leakedKeyRoutes } from './http/routes/leaked-keys.ts';
import type { SecretScanning } from './services/events/secret-scanning.ts';
import { secretScanningRoutes } from './http/routes/secret-scanning.ts';

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
}

const ANONYMOUS: Caller = Object.freeze({ kind: 'anonymous' });

// Read through a function: TypeScript would otherwise keep the narrowing of the initial assignment.
const callerOf = (state: GatewayState): Caller => state.caller;

/** A route the gateway serves itself, as its routers hold it. */
export interface ServedRoute { methods: string[]; path: string }

export function createApp(deps: AppDeps): { app: Koa<GatewayState>; routes: ServedRoute[] } {
  const { config, logger } = deps;
  const app = new Koa<GatewayState>();
  app.proxy = false;
  // What reaches here is a response stream that broke after the pipeline was done (a client that
  // hung up, say); errors of the pipeline itself are answered and logged by the front door.
  app.on('error', (err: Error) => logger.debug({ err: { name: err.name, message: err.message } }, 'response stream ended early'));
  const prefix = config.apiPrefix;
  const mcpPath = config.surface.paths.mcp;
  const mcpPathLower = mcpPath.toLowerCase();

  const requests = new Counter({ name: 'keygate_http_requests_total', help: 'HTTP requests by method, status and caller kind', labelNames: ['method', 'status', 'caller'], registers: [deps.registry] });
  const aborts = new Counter({ name: 'keygate_http_client_aborts_total', help: 'Requests whose client went away before the request was whole (a reset or close mid-body): no error of the gateway', registers: [deps.registry] });
  const duration = new Histogram({ name: 'keygate_http_request_duration_seconds', help: 'Request duration', labelNames: ['method'], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers: [deps.registry] });

  // prom-client hashes a label object on every call; the few label sets a gateway sees are looked
  // up once and their children kept. Methods are caller-chosen, so the memo is bounded.
  const requestCounters = new Map<string, { inc(): void }>();
  const countRequest = (method: string, status: number, caller: string) => {
    const k = `${method} ${status} ${caller}`;
    let child = requestCounters.get(k);
    if (!child) {
      child = requests.labels(method, String(status), caller);
      if (requestCounters.size < 1000) requestCounters.set(k, child);
    }
    child.inc();
  };
  const durations = new Map<string, { observe(v: number): void }>();
  const timeRequest = (method: string, seconds: number) => {
    let child = durations.get(method);
    if (!child) {
      child = duration.labels(method);
      if (durations.size < 100) durations.set(method, child);
    }
    child.observe(seconds);
  };

  /** Request id and the caller until one is resolved; the header is set before anything can refuse. */
  function begin(ctx: Koa.ParameterizedContext<GatewayState>) {
    const requestId = randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.caller = ANONYMOUS;
    ctx.res.setHeader('x-request-id', requestId);
  }

  /** One log line per request (never a header value), metrics. */
  function record(ctx: Koa.ParameterizedContext<GatewayState>, started: number) {
    const seconds = (performance.now() - started) / 1000;
    const caller = callerOf(ctx.state);
    // A client that left mid-request got no answer, whatever a reader of its body made of that
    // (a library may have set 500): 499, as the forwarder records it too, never a 5xx.
    const status = ctx.status === 499 || (clientGone(ctx.req) && !bodyTimedOut(ctx.req) && !ctx.res.writableFinished) ? 499 : ctx.status;
    if (status === 499) aborts.inc();
    countRequest(ctx.method, status, caller.kind);
    timeRequest(ctx.method, seconds);
    if (logger.isLevelEnabled('debug') || status >= 500) {
      // A 503 is a store's outage (logged once, when it begins and ends) or a stop: not a warning per request.
      logger[status >= 500 && status !== 503 ? 'warn' : 'debug']({ reqId: ctx.state.requestId, method: ctx.method, path: ctx.path, status, ms: Math.round(seconds * 1e4) / 10, caller: caller.kind, userId: caller.kind === 'anonymous' ? undefined : caller.user.id }, 'request');
    }
  }

  /** Typed errors become problems; refusals on the MCP endpoint take the OAuth form instead. */
  async function answerError(ctx: Koa.ParameterizedContext<GatewayState>, err: unknown) {
    // The client hung up mid-body, or its body went quiet and was answered 408 already: what the
    // reader threw (ECONNRESET, "aborted") is the connection's end, not a store fault.
    if (clientGone(ctx.req) || bodyTimedOut(ctx.req)) {
      logger.debug({ reqId: ctx.state.requestId, err: { name: (err as Error)?.name, message: (err as Error)?.message } }, bodyTimedOut(ctx.req) ? 'request body went quiet; answered 408' : 'client closed the connection mid-request');
      if (!ctx.res.headersSent) ctx.status = 499;
      ctx.respond = false;
      return;
    }
    // Any letter case: the policy decides /api/MCP as /api/mcp, so it is refused the same way.
    const lower = ctx.path.toLowerCase();
    if ((lower === mcpPathLower || lower.startsWith(mcpPathLower + '/')) && isMcpRefusal(err)) return mcpRefusal(ctx, err as AppError, config.publicUrl);
    if (deps.pageErrors && (await deps.pageErrors(ctx, err))) return;
    handleError(ctx, err, (e) => logger.error({ reqId: ctx.state.requestId, err: e }, 'unexpected error'),
      (e) => logger.warn({ reqId: ctx.state.requestId, code: e.code, err: e.cause }, e.internal));
  }

  const watchBody = bodyDeadline(deps.bodyIdleMs ?? BODY_IDLE_MS);
  /**
   * The front door, around everything else: request id, the body's idle rule, errors answered as
   * problems, then metrics and the log line once the answer is known.
   */
  async function frontDoor(ctx: Koa.ParameterizedContext<GatewayState>, next: Next) {
    const started = performance.now();
    begin(ctx);
    try {
      watchBody(ctx);
      await next();
    } catch (err) {
      await answerError(ctx, err);
    } finally {
      if (ctx.req.complete) standDown(ctx.req);
      record(ctx, started);
    }
  }

  const { oauth } = deps;
  const { features, variant } = config.surface;
  const resolvers = [...(oauth ? [oauthTokenResolver(oauth.holder, oauth.grants, oauth.unknownTokens, config)] : []), ...(features.apiKeys ? [apiKeyResolver(deps.verifier, mcpPath)] : []), sessionResolver(deps.accounts)];
  const local = [
    healthRoutes({ probes: deps.probes, registry: deps.registry, readiness: deps.readiness }),
    authRoutes({ accounts: deps.accounts, signUp: config.auth.signUp, secureCookies: config.publicUrl?.startsWith('https:') ?? false }).prefix(prefix),
    ...(features.apiKeys ? [apiKeyRoutes({ keys: deps.keys, variant }).prefix(prefix), leakedKeyRoutes({ keys: deps.keys }).prefix(prefix)] : []),
    adminRoutes({ keys: deps.keys, accounts: deps.accounts, audit: deps.audit }).prefix(prefix),
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

  app.use(frontDoor);
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
  // Who is asking, what it costs them, whether they may: one layer, three steps in this order.
  const resolve = resolveCaller(resolvers);
  const spend = spendKeyQuota(deps.quota ?? oneByOne(deps.counters), deps.clock, deps.usage.record, deps.onExhausted);
  const decide = enforcePolicy(deps.policy, { apiPrefix: prefix, publicUrl: config.publicUrl });
  // Each step answers at once when it has nothing to wait for (a verified key, a leased block), so
  // the usual key request passes this layer without a promise of its own.
  const decideThenGo = (ctx: Koa.ParameterizedContext<GatewayState>, next: Next) => {
    decide(ctx);
    return next();
  };
  const spendThenGo = (ctx: Koa.ParameterizedContext<GatewayState>, next: Next) => {
    const spending = spend(ctx);
    return spending ? spending.then(() => decideThenGo(ctx, next)) : decideThenGo(ctx, next);
  };
  app.use(function admit(ctx: Koa.ParameterizedContext<GatewayState>, next: Next) {
    const resolving = resolve(ctx);
    return resolving ? resolving.then(() => spendThenGo(ctx, next)) : spendThenGo(ctx, next);
  });
  // Which router first has a route for a path (any method), remembered: matching a path against
  // every router's table is otherwise paid twice per forwarded request.
  const firstRouter = routerIndex(local);
  // A path the gateway serves is never forwarded under another letter case: the policy decided
  // it as the gateway's route, so the upstream must not get to answer it differently.
  const servedHere = (path: string) => firstRouter(path.toLowerCase()) >= 0;
  const { timeoutMs, maxConcurrentPerCaller } = config.upstream;
  app.use(forwardUpstream(deps.upstream, prefix, servedHere, (p) => permissionNames(deps.policy.current.scopes, p), { timeoutMs, maxConcurrentPerCaller, bodyIdleMs: deps.bodyIdleMs ?? BODY_IDLE_MS, slots: deps.slots }));
  app.use(localRoutes(local, firstRouter));
  const routes: ServedRoute[] = local.flatMap((r) => r.stack.map((layer) => ({ methods: [...layer.methods], path: String(layer.path) })));
  return { app, routes };
}
