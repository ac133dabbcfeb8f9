import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';

export interface BenchDatabase { url: string; name: string; drop(): Promise<void> }

async function withAdmin<T>(serverUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database on the server of `serverUrl`, dropped (sessions and all) by `drop()`. */
export async function createBenchDatabase(serverUrl: string): Promise<BenchDatabase> {
  const name = `keygate_bench_${randomBytes(4).toString('hex')}`;
  await withAdmin(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    name,
    async drop() {
      if (dropped) return;
      await withAdmin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      dropped = true;
    },
  };
}

/** Fails early, with the URL, when PostgreSQL or Redis does not answer. */
export async function checkServices(databaseUrl: string, redisUrl: string): Promise<void> {
  try {
    await withAdmin(databaseUrl, (c) => c.query('SELECT 1'));
  } catch (e) {
    throw new Error(`PostgreSQL does not answer at ${databaseUrl}: ${(e as Error).message}`);
  }
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (e) {
    throw new Error(`Redis does not answer at ${redisUrl}: ${(e as Error).message}`);
  } finally {
    redis.disconnect();
  }
}

/** Deletes the counters the run left in Redis: only those naming the bench's own user and keys. */
export async function deleteRedisCounters(redisUrl: string, ids: readonly string[]): Promise<number> {
  if (!ids.length) return 0;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
  redis.on('error', () => {});
  let deleted = 0;
  try {
    for (const id of ids) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `*keygate:*${id}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) deleted += await redis.del(...keys);
      } while (cursor !== '0');
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}
