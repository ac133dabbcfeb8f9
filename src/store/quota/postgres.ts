import type { Logger } from 'pino';
import type { Swallowed } from '../../errors.ts';
import { createPool, type Deadlines } from '../db.ts';
import { logOutages, outageWatchOf } from '../outage.ts';
import type { CounterEngine } from './engine.ts';
import { createPostgresQuotaBlocks } from './postgres-blocks.ts';
import { createPostgresCounters } from './postgres-counters.ts';

/** The PostgreSQL counter engine's own pool. */
export const COUNTER_POOL_SIZE = 5;

export interface PostgresEngineOptions {
  /** The database the gateway uses; the engine opens its own pool on it. */
  databaseUrl: string;
  deadlines: Deadlines;
  /** Paces the engine's upkeep (its fail-fast window, its sweep of old windows); a test may hand in its own. */
  nowMs: () => number;
  swallowed: Swallowed;
  logger: Pick<Logger, 'error' | 'warn'>;
}

/**
 * The counters and blocks in PostgreSQL, on a pool of their own: a create holds a main-pool
 * connection and its owner's row lock while it counts, so counting from the same pool could wait
 * on itself. `/readyz` already asks the database, so the engine adds no check of its own.
 */
export function openPostgresEngine(o: PostgresEngineOptions): CounterEngine {
  const pool = createPool(o.databaseUrl, COUNTER_POOL_SIZE, 'counter store (PostgreSQL)', o.deadlines);
  const watch = outageWatchOf(pool);
  watch?.on(logOutages(o.logger));
  const counters = createPostgresCounters(pool, o.nowMs, o.swallowed);
  return {
    counters,
    blocks: createPostgresQuotaBlocks(pool),
    probe: null,
    describe: counters.kind,
    postgresConnections: COUNTER_POOL_SIZE,
    async close() {
      watch?.close();
      await counters.close();
      await pool.end();
    },
  };
}
