import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config.ts';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/main.ts';
import { createLogger } from '../../src/log.ts';
import type { Clock, Every } from '../../src/services/clock.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { REDIS_URL } from './redis.ts';

/**
 * A clock that stands still until the test moves it: `clock.set('2026-01-01T23:59:00Z')`. Fixed, so
 * an answer computed from it (Retry-After to midnight, a cache's expiry) does not depend on how
 * long a loaded machine took to get there.
 */
export interface TestClock { now: Clock; set(iso: string | Date): void; advance(ms: number): void }
export function testClock(start: string | Date = new Date()): TestClock {
  let at = new Date(start).getTime();
  return {
    now: () => new Date(at),
    set: (iso) => void (at = new Date(iso).getTime()),
    advance: (ms) => void (at += ms),
  };
}

/** Periodic work the test runs when it chooses (`runAll`), instead of waiting for a timer. */
export interface ManualEvery { every: Every; runAll(): Promise<void>; /** The intervals asked for. */ intervals: number[]; /** Tasks not stopped yet. */ running(): number }
export function manualEvery(): ManualEvery {
  const tasks = new Set<() => Promise<void> | void>();
  const intervals: number[] = [];
  return {
    intervals,
    running: () => tasks.size,
    every: (ms, task) => {
      tasks.add(task);
      intervals.push(ms);
      return () => void tasks.delete(task);
    },
    async runAll() {
      for (const task of [...tasks]) await task();
    },
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
  /** The policy heartbeat's interval; a test beats by hand with `gateway.policy.heartbeat.beat()`. */
  heartbeatMs?: number;
  /** How long a body may send nothing before 408 (the product's default is 10 s). */
  bodyIdleMs?: number;
  /** How long headers may take to arrive whole before 408 (the product's default is 10 s). */
  headersTimeoutMs?: number;
  /** Usage tallies are flushed when this runs (see manualEvery), not on a real timer. */
  usageFlush?: { intervalMs?: number; every?: Every };
  /** Leased quota blocks: sizes and timings. */
  quotaLease?: GatewayOptions['quotaLease'];
  /** A CA the OAuth server trusts for client metadata documents (a test https server's). */
  clientMetadataCa?: string;
  /** How often the event sender looks for due deliveries. */
  webhookPollMs?: number;
}


export interface TestGateway extends Gateway {
  config: Config;
  database: TestDatabase;
  clock: TestClock;
  /** Every log line the gateway wrote, for asserting that no secret was logged. */
  logs: string[];
  /**
   * Resolves once a log line after the first `from` lines (default: those written so far) matches;
   * rejects after `timeoutMs`, a bound on the wait and never the thing waited for.
   */
  waitForLog(pattern: RegExp, opts?: { from?: number; timeoutMs?: number }): Promise<void>;
  /** Runs the gateway's periodic work now (the last-use writer). */
  runPeriodic(): Promise<void>;
  /** The periodic work itself: what was asked for, and what is still running. */
  periodic: ManualEvery;
  stop(): Promise<void>;
}

export async function startTestGateway(opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const database = opts.database ?? (await createTestDatabase());
  const ownsDatabase = !opts.database;
  const clock = opts.clock ?? testClock();
  const periodic = manualEvery();
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: database.url,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'debug',
    ...(opts.counters === 'redis' ? { REDIS_URL: opts.redisUrl ?? REDIS_URL } : {}),
    ...opts.env,
  };
  // A start that fails takes its database with it: the suite's `after` never heard of it.
  const dropOwned = async (e: unknown): Promise<never> => {
    if (ownsDatabase) await database.drop().catch(() => undefined);
    throw e;
  };
  let config: Config;
  try {
    config = loadConfig({ env, overrides: opts.config ?? {} });
  } catch (e) {
    return dropOwned(e);
  }
  const logs: string[] = [];
  const heard = new Set<() => void>();
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      for (const wake of [...heard]) wake();
      cb();
    },
  });
  const waitForLog = (pattern: RegExp, { from = logs.length, timeoutMs = 5000 } = {}) =>
    new Promise<void>((ok, fail) => {
      const check = () => {
        if (!logs.slice(from).some((l) => pattern.test(l))) return;
        heard.delete(check);
        clearTimeout(bound);
        ok();
      };
      const bound = setTimeout(() => {
        heard.delete(check);
        fail(new Error(`no log line matching ${pattern} within ${timeoutMs} ms`));
      }, timeoutMs);
      heard.add(check);
      check();
    });
  const gateway = await startGateway(config, { clock: clock.now, every: periodic.every, logger: createLogger('debug', sink), heartbeatMs: opts.heartbeatMs, bodyIdleMs: opts.bodyIdleMs, headersTimeoutMs: opts.headersTimeoutMs, usageFlush: opts.usageFlush, quotaLease: opts.quotaLease, clientMetadataCa: opts.clientMetadataCa, webhookPollMs: opts.webhookPollMs })
    .catch(dropOwned);
  return {
    ...gateway,
    config,
    database,
    clock,
    logs,
    waitForLog,
    runPeriodic: periodic.runAll,
    periodic,
    async stop() {
      await gateway.close();
      if (ownsDatabase) await database.drop();
    },
  };
}

/**
 * The hooks most suites open with: a gateway started before the suite (or before each test, with
 * `each`) and stopped after it; `use` is handed it once it is up.
 */
export function useGateway(opts: TestGatewayOptions, use: (gw: TestGateway) => void, scope: 'suite' | 'each' = 'suite'): void {
  let gw: TestGateway | undefined;
  (scope === 'each' ? beforeEach : before)(async () => {
    gw = await startTestGateway(opts);
    use(gw);
  });
  (scope === 'each' ? afterEach : after)(async () => {
    await gw?.stop();
    gw = undefined;
  });
}
