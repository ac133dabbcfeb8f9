import { Counter, Gauge, Registry } from 'prom-client';
import type { Config } from '../config.ts';
import { callerSlots } from '../http/proxy/concurrency.ts';
import { createUpstream } from '../http/proxy/upstream.ts';
import { policyMetrics } from '../http/policy/metrics.ts';
import { createOAuthHolder } from '../oauth/holder.ts';
import { createAccountService } from '../services/accounts.ts';
import { createAuditService } from '../services/audit.ts';
import { createChangeFollower } from '../services/changes.ts';
import { systemEvery } from '../services/clock.ts';
import { createConsoleService } from '../services/console.ts';
import { withDirectPool } from '../services/database.ts';
import { createDeliveryWorker } from '../services/events/delivery.ts';
import { createWebhookService } from '../services/events/webhooks.ts';
import { heapBudgetWarning } from '../services/heap-budget.ts';
import { createRotationService } from '../services/keys/rotation.ts';
import { createKeyService } from '../services/keys/service.ts';
import { createKeyVerifier } from '../services/keys/verifier.ts';
import { createMcpSessionIds } from '../services/mcp-session-ids.ts';
import { createGrantService } from '../services/oauth-grants.ts';
import { createDecisionObserver, createHeartbeat, createPolicyService } from '../services/policy/index.ts';
import { createQuotaSpender } from '../services/quota/lease.ts';
import { sharedSecrets } from '../services/shared-secrets.ts';
import { createSignInThrottle } from '../services/sign-in-throttle.ts';
import { createUsageService } from '../services/usage.ts';
import { createCloseHooks, createRequestTracker } from '../shutdown.ts';
import { findSecrets } from '../store/oauth.ts';
import { logTaskFailure } from '../store/outage.ts';
import { oldestPendingSeconds } from '../store/webhook-claims.ts';
import { followSignals } from './signals.ts';
import type { GatewayOptions } from './options.ts';
import type { Stores } from './stores.ts';
import { backgroundWorkers } from './workers.ts';

// The second step of startGateway: every service over the stores, the metrics they report, the
// signal channel, and the list of background work (not started yet).

export type Services = Awaited<ReturnType<typeof buildServices>>;

export async function buildServices(config: Config, opts: GatewayOptions, stores: Stores) {
  const { clock, logger, engine, swallowed } = stores;
  const { pool } = stores.database;
  const { counters } = engine;
  const every = opts.every ?? systemEvery;
  const quota = createQuotaSpender({ counters, clock, swallowed, ...opts.quotaLease, blocks: engine.blocks });

  const registry = new Registry();
  registry.registerMetric(stores.swallowedErrors);
  const lookups = new Counter({
    name: 'keygate_key_lookups_total',
    help: 'Presented keys by how they were verified: cache hit, database lookup (miss), remembered unknown (negative-hit), '
      + 'refused by format (malformed), or refused as surely not stored with no lookup (refused-unknown)',
    labelNames: ['result'], registers: [registry],
  });
  const verifier = createKeyVerifier({
    pool, clock, every, enabled: config.surface.features.apiKeys, preparedStatements: config.preparedStatements,
    maxBytes: config.keyCache.maxBytes, unknownMaxBytes: config.keyCache.unknownMaxBytes,
    onLookup: (result) => lookups.inc({ result }),
  });
  if (config.surface.features.apiKeys) await verifier.load();
  const heapWarning = heapBudgetWarning(config.keyCache.maxBytes + config.keyCache.unknownMaxBytes);
  if (heapWarning) logger.warn(heapWarning);
  new Gauge({
    name: 'keygate_key_cache_bytes',
    help: 'Estimated heap held by the key verification cache: stored keys (known) and keys found not to exist (unknown)',
    labelNames: ['cache'], registers: [registry],
    collect() {
      const b = verifier.cacheBytes();
      this.set({ cache: 'known' }, b.known);
      this.set({ cache: 'unknown' }, b.unknown);
    },
  });

  const observer = createDecisionObserver({ pool, clock, logger });
  const policyFiles = { model: config.policy.model, file: config.policy.file, scopes: config.policy.scopes };
  const policyService = createPolicyService({ pool, files: policyFiles, logger, observer });
  const heartbeat = createHeartbeat({
    pool, clock, loaded: () => policyService.loaded, onTick: observer.flush, intervalMs: opts.heartbeatMs, logger,
  });
  policyMetrics(registry, () => policyService.loaded.version, observer);
  const changes = createChangeFollower({ pool, forget: verifier.forget });
  // Listen before reading the stored policy and the last change, so a change in between is heard.
  const listener = await followSignals({
    directUrl: stores.database.directUrl, changes, policyService, verifier, logger, signalCheck: opts.signalCheck,
  });
  // On a pool of its own without the request path's deadline, as migrations are: another instance
  // seeding or applying a large policy holds the policy lock for as long as that takes.
  await withDirectPool(stores.database.directUrl, (direct) => policyService.bootstrap(direct));
  const policy = policyService.holder;
  const signInThrottle = createSignInThrottle({ counters, clock });
  const accounts = createAccountService({
    pool, clock, sessionTtlDays: config.auth.sessionTtlDays, forget: verifier.forget, signInThrottle,
  });
  const keys = createKeyService({ pool, counters, config, clock, forget: verifier.forget, scopes: () => policy.current.scopes, swallowed });
  const rotation = createRotationService({ pool, counters, config, clock, forget: verifier.forget, swallowed });
  const usageWrites = new Counter({
    name: 'keygate_usage_writes_total', help: 'Batched writes of per-key usage tallies to PostgreSQL', registers: [registry],
  });
  const usage = createUsageService({
    pool, clock, flushIntervalMs: opts.usageFlush?.intervalMs, every: opts.usageFlush?.every ?? every,
    onWrite: () => usageWrites.inc(),
    onError: (err) => logTaskFailure(logger, err, 'usage tallies could not be written; kept for the next flush'),
    onDropped: (tally, err) =>
      logger.error({ ...tally, reason: (err as Error).message }, 'a usage tally the database refused was dropped; the others were written'),
  });
  const grants = createGrantService({ pool, clock, config, counters, swallowed });
  // Named once the listen address is known (without publicUrl it is the issuer); the library is
  // built by the first request that needs it.
  const oauth = createOAuthHolder();
  const closeHooks = createCloseHooks();
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
  const deliveries = new Counter({
    name: 'keygate_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, retrying (failed, tried again later), failed (no attempt left)',
    labelNames: ['outcome'], registers: [registry],
  });
  new Gauge({
    name: 'keygate_webhook_oldest_undelivered_seconds',
    help: 'Age of the oldest webhook delivery not yet delivered nor failed (0: none)', registers: [registry],
    async collect() { this.set(await oldestPendingSeconds(pool)); },
  });
  const sender = createDeliveryWorker({
    pool, config, logger, pollMs: opts.webhookPollMs, onOutcome: (outcome) => deliveries.inc({ outcome }),
  });
  const workers = backgroundWorkers({ pool, clock, logger, every, changes, heartbeat, policyService, grants, usage, sender });
  const webhooks = createWebhookService({ pool, config, clock });
  return {
    registry, quota, verifier, observer, policyService, heartbeat, listener, policy, accounts, keys, rotation, usage, grants,
    oauth, closeHooks, tracker, upstream, slots, mcpSessionIds, audit, consoleService, sender, workers, webhooks,
  };
}
