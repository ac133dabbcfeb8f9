import type { Queryable } from './db.ts';

// Daily usage totals per key (table key_usage_daily). Days are UTC dates written as 'YYYY-MM-DD'.

export interface UsageDelta { keyId: string; day: string; requests: number; refused: number }
export interface UsageRow { day: string; requests: number; refused: number }

/** One statement for a whole batch of tallies: adds to what other instances already wrote. */
export async function addUsage(db: Queryable, deltas: UsageDelta[]): Promise<void> {
  if (!deltas.length) return;
  // A key deleted meanwhile (its owner's account removed) would fail the whole batch on the foreign
  // key; the join with apikeys leaves it out instead.
  await db.query(
    `INSERT INTO key_usage_daily (key_id, day, requests, refused)
     SELECT d.key_id, d.day, d.requests, d.refused
       FROM unnest($1::uuid[], $2::date[], $3::bigint[], $4::bigint[]) AS d(key_id, day, requests, refused)
       JOIN apikeys k ON k.id = d.key_id
     ON CONFLICT (key_id, day) DO UPDATE
       SET requests = key_usage_daily.requests + EXCLUDED.requests,
           refused = key_usage_daily.refused + EXCLUDED.refused`,
    [deltas.map((d) => d.keyId), deltas.map((d) => d.day), deltas.map((d) => d.requests), deltas.map((d) => d.refused)],
  );
}

/** The days of [from, to] that have counts; the caller fills quiet days with zeros. */
export async function readUsage(db: Queryable, keyId: string, from: string, to: string): Promise<UsageRow[]> {
  const { rows } = await db.query<{ day: string; requests: string; refused: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, requests, refused FROM key_usage_daily
      WHERE key_id = $1 AND day BETWEEN $2::date AND $3::date ORDER BY day`,
    [keyId, from, to],
  );
  return rows.map((r) => ({ day: r.day, requests: Number(r.requests), refused: Number(r.refused) }));
}

export async function deleteUsageBefore(db: Queryable, day: string): Promise<void> {
  await db.query('DELETE FROM key_usage_daily WHERE day < $1::date', [day]);
}
