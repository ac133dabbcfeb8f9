import type { RedisClient } from './redis.ts';
import { evalWrite, type ReplicaWait } from './replica-wait.ts';
import type { Queryable } from './db.ts';

// Leased quota blocks (docs/speed.md): several requests' worth of a key's quota taken from the shared
// counter in one atomic call, so an instance need not make a round trip per request while the key
// has plenty left. A block is added to the very counter the one-by-one path increments, so both
// paths see one number; what a block leaves unspent is handed back by subtracting it. A block is
// also recorded in the counter store with an expiry, and its holder claims it a part at a time: a
// holder that dies (kill -9) or fails to hand back loses at most its last claimed part, and the
// rest returns to the key when the record expires.

export interface BlockGrant {
  /** How many requests the block holds; 0 when none was leased (too little left above the floor). */
  granted: number;
  /** The counter's value after the call: everything counted or leased in the window so far. */
  counted: number;
  /** The block's record in the counter store, for claim and handBack. */
  id: string;
  /** How much of the block the holder may spend at once; the rest stays recorded until claimed. */
  claimed: number;
}

export interface QuotaBlockStore {
  /**
   * Takes up to `want` from the window's counter, but never so much that less than `floor` of
   * `limit` would be left uncounted: the last `floor` requests are always counted one by one.
   * The block is recorded with what its holder has not yet claimed and an expiry `leaseMs` ahead;
   * every call first returns the unclaimed part of expired records to the counter.
   */
  lease(name: string, windowStart: Date, want: number, limit: number, floor: number, ttlSeconds: number, lease: LeaseTerms): Promise<BlockGrant>;
  /** Moves up to `want` of a block's record to its holder; 0 once the record has expired or gone. */
  claim(name: string, windowStart: Date, id: string, want: number, nowMs: number): Promise<number>;
  /** Gives back the unspent part of what was claimed, and whatever the record still holds. */
  handBack(name: string, windowStart: Date, id: string, unspent: number): Promise<void>;
  /**
   * Counts one request, refusing (without counting) at `limit`: the one-by-one path of a key that
   * may lease, so it too returns expired records first. Answers the count with this request.
   */
  spendOne(name: string, windowStart: Date, limit: number, ttlSeconds: number, nowMs: number): Promise<number>;
}

export interface LeaseTerms { id: string; claim: number; leaseMs: number; nowMs: number }

// The same key spelling as the one-by-one Redis counter (src/store/counters.ts), so a lease and
// an increment of one key's window touch one Redis key, and so one hash slot in a Cluster.
const redisKey = (prefix: string, name: string, windowStart: Date) => `${prefix}${name}:${windowStart.getTime() / 1000}`;
// The window's block records: a hash of id -> "unclaimed:expiresAtMs", hash-tagged with the
// counter's whole name (which has no braces, so a Cluster hashes it whole): both in one slot.
const recordsKey = (counterKey: string) => `{${counterKey}}:leases`;

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

export function createRedisQuotaBlocks(redis: RedisClient, prefix = 'keygate:', wait?: ReplicaWait): QuotaBlockStore {
  const keys = (name: string, windowStart: Date) => {
    const counter = redisKey(prefix, name, windowStart);
    return [counter, recordsKey(counter)] as const;
  };
  return {
    async lease(name, windowStart, want, limit, floor, ttlSeconds, t) {
      const [granted, counted, claimed] = (await evalWrite(redis, wait, { script: LEASE_BLOCK, keys: [...keys(name, windowStart)],
        args: [want, limit, floor, ttlSeconds, t.nowMs, t.leaseMs, t.id, t.claim] })) as [number, number, number];
      return { granted: Number(granted), counted: Number(counted), claimed: Number(claimed), id: t.id };
    },
    claim: async (name, windowStart, id, want, nowMs) =>
      Number(await evalWrite(redis, wait, { script: CLAIM, keys: [...keys(name, windowStart)], args: [id, want, nowMs] })),
    async handBack(name, windowStart, id, unspent) {
      await evalWrite(redis, wait, { script: HAND_BACK, keys: [...keys(name, windowStart)], args: [id, unspent] });
    },
    spendOne: async (name, windowStart, limit, ttlSeconds, nowMs) =>
      Number(await evalWrite(redis, wait, { script: SPEND_ONE, keys: [...keys(name, windowStart)], args: [limit, ttlSeconds, nowMs] })),
  };
}

// The same operations on the PostgreSQL counters, each one statement: lease, hand-back and spendOne
// are functions of migration 016 that lock the counter's row before its records, so they neither
// deadlock with one another nor return a record twice. Expiry is judged by the callers' clocks,
// passed in, as on Redis.
export function createPostgresQuotaBlocks(db: Queryable): QuotaBlockStore {
  const windowExpiry = (windowStart: Date, ttlSeconds: number) => new Date(windowStart.getTime() + ttlSeconds * 1000);
  return {
    async lease(name, windowStart, want, limit, floor, ttlSeconds, t) {
      const { rows } = await db.query<{ granted: string; counted: string; claimed: string }>(
        'SELECT granted, counted, claimed FROM keygate_lease_block($1, $2, $3, $4, $5, $6, $7, $8, $9)',
        [name, windowStart, want, limit - floor, windowExpiry(windowStart, ttlSeconds),
          new Date(t.nowMs), new Date(t.nowMs + t.leaseMs), t.id, t.claim]);
      const r = rows[0]!;
      return { granted: Number(r.granted), counted: Number(r.counted), claimed: Number(r.claimed), id: t.id };
    },
    // Only the holder claims from its record; the lock taken here makes a reclaim or hand-back
    // running at once either find the record already claimed from, or leave nothing to claim.
    async claim(name, windowStart, id, want, nowMs) {
      const { rows } = await db.query<{ claimed: string }>(
        `WITH rec AS (SELECT unclaimed FROM counter_leases
                      WHERE name = $1 AND window_start = $2 AND id = $3 AND expires_at > $5 FOR UPDATE)
         UPDATE counter_leases l SET unclaimed = l.unclaimed - LEAST(rec.unclaimed, $4::bigint) FROM rec
         WHERE l.name = $1 AND l.window_start = $2 AND l.id = $3
         RETURNING LEAST(rec.unclaimed, $4::bigint) AS claimed`,
        [name, windowStart, id, want, new Date(nowMs)]);
      return Number(rows[0]?.claimed ?? 0);
    },
    async handBack(name, windowStart, id, unspent) {
      await db.query('SELECT keygate_hand_back_lease($1, $2, $3, $4)', [name, windowStart, id, unspent]);
    },
    async spendOne(name, windowStart, limit, ttlSeconds, nowMs) {
      const { rows } = await db.query<{ value: string }>(
        'SELECT keygate_spend_one($1, $2, $3, $4, $5) AS value',
        [name, windowStart, limit, windowExpiry(windowStart, ttlSeconds), new Date(nowMs)]);
      return Number(rows[0]!.value);
    },
  };
}
