import pg from 'pg';
import { rejectAsOutage } from './outage.ts';

export type Pool = pg.Pool;
export type Client = pg.PoolClient;
/** Anything a query can run on: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/**
 * A database that cannot be reached (refused, dropped, shutting down, not accepting connections, or
 * the pool timing out) is an outage, not a bug: the request fails closed with 503. Anything else (a
 * constraint, a bad statement) is the caller's to handle or a bug.
 */
function isOutage(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (/^(08|57P|53)/.test(code) || code === '55000' || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code))) return true;
  return typeof message === 'string' && /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(message);
}

/**
 * A pool whose queries, checkouts and checked-out clients reject with StoreUnavailableError naming
 * `store` when the database is out of reach: the one place PostgreSQL errors are read for that.
 */
export function createPool(connectionString: string, max = 10, store = 'database'): Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000 });
  // An idle client that loses its server must not crash the process; the next query fails instead.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    // The pool listens for errors only on idle clients. A checked-out client between two statements
    // (a transaction waiting on Redis, say) that hears its server die would emit an unheard error and
    // crash the process (test/faults/postgres.test.ts); its next query fails instead, as a 503.
    client.on('error', () => {});
    rejectAsOutage(client, ['query'], store, isOutage);
  });
  rejectAsOutage(pool, ['query', 'connect'], store, isOutage);
  return pool;
}

export async function withTransaction<T>(pool: Pool, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}
