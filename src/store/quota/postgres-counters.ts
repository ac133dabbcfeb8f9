import type { Pool } from '../db.ts';
import type { Swallowed } from '../../errors.ts';
import type { CounterStore } from './engine.ts';

/**
 * Counts in PostgreSQL, on a pool of its own made to name the counter store in its outages
 * (postgres.ts). `nowMs` paces the sweep of old windows; injected, as on Redis, so a test can move it.
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
        pool.query('DELETE FROM counters WHERE expires_at < $1', [windowStart])
          .catch((e) => swallowed('counter-sweep', e));
      }
      return Number(rows[0]!.value);
    },
    async spendAll(all, count) {
      // One statement: a function of migration 018 that locks the rows in the order given, reads
      // every room, and counts what fits in all of them, inside the statement's own transaction.
      const { rows } = await pool.query<{ granted: string; vals: string[] }>(
        `SELECT granted, vals
           FROM keygate_spend_windows_n($1::text[], $2::timestamptz[], $3::bigint[], $4::timestamptz[], $5::bigint)`,
        [all.map((c) => c.name), all.map((c) => c.windowStart), all.map((c) => c.limit),
          all.map((c) => new Date(c.windowStart.getTime() + c.ttlSeconds * 1000)), count],
      );
      return { granted: Number(rows[0]!.granted), values: rows[0]!.vals.map(Number) };
    },
    decrement: async (name, windowStart) => void (await pool.query(
      'UPDATE counters SET value = value - 1 WHERE name = $1 AND window_start = $2', [name, windowStart])),
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
