import type { RedisClient } from './redis-client.ts';
import { evalWrite } from './replica-wait.ts';
import type { QuotaBlockStore } from './engine.ts';
import { KEY_PREFIX, recordsKey, windowKey } from './redis-keys.ts';
import type { RedisCounterOptions } from './redis-counters.ts';

// Leased quota blocks on Redis (what a block is: engine.ts). Each operation is one script on the
// window's counter and its block records, so it is atomic against every other instance's.

// Shared by every script below: the unclaimed part of each expired record goes back to the
// counter. A claim and this run on one record atomically, so what a holder claimed (and may be
// spending) is never returned, and what it did not claim is returned once.
const RECLAIM = `local function reclaim(now)
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    local rest, exp = string.match(all[i + 1], '^(%d+):(%d+)$')
    if tonumber(exp) <= now then
      if tonumber(rest) > 0 then redis.call('DECRBY', KEYS[1], rest) end
      redis.call('HDEL', KEYS[2], all[i])
    end
  end
end
`;

// ARGV: want, limit, floor, ttlSeconds, nowMs, leaseMs, id, claim. The grant is decided and
// written inside the script: no other instance's increment can land between the read and the write.
const LEASE_BLOCK = `${RECLAIM}
local now = tonumber(ARGV[5])
reclaim(now)
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local room = tonumber(ARGV[2]) - tonumber(ARGV[3]) - v
local n = math.min(tonumber(ARGV[1]), room)
if n <= 0 then return {0, v, 0} end
local after = redis.call('INCRBY', KEYS[1], n)
if after == n then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
local c = math.min(n, tonumber(ARGV[8]))
if n > c then
  redis.call('HSET', KEYS[2], ARGV[7], (n - c) .. ':' .. (now + tonumber(ARGV[6])))
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
return {n, after, c}`;

// ARGV: id, want, nowMs. An expired record is not claimed from: it is the reclaim's.
const CLAIM = `local rec = redis.call('HGET', KEYS[2], ARGV[1])
if not rec then return 0 end
local rest, exp = string.match(rec, '^(%d+):(%d+)$')
rest = tonumber(rest)
if tonumber(exp) <= tonumber(ARGV[3]) then return 0 end
local c = math.min(rest, tonumber(ARGV[2]))
if rest - c > 0 then redis.call('HSET', KEYS[2], ARGV[1], (rest - c) .. ':' .. exp)
else redis.call('HDEL', KEYS[2], ARGV[1]) end
return c`;

// ARGV: id, unspent claimed part.
const HAND_BACK = `local back = tonumber(ARGV[2])
local rec = redis.call('HGET', KEYS[2], ARGV[1])
if rec then
  back = back + tonumber(string.match(rec, '^(%d+):'))
  redis.call('HDEL', KEYS[2], ARGV[1])
end
if back > 0 then redis.call('DECRBY', KEYS[1], back) end
return back`;

// ARGV: limit, ttlSeconds, nowMs.
const SPEND_ONE = `${RECLAIM}
reclaim(tonumber(ARGV[3]))
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v >= tonumber(ARGV[1]) then return v + 1 end
v = redis.call('INCR', KEYS[1])
if v == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return v`;

/** Leased blocks on the counters of createRedisCounters with the same `prefix` and `wait`. */
export function createRedisQuotaBlocks(redis: RedisClient, opts: Pick<RedisCounterOptions, 'prefix' | 'wait'> = {}): QuotaBlockStore {
  const { prefix = KEY_PREFIX, wait } = opts;
  const keys = (name: string, windowStart: Date) => {
    const counter = windowKey(prefix, name, windowStart);
    return [counter, recordsKey(counter)];
  };
  // `counted`: what a refused write gives back to the counter (replica-wait.ts), read from its answer.
  const run = (script: string, name: string, windowStart: Date, args: (string | number)[], counted?: (answer: unknown) => number) => {
    const both = keys(name, windowStart);
    const back = counted && ((a: unknown): [string, number][] => [[both[0]!, counted(a)]]);
    return evalWrite(redis, wait, { script, keys: both, args, ...(back && { counted: back }) });
  };
  return {
    async lease(name, windowStart, want, limit, floor, ttlSeconds, t) {
      const args = [want, limit, floor, ttlSeconds, t.nowMs, t.leaseMs, t.id, t.claim];
      // Refused, the claimed part is given back; the recorded rest returns when its record expires.
      const answer = await run(LEASE_BLOCK, name, windowStart, args, (a) => Number((a as unknown[])[2]));
      const [granted, counted, claimed] = answer as [number, number, number];
      return { granted: Number(granted), counted: Number(counted), claimed: Number(claimed), id: t.id };
    },
    // Refused, the holder never gets the claimed part: it goes back to the counter.
    claim: async (name, windowStart, id, want, nowMs) => Number(await run(CLAIM, name, windowStart, [id, want, nowMs], Number)),
    async handBack(name, windowStart, id, unspent) {
      await run(HAND_BACK, name, windowStart, [id, unspent]);
    },
    spendOne: async (name, windowStart, limit, ttlSeconds, nowMs) =>
      // Counted only when it fitted under the limit (the script answers limit + 1 otherwise).
      Number(await run(SPEND_ONE, name, windowStart, [limit, ttlSeconds, nowMs], (v) => (Number(v) <= limit ? 1 : 0))),
  };
}
