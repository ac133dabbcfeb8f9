import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Counter, Gauge, Registry } from 'prom-client';
import { policyMetrics } from './http/policy/metrics.ts';
import type { Config } from './config.ts';
import { createApp, type ServedRoute } from './app.ts';
import { createLogger, swallowedReporter } from './log.ts';
import { heapBudgetWarning } from './services/heap-budget.ts';
import { createPool, type Pool } from './store/db.ts';
import { connectionBudget, openDatabase, requestDeadlines } from './services/database.ts';
import { createAccountService } from './services/accounts.ts';
import { createAuditService } from './services/audit.ts';
import { createConsoleService } from './services/console.ts';
import { createSignInThrottle } from './services/sign-in-throttle.ts';
import { createKeyService } from './services/keys/service.ts';
import { createKeyVerifier } from './services/keys/verifier.ts';
import { createPostgresCounters, createRedisCounters, type CounterStore } from './store/counters.ts';
import { type Clock, type Every, systemClock, systemEvery } from './services/clock.ts';
import { createDecisionObserver, createHeartbeat, createPolicyService, POLICY_CHECK_MS, type DecisionObserver, type Heartbeat, type PolicyService } from './services/policy/index.ts';
import { createRedisClient, describeRedis } from './store/redis.ts';
import { replicaGateOf } from './store/replica-wait.ts';
import { createRotationService } from './services/keys/rotation.ts';
import { createUsageService } from './services/usage.ts';
import { createPostgresQuotaBlocks, createRedisQuotaBlocks } from './store/quota-blocks.ts';
import { createQuotaSpender, type LeaseOptions, type QuotaSpender } from './services/quota-lease.ts';
import { listen, type Reconnected, type Signal } from './store/notify.ts';
import { createChangeFollower } from './services/changes.ts';
import { logTaskFailure, outageWatchOf } from './store/outage.ts';
import { createUpstream } from './http/proxy/upstream.ts';
import { callerSlots } from './http/proxy/concurrency.ts';
import { mcpRoutes } from './mcp/routes.ts';
import { pageConfig, webRoutes } from './web/routes.ts';
import { consolePages } from './web/console/routes.ts';
import { webhookPages } from './web/console/webhooks.ts';
import { pageErrors } from './web/error-page.ts';
import { createGrantService } from './services/oauth-grants.ts';
import { createMcpSessionIds } from './services/mcp-session-ids.ts';
import { sharedSecrets } from './services/shared-secrets.ts';
import { findSecrets } from './store/oauth.ts';
import { oauthErrorRenderer, oauthRoutes } from './http/routes/oauth.ts';
import { oauthPages } from './web/consent.ts';
import { createOAuthHolder } from './oauth/holder.ts';
import { createWorkers, everyWorker } from './services/workers.ts';
import { createDeliveryWorker, type DeliveryWorker } from './services/events/delivery.ts';
import { createEventSweep } from './services/events/sweep.ts';
import { createWebhookService } from './services/events/webhooks.ts';
import { createSecretScanning } from './services/events/secret-scanning.ts';
import { createExhaustionEvents } from './services/events/exhaustion.ts';
import { oldestPendingSeconds } from './store/webhook-claims.ts';

const OAUTH_SWEEP_MS = 60 * 60 * 1000;
/** The PostgreSQL counter store's own pool (only without Redis). */
const COUNTER_POOL_SIZE = 5;
import { ACCESS_TOKEN_SECONDS, createOAuthRuntime, oauthIssuer } from './oauth/provider.ts';
import { createUnknownTokenScreen } from './services/keys/unknown-tokens.ts';
import { type CloseHooks, createCloseHooks, createRequestTracker, SHUTDOWN_GRACE_MS } from './shutdown.ts';
import { acceptedMcpHosts, isLoopbackHost } from './mcp/dns-rebinding.ts';

export interface GatewayOptions {
  clock?: Clock;
  /** Runs the periodic work (the last-use writer); a test hands in one it drives itself. */
  every?: Every;
  logger?: Logger;
  /** Where the embedded PostgreSQL keeps its data when DATABASE_URL is unset. */
  embeddedDataDir?: string;
  /** How often the instance records its loaded policy and adds its shadow counts (default 5 s). */
  heartbeatMs?: number;
  /** How long a body may send nothing before 408 (default 10 s); tests shorten it. */
  bodyIdleMs?: number;
  /** How long a request's headers may take to arrive whole (default 10 s); tests shorten it. */
  headersTimeoutMs?: number;
  /** How often the signal channel is checked, and how long the check may take (tests shorten them). */
  signalCheck?: { intervalMs: number; timeoutMs: number };
  /** How usage tallies are flushed (default every 5 s); a test hands in its own ticker. */
  usageFlush?: { intervalMs?: number; every?: Every };
  /** Leased quota blocks: sizes and timings; tests set sweepIntervalMs 0 and sweep by hand. */
  quotaLease?: Pick<LeaseOptions, 'floor' | 'blockSize' | 'blockTtlMs' | 'sweepIntervalMs'>;
  /** How often the event sender looks for due deliveries (default 1 s). */
  webhookPollMs?: number;
  /** A certificate authority trusted for client metadata documents (tests serve them over https with their own). */
  clientMetadataCa?: string;
}

export interface Gateway {
  server: Server;
  /** The routes served by the gateway itself (the rest under the prefix is forwarded). */
  routes: ServedRoute[];
  url: string;
  pool: Pool;
  /** The policy in force, its heartbeat and its decision counts; tests drive them directly. */
  policy: { service: PolicyService; heartbeat: Heartbeat; observer: DecisionObserver };
  /** Buffered writers register their flush here; it runs after the last request, before the pools close. */
  closeHooks: CloseHooks;
  /**
   * Stops well: refuse new connections, `/readyz` 503, let requests in flight finish
   * for up to `graceMs`, run the close hooks, close the signal channel and the pools.
   */
  shutdown(graceMs?: number): Promise<{ cutOff: number }>;
  /** The instance's quota spender, whose blocks a test may hand back at once with sweep(). */
  quota: QuotaSpender;
  /** The event sender; a test may have it look for due deliveries at once. */
  events: DeliveryWorker;
  /** A shutdown without grace: what is in flight is cut at once (tests). */
  close(): Promise<void>;
}

/** A request's headers must be whole within 10 s. */
export const HEADERS_TIMEOUT_MS = 10_000;

/** The composition root: config -> pool -> stores -> services -> app -> listen. */
export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel);
  const { pool, url: databaseUrl, directUrl, embedded } = await openDatabase(config, opts.embeddedDataDir);
  if (embedded?.relocation) logger.warn({ dataDir: embedded.dataDir }, embedded.relocation);
  else if (embedded) logger.info({ dataDir: embedded.dataDir }, 'embedded PostgreSQL data directory');
  const redis = config.redis ? createRedisClient(config.redis) : null;
  // PostgreSQL counters get a pool of their own: a create holds a main-pool connection and its
  // owner's row lock while it counts, so counting from the same pool could wait on itself.
  const counterPool = redis ? null : createPool(databaseUrl, COUNTER_POOL_SIZE, 'counter store (PostgreSQL)', requestDeadlines(config));
  const swallowedErrors = new Counter({
    name: 'keygate_swallowed_errors_total', help: 'Best-effort cleanups that failed and were let go, by kind',
    labelNames: ['what'], registers: [],
  });
  const swallowed = swallowedReporter(logger, (what) => swallowedErrors.inc({ what }));
  const counters: CounterStore = redis
    ? createRedisCounters(redis, undefined, undefined, config.redisWait)
    : createPostgresCounters(counterPool!, () => clock().getTime(), swallowed);
  // One line when a store's outage begins (with its cause) and one when it ends, not one per refusal.
  for (const target of [pool, counterPool, redis]) {
    outageWatchOf(target ?? {})?.on((e) => {
      if (e.state === 'began' && e.part) logger.error({ store: e.store, since: e.since, cause: e.cause, part: e.part }, `${e.store} partly unavailable (${e.part}): what needs that part answers 503 until it answers again`);
      else if (e.state === 'began') logger.error({ store: e.store, since: e.since, cause: e.cause }, `${e.store} unavailable: what needs it answers 503 until it answers again`);
      else logger.warn({ store: e.store, since: e.since, lastedMs: e.lastedMs, refused: e.refused }, `${e.store} available again`);
    });
  }
  // Counting on the master alone while no replica acknowledges (redis.waitReplicas): told once each way.
  if (redis && config.redisWait.waitReplicas > 0) replicaGateOf(redis).on((e) => {
    if (e.state === 'alone') logger.error({ since: e.since, acknowledged: e.acknowledged, wanted: e.wanted }, 'no Redis replica acknowledges counter writes: counting on the master alone (a failover now may lose counts) until one does');
    else logger.warn({ since: e.since, aloneMs: e.aloneMs }, 'Redis replicas acknowledge counter writes again');
  });
  const quota = createQuotaSpender({
    counters, clock, swallowed, ...opts.quotaLease,
    blocks: redis ? createRedisQuotaBlocks(redis, undefined, config.redisWait) : createPostgresQuotaBlocks(counterPool!),
  });

  const registry = new Registry();
  registry.registerMetric(swallowedErrors);
  const lookups = new Counter({ name: 'keygate_key_lookups_total', help: 'Presented keys by how they were verified: cache hit, database lookup (miss), remembered unknown (negative-hit), refused by format (malformed), or refused as surely not stored with no lookup (refused-unknown)', labelNames: ['result'], registers: [registry] });
  const verifier = createKeyVerifier({
    pool, clock, every: opts.every ?? systemEvery, enabled: config.surface.features.apiKeys, preparedStatements: config.preparedStatements,
    maxBytes: config.keyCache.maxBytes, unknownMaxBytes: config.keyCache.unknownMaxBytes,
    onLookup: (result) => lookups.inc({ result }),
  });
  if (config.surface.features.apiKeys) await verifier.load();
  const heapWarning = heapBudgetWarning(config.keyCache.maxBytes + config.keyCache.unknownMaxBytes);
  if (heapWarning) logger.warn(heapWarning);
  new Gauge({
    name: 'keygate_key_cache_bytes', help: 'Estimated heap held by the key verification cache: stored keys (known) and keys found not to exist (unknown)',
    labelNames: ['cache'], registers: [registry],
    collect() {
      const b = verifier.cacheBytes();
      this.set({ cache: 'known' }, b.known);
      this.set({ cache: 'unknown' }, b.unknown);
    },
  });

  const observer = createDecisionObserver({ pool, clock, logger });
  const policyService = createPolicyService({ pool, files: { model: config.policy.model, file: config.policy.file, scopes: config.policy.scopes }, logger, observer });
  const heartbeat = createHeartbeat({ pool, clock, loaded: () => policyService.loaded, onTick: observer.flush, intervalMs: opts.heartbeatMs, logger });
  policyMetrics(registry, () => policyService.loaded.version, observer);
  const changes = createChangeFollower({ pool, forget: verifier.forget });
  const onSignal = (s: Signal, change: number | null) => {
    changes.heard(change);
    if (s.type === 'policy') void policyService.reload();
    else verifier.forget(s);
    logger.debug({ signal: s.type }, 'signal heard');
  };
  // Signals sent while the listener was away are lost: a reconnect reads what it missed from the
  // change record, and starts over from the database only when the record cannot say.
  const onReconnect = async ({ unheardMs, read }: Reconnected) => {
    const caught = await changes.catchUp(unheardMs, read);
    if (caught.status === 'caught-up') {
      logger.warn({ changes: caught.changes, afterChange: caught.afterChange, unheardMs }, `signal channel reconnected: caught up on ${caught.changes} recorded changes`);
      // The version is compared even when no policy change was recorded meanwhile; a cheap read.
      void (caught.policy ? policyService.reload() : policyService.check());
      return;
    }
    logger.warn({ reason: caught.reason, unheardMs }, `signal channel reconnected, but what was missed cannot be read (${caught.reason}): dropped cached keys and re-reading the policy`);
    verifier.forgetAll();
    void policyService.reload();
  };
  // Listen before reading the stored policy and the last change, so a change in between is heard.
  // LISTEN needs a session of its own: through a transaction pooler it would never hear a thing.
  const listener = await listen(directUrl, onSignal, (r) => void onReconnect(r), opts.signalCheck);
  await policyService.bootstrap();
  const policy = policyService.holder;
  const accounts = createAccountService({ pool, clock, sessionTtlDays: config.auth.sessionTtlDays, forget: verifier.forget, signInThrottle: createSignInThrottle({ counters, clock }) });
  const keys = createKeyService({ pool, counters, config, clock, forget: verifier.forget, scopes: () => policy.current.scopes, swallowed });
  const rotation = createRotationService({ pool, counters, config, clock, forget: verifier.forget, swallowed });
  const usageWrites = new Counter({ name: 'keygate_usage_writes_total', help: 'Batched writes of per-key usage tallies to PostgreSQL', registers: [registry] });
  const usage = createUsageService({
    pool, clock, flushIntervalMs: opts.usageFlush?.intervalMs, every: opts.usageFlush?.every ?? opts.every ?? systemEvery,
    onWrite: () => usageWrites.inc(),
    onError: (err) => logTaskFailure(logger, err, 'usage tallies could not be written; kept for the next flush'),
    onDropped: (tally, err) => logger.error({ ...tally, reason: (err as Error).message }, 'a usage tally the database refused was dropped; the others were written'),
  });
  const grants = createGrantService({ pool, clock, config, counters, swallowed });
  // Named once the listen address is known (without publicUrl it is the issuer); the library is
  // built by the first request that needs it.
  const oauth = createOAuthHolder();
  const closeHooks = createCloseHooks();
  const eventSweep = createEventSweep({ pool, clock });
  // Expired codes, sessions, interactions and tokens, and clients never authorized, go hourly;
  // every instance sweeps, and a sweep that finds nothing costs two indexed deletes.
  const sweepHourly = async () => {
    try {
      const swept = await grants.sweep();
      if (swept.expired || swept.unusedClients || swept.endedGrants) logger.debug(swept, 'OAuth store swept');
    } catch (err) {
      logTaskFailure(logger, err, 'the OAuth store could not be swept; tried again within the hour');
    }
    // The change record is kept a day, for an instance whose signal channel was away to catch up.
    try {
      const pruned = await changes.prune();
      if (pruned) logger.debug({ pruned }, 'change record pruned');
    } catch (err) {
      logTaskFailure(logger, err, 'the change record could not be pruned; tried again within the hour');
    }
    try {
      const swept = await eventSweep();
      if (swept.warned || swept.pruned) logger.debug(swept, 'events swept: expiry warnings said, old events pruned');
    } catch (err) {
      logTaskFailure(logger, err, 'expiry warnings or the event prune failed; tried again within the hour');
    }
  };
  closeHooks.add('last-use', () => verifier.flush());
  closeHooks.add('shadow-divergences', () => observer.flush());
  // Unspent leased quota goes back to the shared counter, for the other instances to spend.
  closeHooks.add('leased-quota', () => quota.close());
  const tracker = createRequestTracker();
  const upstream = config.upstream.url ? createUpstream(config.upstream.url, { timeoutMs: config.upstream.timeoutMs }) : null;
  // One count per caller for REST forwards and MCP tool calls together.
  const slots = callerSlots(config.upstream.maxConcurrentPerCaller);

  // Signed with a key every instance derives alike, so an id issued by one is honoured by all.
  const mcpSessionIds = createMcpSessionIds({
    sharedKey: async () => (await sharedSecrets(pool)).cookie_key,
    existingKey: async () => (await findSecrets(pool))?.cookie_key ?? null,
  });
  // One read before the server listens, so that no initialize waits for it; nothing runs later.
  if (config.surface.features.mcp) await mcpSessionIds.load();
  const audit = createAuditService({ pool });
  const consoleService = createConsoleService({ pool, clock, policyFiles: config.policy, logger });
  const deliveries = new Counter({ name: 'keygate_webhook_deliveries_total', help: 'Webhook delivery attempts by outcome: delivered, retrying (failed, tried again later), failed (no attempt left)', labelNames: ['outcome'], registers: [registry] });
  new Gauge({
    name: 'keygate_webhook_oldest_undelivered_seconds', help: 'Age of the oldest webhook delivery not yet delivered nor failed (0: none)', registers: [registry],
    async collect() { this.set(await oldestPendingSeconds(pool)); },
  });
  const sender = createDeliveryWorker({ pool, config, logger, pollMs: opts.webhookPollMs, onOutcome: (outcome) => deliveries.inc({ outcome }) });
  // Started once the instance is ready, stopped in reverse after its last request.
  const workers = createWorkers([
    { name: 'change follower', start: () => changes.start() },
    { name: 'heartbeat', start: () => heartbeat.start(), stop: () => heartbeat.stop() },
    // Besides the signal: a lost signal or a failed reload is caught up within one check.
    everyWorker('policy check', opts.every ?? systemEvery, POLICY_CHECK_MS, () => policyService.check()),
    everyWorker('hourly sweeps', opts.every ?? systemEvery, OAUTH_SWEEP_MS, sweepHourly),
    // After the server stopped taking requests, before the pool closes: the last tallies are kept.
    { name: 'usage flush', stop: () => usage.close() },
    sender,
  ]);
  const webhooks = createWebhookService({ pool, config, clock });
  const consentPages = oauthPages(pageConfig(config));
  const { app, routes } = createApp({
    config, accounts, audit, console: consoleService, keys, rotation, usage, verifier, counters, quota, policy, upstream, logger, clock, registry, bodyIdleMs: opts.bodyIdleMs, slots,
    extraRouters: [mcpRoutes({ config, keys, policy, upstream, oauth, slots, sessionIds: mcpSessionIds }), oauthRoutes({ oauth, grants, pages: consentPages }), webRoutes({ config, policy, accounts, leakedKeys: keys.listLeakedKeys }), consolePages({ config, policy, console: consoleService, accounts, audit, keys, usage }), webhookPages({ config, webhooks })],
    pageErrors: pageErrors(config, (err, reqId) => logger.error({ reqId, err }, 'unexpected error')),
    webhooks,
    secretScanning: config.secretScanning.github.enabled && config.apiKeys.enabled
      ? createSecretScanning({ pool, keysUrl: config.secretScanning.github.keysUrl, prefix: config.apiKeys.prefix, revokeLeaked: keys.revokeLeaked })
      : null,
    onExhausted: createExhaustionEvents({ pool, onError: (err) => logger.warn({ err }, 'a quota.exhausted event could not be written') }),
    readiness: () => ({ policyVersion: policyService.loaded.version }),
    oauth: config.surface.features.oauth ? { holder: oauth, grants, unknownTokens: createUnknownTokenScreen({ pool, clock, lifetimeMs: ACCESS_TOKEN_SECONDS * 1000 }) } : undefined,
    probes: [
      // A load balancer must stop sending here from the moment a stop begins, stores up or not.
      { name: 'accepting', check: async () => { if (tracker.stopping) throw new Error('stopping'); } },
      { name: 'postgres', check: async () => void (await pool.query('SELECT 1')) },
      ...(redis ? [{ name: 'redis', check: () => counters.ping() }] : []),
    ],
  });

  // Headers whole within 10 s (Node's own default is a minute, checked every 30 s, so a
  // slow-headers client held its socket about 66 s); past server.maxConnections Node closes a new
  // connection at once, so a flood of idle sockets cannot take every file descriptor.
  await workers.start();
  const headersTimeout = opts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const server = createServer({ headersTimeout, connectionsCheckingInterval: Math.min(1_000, headersTimeout) }, tracker.listener(app.callback()));
  server.maxConnections = config.server.maxConnections;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(config.port, config.host, () => ok()));
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  if (config.surface.features.oauth) {
    const decided = oauthIssuer(config.publicUrl, config.host, url);
    if ('issuer' in decided) oauth.serve(decided.issuer, () => createOAuthRuntime({ pool, grants, issuer: decided.issuer, mcpPath: config.surface.paths.mcp, renderError: oauthErrorRenderer(consentPages), clientMetadata: config.oauth.clientMetadata, clientMetadataCa: opts.clientMetadataCa }));
    else logger.warn(decided.reason);
  }
  logger.info({
    url, database: embedded ? 'embedded' : config.databaseDirectUrl ? 'DATABASE_URL (pooled) + DATABASE_DIRECT_URL' : 'DATABASE_URL',
    counters: config.redis ? describeRedis(config.redis) : counters.kind, oauthIssuer: oauth.issuer,
    // What this instance may open in all, for the operator to multiply by the fleet's size.
    postgresConnections: connectionBudget(config, counterPool ? COUNTER_POOL_SIZE : 0),
  }, 'keygate listening');
  // Reachable from the network with no public URL: say which names /api/mcp answers to, since a
  // client that uses any other (the machine's name, another address) is refused.
  if (config.surface.features.mcp && !config.publicUrl && !isLoopbackHost(config.host)) {
    logger.warn({ acceptedHosts: acceptedMcpHosts(config) }, `${config.surface.paths.mcp} answers only for these hosts (any port); set publicUrl or mcpServer.allowedHosts for others`);
  }

  let stopped: Promise<{ cutOff: number }> | null = null;
  const shutdown = (graceMs = SHUTDOWN_GRACE_MS) => (stopped ??= (async () => {
    const drained = await tracker.drain(server, graceMs);
    if (drained.cutOff) logger.warn({ requests: drained.cutOff, graceMs }, 'stopping: requests still in flight were cut off');
    await workers.stop(logger);
    // After the last request, so nothing they buffered is left behind; before the pools close.
    await closeHooks.run(logger);
    // Off the fleet's list: a stop on purpose is not an instance gone silent.
    await heartbeat.leave().catch((err: unknown) =>
      logTaskFailure(logger, err, 'could not leave the fleet list; the instance shows as silent there until its retention ends'));
    await listener.close();
    await verifier.close();
    await upstream?.close();
    for (const target of [pool, counterPool, redis]) outageWatchOf(target ?? {})?.close();
    await counters.close();
    await counterPool?.end();
    await pool.end();
    await embedded?.stop();
    logger.info('keygate stopped');
    return drained;
  })());

  return {
    server, url, pool, routes, closeHooks, shutdown, quota, events: sender,
    policy: { service: policyService, heartbeat, observer },
    close: async () => void (await shutdown(0)),
  };
}
