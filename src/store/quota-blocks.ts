import type { RedisClient } from './redis.ts';
import type { Queryable } from './db.ts';

// Leased quota blocks (docs/speed.md): several requests' worth of a key's quota taken from the shared
// counter in one atomic call, so an instance need not make a round trip per request while the key
// has plenty left. A block is added to the very counter the one-by-one path increments, so both
// paths see one number; what a block leaves unspent is handed back by subtracting it.

export interface BlockGrant {
  /** How many requests the block holds; 0 when none was leased (too little left above the floor). */
  granted: number;
  /** The counter's value after the call: everything counted or leased in the window so far. */
  counted: number;
}

export interface QuotaBlockStore {
  /**
   * Takes up to `want` from the window's counter, but never so much that less than `floor` of
   * `limit` would be left uncounted: the last `floor` requests are always counted one by one.
   */
  lease(name: string, windowStart: Date, want: number, limit: number, floor: number, ttlSeconds: number): Promise<BlockGrant>;
  /** Gives back the unspent part of a block. */
  handBack(name: string, windowStart: Date, unspent: number): Promise<void>;
}

// The same key spelling as the one-by-one Redis counter (src/services/counters.ts), so a lease and
// an increment of one key's window touch one Redis key, and so one hash slot in a Cluster.
const redisKey = (prefix: string, name: string, windowStart: Date) => `${prefix}${name}:${windowStart.getTime() / 1000}`;

// One key per script, so it is slot-safe in a Cluster. The grant is decided and written inside the
// script: no other instance's increment can land between the read and the write.
const LEASE_BLOCK = `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local room = tonumber(ARGV[2]) - tonumber(ARGV[3]) - v
local n = math.min(tonumber(ARGV[1]), room)
if n <= 0 then return {0, v} end
local after = redis.call('INCRBY', KEYS[1], n)
if after == n then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
return {n, after}`;

export function createRedisQuotaBlocks(redis: RedisClient, prefix = 'keygate:'): QuotaBlockStore {
  return {
    async lease(name, windowStart, want, limit, floor, ttlSeconds) {
      const [granted, counted] = (await redis.eval(LEASE_BLOCK, 1, redisKey(prefix, name, windowStart), want, limit, floor, ttlSeconds)) as [number, number];
      return { granted: Number(granted), counted: Number(counted) };
    },
    async handBack(name, windowStart, unspent) {
      if (unspent > 0) await redis.decrby(redisKey(prefix, name, windowStart), unspent);
    },
  };
}

export function createPostgresQuotaBlocks(db: Queryable): QuotaBlockStore {
  return {
    async lease(name, windowStart, want, limit, floor, ttlSeconds) {
      const cap = limit - floor;
      // The row lock taken in the CTE is held by the UPDATE: the grant is computed from the value
      // it then writes, so two instances leasing at once are serialised on the row.
      const update = () => db.query<{ value: string; granted: string }>(
        `WITH old AS (SELECT value FROM counters WHERE name = $1 AND window_start = $2 FOR UPDATE)
         UPDATE counters c SET value = c.value + LEAST($3::bigint, $4::bigint - old.value) FROM old
         WHERE c.name = $1 AND c.window_start = $2 AND old.value < $4::bigint
         RETURNING c.value AS value, LEAST($3::bigint, $4::bigint - old.value) AS granted`,
        [name, windowStart, want, cap]);
      let { rows } = await update();
      if (!rows.length) {
        // Either the window has no row yet, or it is too close to the limit. Create the row (a
        // no-op if another instance just did) and ask once more.
        const expiresAt = new Date(windowStart.getTime() + ttlSeconds * 1000);
        const made = await db.query('INSERT INTO counters (name, window_start, value, expires_at) VALUES ($1, $2, 0, $3) ON CONFLICT DO NOTHING', [name, windowStart, expiresAt]);
        if (made.rowCount) ({ rows } = await update());
      }
      if (rows.length) return { granted: Number(rows[0]!.granted), counted: Number(rows[0]!.value) };
      const { rows: now } = await db.query<{ value: string }>('SELECT value FROM counters WHERE name = $1 AND window_start = $2', [name, windowStart]);
      return { granted: 0, counted: Number(now[0]?.value ?? 0) };
    },
    async handBack(name, windowStart, unspent) {
      if (unspent > 0) await db.query('UPDATE counters SET value = value - $3 WHERE name = $1 AND window_start = $2', [name, windowStart, unspent]);
    },
  };
}
