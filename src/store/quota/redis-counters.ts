import { REDIS_STORE, type RedisClient } from './redis-client.ts';
import { evalWrite, isUnacknowledged, type CounterWrite, type ReplicaWait } from './replica-wait.ts';
import { StoreUnavailableError } from '../../errors.ts';
import { fromStoreOf } from '../outage.ts';
import type { CounterStore } from './engine.ts';
import { groupKeys, KEY_PREFIX, windowKey } from './redis-keys.ts';

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

export interface RedisCounterOptions {
  /** What every key begins with; tests give each run its own. */
  prefix?: string;
  /** Paces the fail-fast window of a counter that did not answer: real time, as the wait it bounds. */
  nowMs?: () => number;
  /** Replicas each write waits for (keygate.yaml `redis.waitReplicas`); none by default. */
  wait?: ReplicaWait;
}

export function createRedisCounters(redis: RedisClient, opts: RedisCounterOptions = {}): CounterStore {
  const { prefix = KEY_PREFIX, nowMs = Date.now, wait } = opts;
  const failing = new Map<string, number>();
  const guardCounter = async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const until = failing.get(key);
    if (until !== undefined) {
      if (nowMs() < until) {
        const why = new Error('this counter failed to answer less than a second ago');
        throw fromStoreOf(redis, new StoreUnavailableError(REDIS_STORE, why));
      }
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
      const write: CounterWrite = { script: INCREMENT_WINDOW, keys: [key], args: [ttlSeconds], counted: () => [[key, 1]] };
      return guardCounter(key, async () => Number(await evalWrite(redis, wait, write)));
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
        const answer = await evalWrite(redis, wait, { script: SPEND_ALL, keys, args: [count, ...args],
          counted: (a) => keys.map((k) => [k, Number((a as unknown[])[0])]) });
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

