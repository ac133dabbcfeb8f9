import { retryOnConflict, type Queryable } from './db.ts';

// Daily usage totals per key (table key_usage_daily) and per OAuth grant (grant_usage_daily).
// Days are UTC dates written as 'YYYY-MM-DD'.

export type UsageSubject = 'key' | 'grant';
export interface UsageDelta { subject: UsageSubject; id: string; day: string; requests: number; refused: number }
export interface UsageRow { day: string; requests: number; refused: number }

// A key id is a uuid, a grant id the library's text. The join leaves out a key or grant deleted
// meanwhile (its owner's account removed), which would otherwise fail the batch on the foreign key.
const ADD = {
  key: `INSERT INTO key_usage_daily (key_id, day, requests, refused)
     SELECT d.id, d.day, d.requests, d.refused
       FROM unnest($1::uuid[], $2::date[], $3::bigint[], $4::bigint[]) AS d(id, day, requests, refused)
       JOIN apikeys k ON k.id = d.id
      ORDER BY d.id, d.day
     ON CONFLICT (key_id, day) DO UPDATE
       SET requests = key_usage_daily.requests + EXCLUDED.requests,
           refused = key_usage_daily.refused + EXCLUDED.refused`,
  grant: `INSERT INTO grant_usage_daily (grant_id, day, requests, refused)
     SELECT d.id, d.day, d.requests, d.refused
       FROM unnest($1::text[], $2::date[], $3::bigint[], $4::bigint[]) AS d(id, day, requests, refused)
       JOIN oauth_grants g ON g.id = d.id
      ORDER BY d.id, d.day
     ON CONFLICT (grant_id, day) DO UPDATE
       SET requests = grant_usage_daily.requests + EXCLUDED.requests,
           refused = grant_usage_daily.refused + EXCLUDED.refused`,
} as const;

/**
 * One statement for a batch of tallies of one subject: adds to what other instances already wrote.
 * Its rows are taken in (id, day) order, the same in every instance, so two batches never wait on
 * each other in a cycle; a conflict that still happens is retried, never dropped.
 */
export async function addUsage(db: Queryable, subject: UsageSubject, deltas: UsageDelta[]): Promise<void> {
  if (!deltas.length) return;
  const columns = [deltas.map((d) => d.id), deltas.map((d) => d.day), deltas.map((d) => d.requests), deltas.map((d) => d.refused)];
  await retryOnConflict(() => db.query(ADD[subject], columns));
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
  await db.query('DELETE FROM grant_usage_daily WHERE day < $1::date', [day]);
}
