import type { Queryable } from './db.ts';

export type AuditType = 'API_KEY_CREATED' | 'API_KEY_REVOKED' | 'API_KEY_ROTATED' | 'OAUTH_GRANT_CREATED' | 'OAUTH_GRANT_REVOKED';

export interface AuditRow {
  id: string; type: AuditType; actor_user_id: string | null; owner_user_id: string | null; key_id: string | null; grant_id: string | null;
  at: Date; ip: string | null; user_agent: string | null;
  /** Set on API_KEY_ROTATED: the key the new one (key_id) replaced. */
  previous_key_id: string | null;
}

export async function insertAuditEntry(db: Queryable, e: { type: AuditType; actorUserId: string; ownerUserId: string; keyId: string | null; grantId?: string; ip: string | null; userAgent: string | null; previousKeyId?: string }): Promise<void> {
  await db.query(
    'INSERT INTO audit_log (type, actor_user_id, owner_user_id, key_id, grant_id, ip, user_agent, previous_key_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [e.type, e.actorUserId, e.ownerUserId, e.keyId, e.grantId ?? null, e.ip, e.userAgent, e.previousKeyId ?? null],
  );
}

/** Newest first; `beforeId` is the keyset cursor (ids only grow). */
export async function listAuditEntries(db: Queryable, limit: number, beforeId: string | null): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT id::text AS id, type, actor_user_id, owner_user_id, key_id, grant_id, at, ip, user_agent, previous_key_id FROM audit_log
      WHERE ($2::bigint IS NULL OR id < $2::bigint) ORDER BY audit_log.id DESC LIMIT $1`,
    [limit, beforeId],
  );
  return rows;
}
