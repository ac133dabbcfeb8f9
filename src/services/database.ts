// Opening the database is shared by the gateway and the CLI; both reach it through here, so neither
// the CLI nor anything else needs the composition root (src/main.ts) to get a pool.
import { resolve } from 'node:path';
import { type Config, packageRoot } from '../config.ts';
import { createPool, type Deadlines, type Pool } from '../store/db.ts';
import { migrate, type MigrationResult } from '../store/migrate.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../store/embedded.ts';

export const migrationsDir = resolve(packageRoot, 'migrations');

export interface OpenDatabase {
  pool: Pool;
  url: string;
  /** The URL for what needs a session of its own: DATABASE_DIRECT_URL, else the same as `url`. */
  directUrl: string;
  embedded: EmbeddedDatabase | null;
}

/**
 * The request path's deadlines. statement_timeout is a startup parameter a transaction pooler
 * (DATABASE_DIRECT_URL set) refuses; there the client-side deadline alone applies.
 */
export const requestDeadlines = (config: Config): Deadlines => ({
  queryTimeoutMs: config.database.queryTimeoutMs,
  serverSide: config.databaseDirectUrl === null,
});

/** The direct pool migrations run on at start (closed before the first request). */
export const DIRECT_POOL_SIZE = 2;

/**
 * The PostgreSQL connections one gateway instance may hold, by what holds them; `total` is their
 * sum, what N instances multiply against the server's max_connections (or a pooler's).
 */
export interface ConnectionBudget { pool: number; counterPool: number; signal: number; direct: number; total: number }

export function connectionBudget(config: Config, counterPoolSize: number): ConnectionBudget {
  const parts = { pool: config.database.poolSize, counterPool: counterPoolSize, signal: 1, direct: DIRECT_POOL_SIZE };
  return { ...parts, total: parts.pool + parts.counterPool + parts.signal + parts.direct };
}

/**
 * Opens the database: DATABASE_URL, or the embedded PostgreSQL kept under .keygate/postgres/.
 * `shareRunning`: a CLI command uses the embedded PostgreSQL a running server has started.
 */
export async function openDatabase(
  config: Config,
  dataDir = resolve('.keygate/postgres'),
  runMigrations = true,
  shareRunning = false,
): Promise<OpenDatabase> {
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(dataDir, 0, packageRoot, shareRunning);
  const url = config.databaseUrl ?? embedded!.url;
  const directUrl = config.databaseDirectUrl ?? url;
  const pool = createPool(url, config.database.poolSize, 'database', requestDeadlines(config));
  if (runMigrations) await withDirectPool(directUrl, (direct) => migrate(direct, migrationsDir));
  return { pool, url, directUrl, embedded };
}

/**
 * A short-lived pool on the direct URL. Migrations hold a session advisory lock across several
 * statements: through a transaction pooler the lock and the DDL would land on different server
 * connections, and the lock could outlive the run on an idle one.
 */
export async function withDirectPool<T>(directUrl: string, fn: (pool: Pool) => Promise<T>): Promise<T> {
  const direct = createPool(directUrl, DIRECT_POOL_SIZE);
  try {
    return await fn(direct);
  } finally {
    await direct.end();
  }
}

export const migrateDatabase = (db: OpenDatabase): Promise<MigrationResult> =>
  withDirectPool(db.directUrl, (direct) => migrate(direct, migrationsDir));

export async function closeDatabase(db: OpenDatabase): Promise<void> {
  await db.pool.end();
  await db.embedded?.stop();
}
