import type { Queryable } from './db.ts';

export const AUDIT_TYPES = [
  'API_KEY_CREATED', 'API_KEY_REVOKED', 'API_KEY_ROTATED', 'API_KEY_UPDATED',
  'OAUTH_GRANT_CREATED', 'OAUTH_GRANT_REVOKED',
  'USER_CREATED', 'USER_BANNED', 'USER_UNBANNED', 'USER_ROLE_CHANGED', 'USER_PLAN_CHANGED',
  'POLICY_APPLIED', 'POLICY_ROLLED_BACK', 'POLICY_PROMOTED',
  'API_KEY_LEAKED', 'WEBHOOK_CREATED', 'WEBHOOK_UPDATED', 'WEBHOOK_DELETED',
] as const;
export type AuditType = (typeof AUDIT_TYPES)[number];

/** Who made a change: a signed-in user, or the operator's command line (no user). */
export type AuditActor = { userId: string } | 'cli';

/** What a kind records beside its ids: a key update's changed fields, a role's before and after, a policy version. */
export type AuditDetail = Record<string, string | number | boolean | null | string[]>;

export interface AuditRow {
  id: string; type: AuditType; actor_user_id: string | null; owner_user_id: string | null; key_id: string | null; grant_id: string | null;
  at: Date; ip: string | null; user_agent: string | null;
  /** Set on API_KEY_ROTATED: the key the new one (key_id) replaced. */
  previous_key_id: string | null;
  /** `cli` when the command line acted; null when a user did (actor_user_id). */
  actor: string | null;
  detail: AuditDetail | null;
  actor_email: string | null;
  owner_email: string | null;
}

export interface AuditInsert {
  type: AuditType;
  /** The acting user; null with `actor: 'cli'`. */
  actorUserId: string | null;
  actor?: 'cli';
  ownerUserId: string | null;
  keyId: string | null;
  grantId?: string;
  ip: string | null;
  userAgent: string | null;
  previousKeyId?: string;
  detail?: AuditDetail;
}

/** The columns that name the actor, for a change made by `actor`. */
export const actorColumns = (actor: AuditActor): { actorUserId: string | null; actor?: 'cli' } =>
  actor === 'cli' ? { actorUserId: null, actor: 'cli' } : { actorUserId: actor.userId };

export async function insertAuditEntry(db: Queryable, e: AuditInsert): Promise<void> {
  await db.query(
    `INSERT INTO audit_log (type, actor_user_id, owner_user_id, key_id, grant_id, ip, user_agent, previous_key_id, actor, detail)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      e.type, e.actorUserId, e.ownerUserId, e.keyId, e.grantId ?? null, e.ip, e.userAgent, e.previousKeyId ?? null, e.actor ?? null,
      e.detail ? JSON.stringify(e.detail) : null,
    ],
  );
}

export interface AuditFilter {
  types?: AuditType[];
  /** E-mail of the acting user, or `cli` for the command line. */
  actorEmail?: string;
  ownerEmail?: string;
  keyId?: string;
  /** Inclusive lower and exclusive upper bound on `at`. */
  from?: Date;
  to?: Date;
}

/**
 * Newest first; `beforeId` is the keyset cursor (ids only grow). Each page is one index walk from
 * the cursor, so paging (or exporting) the whole log holds one page at a time.
 */
export async function listAuditEntries(db: Queryable, limit: number, beforeId: string | null, f: AuditFilter = {}): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT a.id::text AS id, a.type, a.actor_user_id, a.owner_user_id, a.key_id, a.grant_id, a.at, a.ip, a.user_agent, a.previous_key_id,
            a.actor, a.detail, au.email AS actor_email, ou.email AS owner_email
       FROM audit_log a
       LEFT JOIN users au ON au.id = a.actor_user_id
       LEFT JOIN users ou ON ou.id = a.owner_user_id
      WHERE ($2::bigint IS NULL OR a.id < $2::bigint)
        AND ($3::text[] IS NULL OR a.type = ANY($3::text[]))
        AND ($4::text IS NULL OR (CASE WHEN $4::text = 'cli' THEN a.actor = 'cli' ELSE lower(au.email) = lower($4::text) END))
        AND ($5::text IS NULL OR lower(ou.email) = lower($5::text))
        AND ($6::uuid IS NULL OR a.key_id = $6::uuid)
        AND ($7::timestamptz IS NULL OR a.at >= $7::timestamptz)
        AND ($8::timestamptz IS NULL OR a.at < $8::timestamptz)
      ORDER BY a.id DESC LIMIT $1`,
    [
      limit, beforeId, f.types && f.types.length > 0 ? f.types : null, f.actorEmail ?? null, f.ownerEmail ?? null, f.keyId ?? null,
      f.from ?? null, f.to ?? null,
    ],
  );
  return rows;
}

/** Many entries in one statement (a report of keys found public), in the order given: their ids follow it. */
export async function insertAuditEntries(db: Queryable, entries: AuditInsert[]): Promise<void> {
  if (entries.length === 0) return;
  const rows = entries.map((e, n) => ({
    n, type: e.type, actor_user_id: e.actorUserId, owner_user_id: e.ownerUserId, key_id: e.keyId, grant_id: e.grantId ?? null, ip: e.ip,
    user_agent: e.userAgent, previous_key_id: e.previousKeyId ?? null, actor: e.actor ?? null, detail: e.detail ?? null,
  }));
  await db.query(
    `INSERT INTO audit_log (type, actor_user_id, owner_user_id, key_id, grant_id, ip, user_agent, previous_key_id, actor, detail)
     SELECT type, actor_user_id, owner_user_id, key_id, grant_id, ip, user_agent, previous_key_id, actor, detail
       FROM jsonb_to_recordset($1::jsonb) AS e(n int, type text, actor_user_id uuid, owner_user_id uuid, key_id uuid, grant_id text,
         ip text, user_agent text, previous_key_id uuid, actor text, detail jsonb)
      ORDER BY n`,
    [JSON.stringify(rows)],
  );
}
