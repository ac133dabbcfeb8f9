import { createServer, type Server } from 'node:http';
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Counter, Registry } from 'prom-client';
import { type Config, packageRoot } from './config.ts';
import { createApp, type ServedRoute } from './app.ts';
import { createLogger } from './log.ts';
import { createPool, type Pool } from './store/db.ts';
import { migrate } from './store/migrate.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './store/embedded.ts';
import { createAccountService } from './services/accounts.ts';
import { createKeyService } from './services/keys/service.ts';
import { createKeyVerifier } from './services/keys/verifier.ts';
import { createPostgresCounters, createRedisConnection, createRedisCounters, type CounterStore } from './services/counters.ts';
import { type Clock, systemClock } from './services/clock.ts';
import { bootstrapPolicy, loadStoredEngine } from './http/policy/store.ts';
import { listen, type Signal } from './store/notify.ts';
import { readFile } from 'node:fs/promises';
import type { PolicyHolder } from './http/policy/middleware.ts';
import { createUpstream } from './http/proxy/upstream.ts';
import { mcpRoutes } from './mcp/routes.ts';
import { webRoutes } from './web/routes.ts';

export const migrationsDir = resolve(packageRoot, 'migrations');

export interface GatewayOptions {
  clock?: Clock;
  logger?: Logger;
  /** Where the embedded PostgreSQL keeps its data when DATABASE_URL is unset. */
  embeddedDataDir?: string;
}

export interface Gateway {
  server: Server;
  /** The routes served by the gateway itself (the rest under the prefix is forwarded). */
  routes: ServedRoute[];
  url: string;
  pool: Pool;
  close(): Promise<void>;
}

/** Opens the database: DATABASE_URL, or the embedded PostgreSQL kept under .keygate/postgres/. */
export async function openDatabase(config: Config, dataDir = resolve('.keygate/postgres'), runMigrations = true): Promise<{ pool: Pool; url: string; embedded: EmbeddedDatabase | null }> {
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(dataDir);
  const url = config.databaseUrl ?? embedded!.url;
  const pool = createPool(url);
  if (runMigrations) await migrate(pool, migrationsDir);
  return { pool, url, embedded };
}

/** The composition root: config -> pool -> stores -> services -> app -> listen. */
export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel);
  const { pool, url: databaseUrl, embedded } = await openDatabase(config, opts.embeddedDataDir);
  const redis = config.redisUrl ? createRedisConnection(config.redisUrl) : null;
  // PostgreSQL counters get a pool of their own: a create holds a main-pool connection and its
  // owner's row lock while it counts, so counting from the same pool could wait on itself.
  const counterPool = redis ? null : createPool(databaseUrl, 5);
  const counters: CounterStore = redis ? createRedisCounters(redis) : createPostgresCounters(counterPool!);

  const registry = new Registry();
  const lookups = new Counter({ name: 'keygate_key_lookups_total', help: 'Presented keys by how they were verified: cache hit, database lookup (miss), remembered unknown, or refused by format', labelNames: ['result'], registers: [registry] });
  const verifier = createKeyVerifier({ pool, clock, enabled: config.apiKeys.enabled, onLookup: (result) => lookups.inc({ result }) });

  const modelText = await readFile(config.policy.model, 'utf8');
  // Null until the stored policy is first read; a signal before then asks for a reload after it.
  let live: PolicyHolder | null = null;
  let reloadWanted = false;
  // Reloads can overlap; only the latest one started may swap its engine in.
  let reloadSeq = 0;
  // A reload builds a whole new engine and swaps it in one assignment: no request is decided
  // against a half-loaded policy. A failed reload keeps the policy in force.
  const reloadPolicy = async () => {
    if (!live) {
      reloadWanted = true;
      return;
    }
    try {
      const seq = ++reloadSeq;
      const engine = await loadStoredEngine(pool, modelText);
      if (seq !== reloadSeq) return;
      live.current = engine;
      logger.info('policy reloaded');
    } catch (err) {
      logger.error({ err }, 'policy reload failed; keeping the policy in force');
    }
  };
  const onSignal = (s: Signal) => {
    if (s.type === 'policy') void reloadPolicy();
    else if (s.type === 'key') verifier.forgetKey(s.id);
    else if (s.type === 'user') verifier.forgetUser(s.id);
  };
  // Listen before reading the stored policy, so an apply in between is heard; signals sent while
  // the listener was away later are lost, so a reconnect starts over from the database.
  const listener = await listen(databaseUrl, onSignal, () => {
    verifier.forgetAll();
    void reloadPolicy();
  });
  const boot = await bootstrapPolicy(pool, config.policy.model, config.policy.file);
  if (boot.seeded) logger.info({ file: config.policy.file }, 'policy store was empty: applied the policy file');
  else if (boot.differsFromFiles) logger.warn({ file: config.policy.file }, 'the stored policy differs from the policy file; run `keygate policy apply` to use the file');
  const policy: PolicyHolder = { current: boot.engine };
  live = policy;
  if (reloadWanted) await reloadPolicy();
  const accounts = createAccountService({ pool, clock, sessionTtlDays: config.auth.sessionTtlDays, onUserChanged: verifier.forgetUser });
  const keys = createKeyService({ pool, verifier, counters, config, clock, onKeyChanged: verifier.forgetKey });
  const upstream = config.upstream.url ? createUpstream(config.upstream.url) : null;

  const { app, routes } = createApp({
    config, pool, accounts, keys, counters, policy, upstream, logger, clock, registry,
    extraRouters: [mcpRoutes({ config, keys, policy, upstream }), webRoutes({ config })],
    probes: [
      { name: 'postgres', check: async () => void (await pool.query('SELECT 1')) },
      ...(redis ? [{ name: 'redis', check: () => counters.ping() }] : []),
    ],
  });

  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(config.port, config.host, () => ok()));
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ url, database: embedded ? 'embedded' : 'DATABASE_URL', counters: counters.kind }, 'keygate listening');

  return {
    server, url, pool, routes,
    async close() {
      await listener.close();
      await verifier.close();
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
      await upstream?.close();
      await counters.close();
      await counterPool?.end();
      await pool.end();
      await embedded?.stop();
    },
  };
}
