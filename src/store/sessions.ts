import type { Queryable } from './db.ts';
import type { UserRow } from './users.ts';

export interface SessionRow {
  id: string; user_id: string; active_organization_id: string | null; expires_at: Date; created_at: Date;
  ip: string | null; user_agent: string | null;
}

const COLUMNS = 'id, user_id, active_organization_id, expires_at, created_at, ip, user_agent';

export async function insertSession(
  db: Queryable, s: { userId: string; tokenHash: Buffer; expiresAt: Date; ip: string | null; userAgent: string | null },
): Promise<SessionRow> {
  const { rows } = await db.query<SessionRow>(
    `INSERT INTO sessions (user_id, token_hash, expires_at, ip, user_agent) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [s.userId, s.tokenHash, s.expiresAt, s.ip, s.userAgent],
  );
  return rows[0]!;
}

/** The live session for a token hash together with its user, in one round trip. */
export async function findLiveSessionByHash(
  db: Queryable, tokenHash: Buffer, now: Date,
): Promise<{ session: SessionRow; user: UserRow } | null> {
  const { rows } = await db.query<SessionRow & {
    u_email: string; u_name: string; u_password_hash: string; u_role: 'user' | 'admin'; u_banned: boolean; u_plan: string | null;
    u_created_at: Date;
  }>(
    `SELECT s.id, s.user_id, s.active_organization_id, s.expires_at, s.created_at, s.ip, s.user_agent,
            u.email u_email, u.name u_name, u.password_hash u_password_hash, u.role u_role, u.banned u_banned,
            u.plan u_plan, u.created_at u_created_at
       FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND s.expires_at > $2`,
    [tokenHash, now],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    session: {
      id: r.id, user_id: r.user_id, active_organization_id: r.active_organization_id, expires_at: r.expires_at, created_at: r.created_at,
      ip: r.ip, user_agent: r.user_agent,
    },
    user: {
      id: r.user_id, email: r.u_email, name: r.u_name, password_hash: r.u_password_hash, role: r.u_role, banned: r.u_banned, plan: r.u_plan,
      created_at: r.u_created_at,
    },
  };
}

export async function listUserSessions(db: Queryable, userId: string, now: Date): Promise<SessionRow[]> {
  const { rows } = await db.query<SessionRow>(
    `SELECT ${COLUMNS} FROM sessions WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC`, [userId, now]);
  return rows;
}

export async function deleteSession(db: Queryable, userId: string, sessionId: string): Promise<boolean> {
  const r = await db.query('DELETE FROM sessions WHERE id = $1 AND user_id = $2', [sessionId, userId]);
  return r.rowCount === 1;
}

export async function deleteSessionByHash(db: Queryable, tokenHash: Buffer): Promise<void> {
  await db.query('DELETE FROM sessions WHERE token_hash = $1', [tokenHash]);
}

export async function deleteOtherSessions(db: Queryable, userId: string, keepSessionId: string): Promise<void> {
  await db.query('DELETE FROM sessions WHERE user_id = $1 AND id <> $2', [userId, keepSessionId]);
}

export async function deleteUserSessions(db: Queryable, userId: string): Promise<void> {
  await db.query('DELETE FROM sessions WHERE user_id = $1', [userId]);
}

export async function setActiveOrganization(db: Queryable, sessionId: string, organizationId: string | null): Promise<void> {
  await db.query('UPDATE sessions SET active_organization_id = $2 WHERE id = $1', [sessionId, organizationId]);
}
