import pg from 'pg';

export type Pool = pg.Pool;
export type Client = pg.PoolClient;
/** Anything a query can run on: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export function createPool(connectionString: string, max = 10): Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000 });
  // An idle client that loses its server must not crash the process; the next query fails instead.
  pool.on('error', () => {});
  // The pool listens for errors only on idle clients. A checked-out client between two statements
  // (a transaction waiting on Redis, say) that hears its server die would emit an unheard error and
  // crash the process (test/faults/postgres.test.ts); its next query fails instead, as a 503.
  pool.on('connect', (client) => void client.on('error', () => {}));
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
