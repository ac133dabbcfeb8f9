import type { Queryable } from './db.ts';

export type AuditType = 'API_KEY_CREATED' | 'API_KEY_REVOKED';

export interface AuditRow {
  id: string; type: AuditType; actor_user_id: string | null; owner_user_id: string | null; key_id: string | null;
  at: Date; ip: string | null; user_agent: string | null;
}

export async function insertAuditEntry(db: Queryable, e: { type: AuditType; actorUserId: string; ownerUserId: string; keyId: string; ip: string | null; userAgent: string | null }): Promise<void> {
  await db.query(
    'INSERT INTO audit_log (type, actor_user_id, owner_user_id, key_id, ip, user_agent) VALUES ($1, $2, $3, $4, $5, $6)',
    [e.type, e.actorUserId, e.ownerUserId, e.keyId, e.ip, e.userAgent],
  );
}

/** Newest first; `beforeId` is the keyset cursor (ids only grow). */
export async function listAuditEntries(db: Queryable, limit: number, beforeId: string | null): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT id::text, type, actor_user_id, owner_user_id, key_id, at, ip, user_agent FROM audit_log
      WHERE ($2::bigint IS NULL OR id < $2::bigint) ORDER BY id DESC LIMIT $1`,
    [limit, beforeId],
  );
  return rows;
}
