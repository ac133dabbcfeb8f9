import type { RedisSetting } from '../../config.ts';
import type { CounterEngine } from './engine.ts';
import { openPostgresEngine, type PostgresEngineOptions } from './postgres.ts';
import { openRedisEngine, type RedisEngineOptions } from './redis.ts';

/**
 * The one place the engine is chosen: Redis when keygate.yaml or REDIS_URL names one, else the
 * database. Everything after asks the engine, never which one it is.
 */
export function openCounterEngine(redis: RedisSetting | null, o: RedisEngineOptions & PostgresEngineOptions): CounterEngine {
  return redis ? openRedisEngine(redis, o) : openPostgresEngine(o);
}
