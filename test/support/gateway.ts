import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config.ts';
import { startGateway, type Gateway } from '../../src/main.ts';
import { createLogger } from '../../src/log.ts';
import type { Clock } from '../../src/services/clock.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { REDIS_URL } from './redis.ts';

/** Real time shifted by an offset a test can move: `clock.set('2026-01-01T23:59:00Z')`. */
export interface TestClock { now: Clock; set(iso: string | Date): void; advance(ms: number): void }
export function testClock(start?: string | Date): TestClock {
  let offset = start === undefined ? 0 : new Date(start).getTime() - Date.now();
  return {
    now: () => new Date(Date.now() + offset),
    set: (iso) => void (offset = new Date(iso).getTime() - Date.now()),
    advance: (ms) => void (offset += ms),
  };
}

export interface TestGatewayOptions {
  /** keygate.yaml content, as an object. */
  config?: Record<string, unknown>;
  /** Share a database with another gateway (two instances, one store). */
  database?: TestDatabase;
  /** 'redis' (default when a test asks for it) or 'postgres' counters. */
  counters?: 'redis' | 'postgres';
  redisUrl?: string;
  clock?: TestClock;
  env?: Record<string, string>;
}

export interface TestGateway extends Gateway {
  config: Config;
  database: TestDatabase;
  clock: TestClock;
  /** Every log line the gateway wrote, for asserting that no secret was logged. */
  logs: string[];
  stop(): Promise<void>;
}

export async function startTestGateway(opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const database = opts.database ?? (await createTestDatabase());
  const ownsDatabase = !opts.database;
  const clock = opts.clock ?? testClock();
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: database.url,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'debug',
    ...(opts.counters === 'redis' ? { REDIS_URL: opts.redisUrl ?? REDIS_URL } : {}),
    ...opts.env,
  };
  const config = loadConfig({ env, overrides: opts.config ?? {} });
  const logs: string[] = [];
  const sink = new Writable({ write(chunk, _enc, cb) { logs.push(String(chunk)); cb(); } });
  const gateway = await startGateway(config, { clock: clock.now, logger: createLogger('debug', sink) });
  return {
    ...gateway,
    config,
    database,
    clock,
    logs,
    async stop() {
      await gateway.close();
      if (ownsDatabase) await database.drop();
    },
  };
}
