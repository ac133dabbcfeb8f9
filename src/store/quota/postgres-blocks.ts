import type { Queryable } from '../db.ts';
import type { QuotaBlockStore } from './engine.ts';

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
