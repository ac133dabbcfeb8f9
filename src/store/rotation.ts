import type { Queryable } from './db.ts';
import type { ApiKeyRow } from './apikeys.ts';

// The rotation queries on `apikeys`: find the key to replace under a row lock, then link it to its
// successor and end its life at the end of the grace period.

const COLUMNS = `id, user_id, name, start, prefix, permissions, request_quota, rate_limits, enabled, expires_at, revoked_at,
  created_at, last_used_at, rotated_from, rotated_to, created_at::text AS created_cursor`;

/**
 * The owner's key that may be rotated now, locked until the transaction ends so that two parallel
 * rotations of one key cannot both win. Revoked, expired and already rotated keys are not found.
 */
export async function lockRotatableKey(db: Queryable, id: string, userId: string, now: Date): Promise<ApiKeyRow | null> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM apikeys
      WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL AND rotated_to IS NULL
        AND (expires_at IS NULL OR expires_at > $3::timestamptz)
      FOR UPDATE`,
    [id, userId, now],
  );
  return rows[0] ?? null;
}

/** The grace period never lengthens a key's life: an earlier expiry stays. */
export async function markRotated(db: Queryable, id: string, successorId: string, graceEndsAt: Date): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE apikeys SET rotated_to = $2, expires_at = LEAST(COALESCE(expires_at, $3::timestamptz), $3::timestamptz)
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, successorId, graceEndsAt],
  );
  return rows[0]!;
}
