import { Redis } from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

let answered: boolean | null = null;

/** Whether a Redis answers at REDIS_URL; tests that need it skip themselves, by name, when not. */
export async function redisAvailable(): Promise<boolean> {
  if (answered !== null) return answered;
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    answered = (await r.ping()) === 'PONG';
  } catch {
    answered = false;
  } finally {
    r.disconnect();
  }
  return answered;
}

/** Calls this.skip() with a reason when no Redis answers. */
export async function requireRedis(ctx: Mocha.Context): Promise<void> {
  if (!(await redisAvailable())) {
    ctx.test?.title && (ctx.test.title += ' (skipped: no Redis at ' + REDIS_URL + ')');
    ctx.skip();
  }
}
