import type { Queryable } from './db.ts';

export interface EventRow { id: string; type: string; body: string; created_at: Date }

/**
 * Writes an event and, in the same statement, one pending delivery per enabled endpoint that wants
 * its type. Answers false when `onceKey` was already used (the event was said before).
 */
export async function insertEvent(db: Queryable, e: { id: string; type: string; body: string; onceKey: string | null }): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH ev AS (
       INSERT INTO events (id, type, body, once_key) VALUES ($1, $2, $3, $4)
       ON CONFLICT (once_key) DO NOTHING RETURNING id, type)
     INSERT INTO webhook_deliveries (endpoint_id, event_id)
     SELECT w.id, ev.id FROM ev JOIN webhook_endpoints w ON w.enabled AND (w.events IS NULL OR ev.type = ANY (w.events))`,
    [e.id, e.type, e.body, e.onceKey],
  );
  // The delivery count says nothing of the event: ask whether it went in.
  if (rowCount && rowCount > 0) return true;
  if (!e.onceKey) return true;
  const { rows } = await db.query('SELECT 1 FROM events WHERE id = $1', [e.id]);
  return rows.length > 0;
}

/** An event to one endpoint alone (its test). */
export async function insertEventFor(db: Queryable, endpointId: string, e: { id: string; type: string; body: string }): Promise<void> {
  await db.query(
    `WITH ev AS (INSERT INTO events (id, type, body) VALUES ($1, $2, $3) RETURNING id)
     INSERT INTO webhook_deliveries (endpoint_id, event_id) SELECT $4, id FROM ev`,
    [e.id, e.type, e.body, endpointId],
  );
}

/**
 * Events older than `before` go, with their deliveries and attempts, unless an attempt was made
 * since (a redelivery): every attempt's log is kept its full time, so its event stays until then.
 */
export async function pruneEvents(db: Queryable, before: Date): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM events e WHERE e.created_at < $1
        AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.event_id = e.id AND a.at >= $1)`,
    [before],
  );
  return rowCount ?? 0;
}
