import type { Queryable } from './db.ts';

export interface EndpointRow {
  id: string; url: string; events: string[] | null; description: string; enabled: boolean;
  secret: string; previous_secret: string | null; previous_secret_until: Date | null;
  failing_since: Date | null; disabled_reason: string | null; created_at: Date; updated_at: Date;
}
const ENDPOINT = `id, url, events, description, enabled, secret, previous_secret, previous_secret_until, failing_since, disabled_reason,
  created_at, updated_at`;

/**
 * A secret waiting to be shown once on a page any instance may serve: the hash of its one-time
 * token, the admin it is for, and until when. The token itself is never stored.
 */
export interface SecretReveal { tokenHash: Buffer; userId: string; until: Date }

export async function insertEndpoint(
  db: Queryable, e: { url: string; events: string[] | null; description: string; secret: string; reveal?: SecretReveal },
): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (url, events, description, secret, reveal_token_hash, reveal_user_id, reveal_until)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${ENDPOINT}`,
    [e.url, e.events, e.description, e.secret, e.reveal?.tokenHash ?? null, e.reveal?.userId ?? null, e.reveal?.until ?? null],
  );
  return rows[0]!;
}

export async function listEndpoints(db: Queryable): Promise<EndpointRow[]> {
  return (await db.query<EndpointRow>(`SELECT ${ENDPOINT} FROM webhook_endpoints ORDER BY created_at, id`)).rows;
}

export async function findEndpoint(db: Queryable, id: string, lock = false): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(`SELECT ${ENDPOINT} FROM webhook_endpoints WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0] ?? null;
}

/** Sets what is given; re-enabling clears the failure record, so the five days start over. */
export async function updateEndpoint(
  db: Queryable, id: string, p: { url?: string; events?: string[] | null; description?: string; enabled?: boolean },
): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
       url = COALESCE($2, url), events = CASE WHEN $3 THEN $4::text[] ELSE events END, description = COALESCE($5, description),
       enabled = COALESCE($6, enabled),
       failing_since = CASE WHEN $6 IS TRUE AND NOT enabled THEN NULL ELSE failing_since END,
       disabled_reason = CASE WHEN $6 IS NULL THEN disabled_reason ELSE NULL END,
       updated_at = now()
     WHERE id = $1 RETURNING ${ENDPOINT}`,
    [id, p.url ?? null, p.events !== undefined, p.events ?? null, p.description ?? null, p.enabled ?? null],
  );
  return rows[0] ?? null;
}

export async function deleteEndpoint(db: Queryable, id: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(`DELETE FROM webhook_endpoints WHERE id = $1 RETURNING ${ENDPOINT}`, [id]);
  return rows[0] ?? null;
}

/**
 * The new secret signs from now; the old one beside it until `oldUntil`. A reveal still waiting is
 * replaced by this rotation's (or by none): it would otherwise show the new secret to whoever asked
 * for the old one.
 */
export async function rotateSecret(
  db: Queryable, id: string, secret: string, oldUntil: Date, reveal?: SecretReveal,
): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = $3, secret = $2, updated_at = now(),
       reveal_token_hash = $4, reveal_user_id = $5, reveal_until = $6
     WHERE id = $1 RETURNING ${ENDPOINT}`,
    [id, secret, oldUntil, reveal?.tokenHash ?? null, reveal?.userId ?? null, reveal?.until ?? null],
  );
  return rows[0] ?? null;
}

export interface RevealedRow { url: string; secret: string; previous_secret_until: Date | null }

/**
 * The secret, if this token's hash, this admin and an unexpired reveal all match; the reveal is
 * cleared by the same statement, so of two requests with one token only the first finds it.
 */
export async function takeSecretReveal(
  db: Queryable, r: { id: string; tokenHash: Buffer; userId: string; now: Date },
): Promise<RevealedRow | null> {
  const { rows } = await db.query<RevealedRow>(
    `UPDATE webhook_endpoints SET reveal_token_hash = NULL, reveal_user_id = NULL, reveal_until = NULL
      WHERE id = $1 AND reveal_token_hash = $2 AND reveal_user_id = $3 AND reveal_until > $4
      RETURNING url, secret, previous_secret_until`,
    [r.id, r.tokenHash, r.userId, r.now],
  );
  return rows[0] ?? null;
}

export interface DeliveryRow {
  event_id: string; type: string; state: 'pending' | 'delivered' | 'failed'; attempts: number; next_attempt_at: Date; created_at: Date;
}
export interface AttemptRow {
  event_id: string; at: Date; status: number | null; duration_ms: number; error: string | null; response: string | null;
}

/** An endpoint's deliveries, newest first, with their attempts oldest first. */
export async function listDeliveries(
  db: Queryable, endpointId: string, limit: number,
): Promise<{ deliveries: DeliveryRow[]; attempts: AttemptRow[] }> {
  const { rows: deliveries } = await db.query<DeliveryRow>(
    `SELECT d.event_id, e.type, d.state, d.attempts, d.next_attempt_at, d.created_at
       FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.endpoint_id = $1 ORDER BY d.created_at DESC, d.event_id DESC LIMIT $2`,
    [endpointId, limit],
  );
  const { rows: attempts } = await db.query<AttemptRow>(
    `SELECT event_id, at, status, duration_ms, error, response FROM webhook_attempts
      WHERE endpoint_id = $1 AND event_id = ANY ($2::text[]) ORDER BY id`,
    [endpointId, deliveries.map((d) => d.event_id)],
  );
  return { deliveries, attempts };
}

/** Due again now, its schedule started over; its attempts so far stay in the log. */
export async function redeliver(db: Queryable, endpointId: string, eventId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = now() WHERE endpoint_id = $1 AND event_id = $2`,
    [endpointId, eventId],
  );
  return (rowCount ?? 0) > 0;
}
