import type { Queryable } from './db.ts';

export interface ClaimedRow {
  endpoint_id: string; event_id: string; attempts: number; url: string; body: string;
  secret: string; previous_secret: string | null; previous_secret_until: Date | null;
}

export interface ClaimLimits {
  /** How many deliveries to claim at most. */
  limit: number;
  /** Attempts one endpoint may have in flight at once. */
  perEndpoint: number;
  /** What this instance already has in flight, per endpoint. */
  busy: Map<string, number>;
  /** How long a claim holds a delivery: longer than an attempt may take. */
  holdMs: number;
}

/**
 * Claims due deliveries of enabled endpoints. SKIP LOCKED lets instances claim side by side without
 * waiting, and the claim moves the delivery's time past the attempt's deadline, so no other
 * instance takes it while this one tries; one that dies lets go when that time passes.
 */
export async function claimDue(db: Queryable, l: ClaimLimits): Promise<ClaimedRow[]> {
  const full = [...l.busy].filter(([, n]) => n >= l.perEndpoint).map(([id]) => id);
  const { rows } = await db.query<ClaimedRow>(
    `WITH due AS (
       SELECT d.endpoint_id, d.event_id, d.next_attempt_at FROM webhook_deliveries d
         JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.enabled
        WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND NOT (d.endpoint_id = ANY ($3::uuid[]))
        ORDER BY d.next_attempt_at LIMIT $1 * 4
        FOR UPDATE OF d SKIP LOCKED),
     ranked AS (
       SELECT endpoint_id, event_id, row_number() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at) AS rn FROM due),
     picked AS (
       SELECT r.endpoint_id, r.event_id FROM ranked r
        LEFT JOIN unnest($4::uuid[], $5::int[]) AS b (id, n) ON b.id = r.endpoint_id
        WHERE r.rn <= $2 - COALESCE(b.n, 0)
        LIMIT $1)
     UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $6 * interval '1 millisecond'
       FROM picked, events e, webhook_endpoints w
      WHERE d.endpoint_id = picked.endpoint_id AND d.event_id = picked.event_id AND e.id = d.event_id AND w.id = d.endpoint_id
     RETURNING d.endpoint_id, d.event_id, d.attempts, w.url, e.body, w.secret, w.previous_secret, w.previous_secret_until`,
    [l.limit, l.perEndpoint, full, [...l.busy.keys()], [...l.busy.values()], l.holdMs],
  );
  return rows;
}

export interface AttemptResult { status: number | null; durationMs: number; error: string | null; response: string | null; ok: boolean }

/** Logs an attempt and settles its delivery: delivered, due again after `retryMs`, or failed when `retryMs` is null. */
export async function settleAttempt(
  db: Queryable, endpointId: string, eventId: string, r: AttemptResult, retryMs: number | null,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_attempts (endpoint_id, event_id, status, duration_ms, error, response) VALUES ($1, $2, $3, $4, $5, $6)`,
    [endpointId, eventId, r.status, r.durationMs, r.error, r.response],
  );
  await db.query(
    `UPDATE webhook_deliveries
        SET state = $3,
            next_attempt_at = CASE WHEN $4::bigint IS NULL THEN next_attempt_at ELSE now() + $4 * interval '1 millisecond' END
      WHERE endpoint_id = $1 AND event_id = $2`,
    [endpointId, eventId, r.ok ? 'delivered' : retryMs === null ? 'failed' : 'pending', retryMs],
  );
  await db.query(
    `UPDATE webhook_endpoints SET failing_since = CASE WHEN $2 THEN NULL ELSE COALESCE(failing_since, now()) END WHERE id = $1`,
    [endpointId, r.ok],
  );
}

/** Disables an endpoint failing for `afterMs` or longer; answers whether this call did. */
export async function disableFailing(db: Queryable, endpointId: string, afterMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'failing', updated_at = now()
      WHERE id = $1 AND enabled AND failing_since <= now() - $2 * interval '1 millisecond'`,
    [endpointId, afterMs],
  );
  return (rowCount ?? 0) > 0;
}

/** Seconds since the oldest delivery still pending was written; 0 when none is. */
export async function oldestPendingSeconds(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ s: number | null }>(
    `SELECT EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS s FROM webhook_deliveries WHERE state = 'pending'`,
  );
  return rows[0]?.s ?? 0;
}
