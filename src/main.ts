import { createServer, type Server } from 'node:http';
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { type Config, packageRoot } from './config.ts';
import { createApp } from './app.ts';
import { createLogger } from './log.ts';
import { createPool, type Pool } from './store/db.ts';
import { migrate } from './store/migrate.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './store/embedded.ts';
import { createAccountService } from './services/accounts.ts';
import { createKeyService } from './services/keys/service.ts';
import { createPostgresCounters, createRedisConnection, createRedisCounters, type CounterStore } from './services/counters.ts';
import { type Clock, systemClock } from './services/clock.ts';
import { loadPolicyEngine } from './http/policy/engine.ts';
import type { PolicyHolder } from './http/policy/middleware.ts';
import { createUpstream } from './http/proxy/upstream.ts';

export const migrationsDir = resolve(packageRoot, 'migrations');

export interface GatewayOptions {
  clock?: Clock;
  logger?: Logger;
  /** Where the embedded PostgreSQL keeps its data when DATABASE_URL is unset. */
  embeddedDataDir?: string;
}

export interface Gateway {
  server: Server;
  url: string;
  pool: Pool;
  close(): Promise<void>;
}

/** Opens the database: DATABASE_URL, or the embedded PostgreSQL kept under .keygate/postgres/. */
export async function openDatabase(config: Config, dataDir = resolve('.keygate/postgres')): Promise<{ pool: Pool; embedded: EmbeddedDatabase | null }> {
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(dataDir);
  const pool = createPool(config.databaseUrl ?? embedded!.url);
  await migrate(pool, migrationsDir);
  return { pool, embedded };
}

/** The composition root: config -> pool -> stores -> services -> app -> listen. */
export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel);
  const { pool, embedded } = await openDatabase(config, opts.embeddedDataDir);
  const redis = config.redisUrl ? createRedisConnection(config.redisUrl) : null;
  const counters: CounterStore = redis ? createRedisCounters(redis) : createPostgresCounters(pool);

  const policy: PolicyHolder = { current: await loadPolicyEngine(config.policy.model, config.policy.file) };
  const accounts = createAccountService({ pool, clock, sessionTtlDays: config.auth.sessionTtlDays });
  const keys = createKeyService({ pool, counters, config, clock });
  const upstream = config.upstream.url ? createUpstream(config.upstream.url) : null;
  const registry = new Registry();

  const app = createApp({
    config, pool, accounts, keys, verifier: keys, counters, policy, upstream, logger, clock, registry,
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
    server, url, pool,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
      await upstream?.close();
      await counters.close();
      await pool.end();
      await embedded?.stop();
    },
  };
}
