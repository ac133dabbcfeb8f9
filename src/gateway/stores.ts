import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import type { Config } from '../config.ts';
import type { Swallowed } from '../errors.ts';
import { createLogger, swallowedReporter } from '../log.ts';
import { type Clock, systemClock } from '../services/clock.ts';
import { type OpenDatabase, openDatabase, requestDeadlines } from '../services/database.ts';
import { logOutages, outageWatchOf } from '../store/outage.ts';
import type { CounterEngine } from '../store/quota/engine.ts';
import { openCounterEngine } from '../store/quota/open.ts';
import type { GatewayOptions } from './options.ts';

// The first step of startGateway: the logger, the database and the counter engine.

export interface Stores {
  clock: Clock;
  logger: Logger;
  /** The main pool, its direct URL (LISTEN needs a session of its own) and the embedded server if any. */
  database: OpenDatabase;
  engine: CounterEngine;
  /** Best-effort cleanups that failed, counted by kind; registered with the metrics later. */
  swallowedErrors: Counter;
  swallowed: Swallowed;
}

export async function openStores(config: Config, opts: GatewayOptions): Promise<Stores> {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel);
  const database = await openDatabase(config, opts.embeddedDataDir);
  const { embedded } = database;
  if (embedded?.relocation) logger.warn({ dataDir: embedded.dataDir }, embedded.relocation);
  else if (embedded) logger.info({ dataDir: embedded.dataDir }, 'embedded PostgreSQL data directory');
  const swallowedErrors = new Counter({
    name: 'keygate_swallowed_errors_total', help: 'Best-effort cleanups that failed and were let go, by kind',
    labelNames: ['what'], registers: [],
  });
  const swallowed = swallowedReporter(logger, (what) => swallowedErrors.inc({ what }));
  // The engine paces its upkeep on real time, not on the gateway's clock: a test that holds that
  // clock still would otherwise hold a failed Redis counter's fail-fast window open for good.
  const engine = openCounterEngine(config.redis, {
    wait: config.redisWait, databaseUrl: database.url, deadlines: requestDeadlines(config), nowMs: Date.now, swallowed, logger,
  });
  // One line when the database's outage begins and one when it ends (the engine tells its own).
  outageWatchOf(database.pool)?.on(logOutages(logger));
  return { clock, logger, database, engine, swallowedErrors, swallowed };
}
