import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { migrationsDir } from '../../../src/services/database.ts';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { REDIS_URL, requireRedis } from '../../support/redis.ts';

// The counter stores' own tests run once per engine: a Redis client under a prefix of the test's
// own, or a migrated database of its own. Either way `close` leaves nothing behind.

export type CounterEngine =
  | { kind: 'redis'; redis: Redis; prefix: string; close(): Promise<void> }
  | { kind: 'postgres'; pool: Pool; close(): Promise<void> };

export async function startCounterEngine(test: Mocha.Context, kind: 'redis' | 'postgres', dbName: string): Promise<CounterEngine> {
  if (kind === 'redis') {
    await requireRedis(test);
    const redis = new Redis(REDIS_URL);
    const prefix = `kgtest:${randomBytes(4).toString('hex')}:`;
    return {
      kind, redis, prefix,
      async close() {
        const keys = await redis.keys(`*${prefix}*`);
        if (keys.length) await redis.del(...keys);
        redis.disconnect();
      },
    };
  }
  const db: TestDatabase = await createTestDatabase(dbName);
  const pool = createPool(db.url);
  await migrate(pool, migrationsDir);
  return {
    kind, pool,
    async close() {
      await pool.end();
      await db.drop();
    },
  };
}
