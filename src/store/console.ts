import type { Queryable } from './db.ts';

// What the operator console counts across the whole installation.

export interface ConsoleCounts { users: number; activeKeys: number; liveGrants: number }

/** Users; keys that work now (not revoked, enabled, not expired); grants not revoked. */
export async function countAll(db: Queryable, now: Date): Promise<ConsoleCounts> {
  const { rows } = await db.query<{ users: number; active_keys: number; live_grants: number }>(
    `SELECT (SELECT count(*)::int FROM users) AS users,
            (SELECT count(*)::int FROM apikeys
              WHERE revoked_at IS NULL AND enabled AND (expires_at IS NULL OR expires_at > $1)) AS active_keys,
            (SELECT count(*)::int FROM oauth_grants WHERE revoked_at IS NULL) AS live_grants`,
    [now],
  );
  const r = rows[0]!;
  return { users: r.users, activeKeys: r.active_keys, liveGrants: r.live_grants };
}

/** Requests and refusals per day over every key and grant, the days of [from, to] that have counts. */
export async function readTotalUsage(
  db: Queryable, from: string, to: string,
): Promise<{ day: string; requests: number; refused: number }[]> {
  const { rows } = await db.query<{ day: string; requests: string; refused: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, sum(requests)::text AS requests, sum(refused)::text AS refused FROM (
        SELECT day, requests, refused FROM key_usage_daily WHERE day BETWEEN $1::date AND $2::date
        UNION ALL
        SELECT day, requests, refused FROM grant_usage_daily WHERE day BETWEEN $1::date AND $2::date
      ) u GROUP BY day ORDER BY day`,
    [from, to],
  );
  return rows.map((r) => ({ day: r.day, requests: Number(r.requests), refused: Number(r.refused) }));
}
