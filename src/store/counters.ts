import { REDIS_STORE, type RedisClient } from './redis.ts';
import { evalWrite, isUnacknowledged, type ReplicaWait } from './replica-wait.ts';
import type { Pool } from './db.ts';
import { StoreUnavailableError, type Swallowed } from '../errors.ts';
import { fromStoreOf } from './outage.ts';

/**
 * Fixed-window counters shared by every gateway instance: daily key creates and request quotas.
 * Redis when configured, else PostgreSQL. A store that does not answer rejects with
 * StoreUnavailableError (the client and the pool are made to, in redis.ts and db.ts), so callers
 * fail closed.
 */
export interface CounterStore {
  readonly kind: 'redis' | 'postgres';
  /** Adds one and returns the new value. The window is forgotten after `ttlSeconds`. */
  increment(name: string, windowStart: Date, ttlSeconds: number): Promise<number>;
  /** Takes one back after a spend that did not happen (a create that failed after counting). */
  decrement(name: string, windowStart: Date): Promise<void>;
  /** Forgets a window's count at once (a sign-in that succeeded clears its e-mail's failures). */
  reset(name: string, windowStart: Date): Promise<void>;
  /**
   * Counts `count` requests of one caller in every counter of `all` (a key's day and its windows),
   * as many of them as fit under every limit, in one atomic call: the first `granted` requests are
   * counted everywhere and the rest nowhere, so a refused request spends nothing. The first counter
   * names the group (on Redis the others are hash-tagged with its key, so a Cluster keeps them in
   * one slot).
   */
  spendAll(all: LimitedCounter[], count: number): Promise<SpendAllResult>;
  /** Current values, 0 where nothing was counted. */
  read(names: string[], windowStart: Date): Promise<number[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface LimitedCounter { name: string; windowStart: Date; limit: number; ttlSeconds: number }
export interface SpendAllResult {
  /** How many of the requests were counted: from 0 (none fitted) to `count`. */
  granted: number;
  /** Each counter's value after the call. */
  values: number[];
}

// The day of the last call, kept: every key request asks, and the answer changes once a day.
// Callers never change the Date they are given (nothing in src/ calls a Date setter).
let today = { from: 0, to: -1, start: new Date(0) };

export function utcDayStart(now: Date): Date {
  const t = now.getTime();
  if (t >= today.from && t < today.to) return today.start;
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  today = { from: start.getTime(), to: start.getTime() + 86_400_000, start };
  return start;
}

export function secondsUntilNextUtcDay(now: Date): number {
  return Math.max(1, Math.ceil((utcDayStart(now).getTime() + 86_400_000 - now.getTime()) / 1000));
}

const windowKey = (prefix: string, name: string, windowStart: Date) => `${prefix}${name}:${windowStart.getTime() / 1000}`;

// One round trip and atomic: the window's expiry is set by the increment that opens it.
const INCREMENT_WINDOW = `local v = redis.call('INCR', KEYS[1])
if v == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return v`;

// As many of ARGV[1] requests as fit under every limit, counted in every counter at once: each
// counter's room is read first, the smallest (never below 0) is the grant, and only then is each
// incremented by it (its expiry set by the increment that opens it). After the count, ARGV holds a
// limit and a lifetime per key. Answers the grant, then the values after it.
const SPEND_ALL = `local n = tonumber(ARGV[1])
local vals = {}
for i = 1, #KEYS do
  local v = tonumber(redis.call('GET', KEYS[i]) or '0')
  vals[i] = v
  local room = tonumber(ARGV[2 * i]) - v
  if room < n then n = math.max(room, 0) end
end
if n > 0 then
  for i = 1, #KEYS do
    vals[i] = redis.call('INCRBY', KEYS[i], n)
    if vals[i] == n then redis.call('EXPIRE', KEYS[i], ARGV[2 * i + 1]) end
  end
end
table.insert(vals, 1, n)
return vals`;

/**
 * Redis keys of a group of counters: the first as a lone counter spells it; each other one
 * hash-tagged with the first's whole name. Redis Cluster hashes a key with no braces whole, and
 * one with braces by what they hold, so every key lands in the first's slot while the first keeps
 * the spelling the one-by-one increment and the leased blocks use (no count is lost by renaming).
 */
const groupKeys = (prefix: string, all: LimitedCounter[]) => {
  const head = windowKey(prefix, all[0]!.name, all[0]!.windowStart);
  return all.map((c, i) => (i === 0 ? head : `{${head}}:${c.name}:${c.windowStart.getTime() / 1000}`));
};

/**
 * How long a counter whose last command failed to get an answer is not asked for again: an
 * increment or decrement of it in that window fails at once. A key create increments its owner's
 * daily counter while holding the owner's row lock (the daily limit and the key limit are checked
 * together), so with a frozen Redis parallel creates of one owner would each add a command timeout
 * to the next one's wait; with the window, a create that got the lock after another one timed out
 * answers 503 at once (every answer within 2 s; test/faults/redis.test.ts). Kept per
 * counter, not per store, so a dead Cluster shard does not refuse the counters of the others.
 */
export const REDIS_FAIL_FAST_MS = 1_000;
const MAX_FAILING_COUNTERS = 10_000;

/** `wait`: replicas each write waits for (keygate.yaml `redis.waitReplicas`); none by default. */
export function createRedisCounters(redis: RedisClient, prefix = 'keygate:', nowMs: () => number = Date.now, wait?: ReplicaWait): CounterStore {
  const failing = new Map<string, number>();
  const guardCounter = async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const until = failing.get(key);
    if (until !== undefined) {
      if (nowMs() < until) throw fromStoreOf(redis, new StoreUnavailableError(REDIS_STORE, new Error('this counter failed to answer less than a second ago')));
      failing.delete(key);
    }
    try {
      return await fn();
    } catch (e) {
      // A count the replicas did not acknowledge was answered; the counter itself is not failing.
      if (isUnacknowledged(e)) throw e;
      if (failing.size >= MAX_FAILING_COUNTERS) for (const [k, t] of failing) if (t <= nowMs()) failing.delete(k);
      if (failing.size < MAX_FAILING_COUNTERS) failing.set(key, nowMs() + REDIS_FAIL_FAST_MS);
      throw e;
    }
  };
  return {
    kind: 'redis',
    increment: (name, windowStart, ttlSeconds) => {
      const key = windowKey(prefix, name, windowStart);
      return guardCounter(key, async () => Number(await evalWrite(redis, wait, { script: INCREMENT_WINDOW, keys: [key], args: [ttlSeconds] })));
    },
    decrement: (name, windowStart) => {
      const key = windowKey(prefix, name, windowStart);
      return guardCounter(key, async () => void (await redis.decr(key)));
    },
    reset: (name, windowStart) => {
      const key = windowKey(prefix, name, windowStart);
      return guardCounter(key, async () => void (await redis.del(key)));
    },
    spendAll: (all, count) => {
      const keys = groupKeys(prefix, all);
      const args = all.flatMap((c) => [c.limit, c.ttlSeconds]);
      return guardCounter(keys[0]!, async () => {
        const answer = await evalWrite(redis, wait, { script: SPEND_ALL, keys, args: [count, ...args] });
        const [granted, ...values] = (answer as (number | string)[]).map(Number);
        return { granted: granted!, values };
      });
    },
    // One GET per key, not MGET: a Cluster refuses MGET across slots, and auto-pipelining still
    // sends the GETs for one node together.
    read: async (names, windowStart) =>
      (await Promise.all(names.map((n) => redis.get(windowKey(prefix, n, windowStart))))).map((v) => Number(v ?? 0)),
    ping: async () => void (await redis.ping()),
    close: async () => void redis.disconnect(),
  };
}

/**
 * Counts in PostgreSQL, on a pool of its own made to name the counter store in its outages
 * (src/main.ts). `nowMs` paces the sweep of old windows; injected so a test can move it.
 */
export function createPostgresCounters(pool: Pool, nowMs: () => number = Date.now, swallowed: Swallowed = () => {}): CounterStore {
  let lastSweep = 0;
  return {
    kind: 'postgres',
    async increment(name, windowStart, ttlSeconds) {
      const expiresAt = new Date(windowStart.getTime() + ttlSeconds * 1000);
      const { rows } = await pool.query<{ value: string }>(
        `INSERT INTO counters (name, window_start, value, expires_at) VALUES ($1, $2, 1, $3)
         ON CONFLICT (name, window_start) DO UPDATE SET value = counters.value + 1 RETURNING value`,
        [name, windowStart, expiresAt],
      );
      // Old windows are swept now and then rather than on every write. "Old" is judged against
      // the window being counted, not the database's clock, so both agree on what is current.
      if (nowMs() - lastSweep > 60_000) {
        lastSweep = nowMs();
        // A sweep that fails only leaves expired rows a minute longer (they count for no window);
        // the count it rides on has been written, so it must not fail for it.
        pool.query('DELETE FROM counters WHERE expires_at < $1', [windowStart]).catch((e) => swallowed('counter-sweep', e));
      }
      return Number(rows[0]!.value);
    },
    async spendAll(all, count) {
      // One statement: a function of migration 018 that locks the rows in the order given, reads
      // every room, and counts what fits in all of them, inside the statement's own transaction.
      const { rows } = await pool.query<{ granted: string; vals: string[] }>(
        'SELECT granted, vals FROM keygate_spend_windows_n($1::text[], $2::timestamptz[], $3::bigint[], $4::timestamptz[], $5::bigint)',
        [all.map((c) => c.name), all.map((c) => c.windowStart), all.map((c) => c.limit),
          all.map((c) => new Date(c.windowStart.getTime() + c.ttlSeconds * 1000)), count],
      );
      return { granted: Number(rows[0]!.granted), values: rows[0]!.vals.map(Number) };
    },
    decrement: async (name, windowStart) =>
      void (await pool.query('UPDATE counters SET value = value - 1 WHERE name = $1 AND window_start = $2', [name, windowStart])),
    reset: async (name, windowStart) =>
      void (await pool.query('DELETE FROM counters WHERE name = $1 AND window_start = $2', [name, windowStart])),
    async read(names, windowStart) {
      if (!names.length) return [];
      const { rows } = await pool.query<{ name: string; value: string }>(
        'SELECT name, value FROM counters WHERE name = ANY($1) AND window_start = $2', [names, windowStart]);
      const byName = new Map(rows.map((r) => [r.name, Number(r.value)]));
      return names.map((n) => byName.get(n) ?? 0);
    },
    ping: async () => void (await pool.query('SELECT 1')),
    close: async () => {},
  };
}
