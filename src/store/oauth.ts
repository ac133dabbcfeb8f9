import { createHash } from 'node:crypto';
import type { RateLimitRule } from '../config.ts';
import type { Queryable } from './db.ts';

// oidc-provider's storage and the grants people see. Ids of tokens, codes and sessions are the
// secrets themselves, so every lookup goes through their SHA-256 and the plain id is never written.

export const hashId = (id: string): Buffer => createHash('sha256').update(id, 'utf8').digest();

export interface StoredRow { payload: Record<string, unknown>; consumed_at: Date | null }

export async function upsertStored(
  db: Queryable,
  r: { model: string; id: string; uid: string | null; grantId: string | null; payload: Record<string, unknown>; expiresAt: Date | null },
): Promise<void> {
  await db.query(
    `INSERT INTO oauth_store (model, id_hash, uid_hash, grant_id, payload, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (model, id_hash) DO UPDATE SET uid_hash = EXCLUDED.uid_hash, grant_id = EXCLUDED.grant_id,
       payload = EXCLUDED.payload, expires_at = EXCLUDED.expires_at`,
    [r.model, hashId(r.id), r.uid === null ? null : hashId(r.uid), r.grantId, JSON.stringify(r.payload), r.expiresAt],
  );
}

/** Expired rows are as good as gone; they are left for the sweep rather than deleted on read. */
export async function findStored(db: Queryable, model: string, id: string): Promise<StoredRow | null> {
  const { rows } = await db.query<StoredRow>(
    `SELECT payload, consumed_at FROM oauth_store
      WHERE model = $1 AND id_hash = $2 AND (expires_at IS NULL OR expires_at > now())`,
    [model, hashId(id)],
  );
  return rows[0] ?? null;
}

export async function findStoredByUid(db: Queryable, model: string, uid: string): Promise<(StoredRow & { id_hash: Buffer }) | null> {
  const { rows } = await db.query<StoredRow & { id_hash: Buffer }>(
    `SELECT id_hash, payload, consumed_at FROM oauth_store
      WHERE model = $1 AND uid_hash = $2 AND (expires_at IS NULL OR expires_at > now())`,
    [model, hashId(uid)],
  );
  return rows[0] ?? null;
}

/**
 * Marks a code or token spent, once: `consumed` is true for the one caller whose UPDATE marked the
 * row, false for every other (already spent, or gone); `grantId` is the row's grant either way.
 */
export async function consumeStored(db: Queryable, model: string, id: string): Promise<{ consumed: boolean; grantId: string | null }> {
  const { rows } = await db.query<{ grant_id: string | null; won: boolean }>(
    `WITH won AS (
       UPDATE oauth_store SET consumed_at = now() WHERE model = $1 AND id_hash = $2 AND consumed_at IS NULL RETURNING grant_id
     )
     SELECT grant_id, true AS won FROM won
     UNION ALL
     SELECT grant_id, false AS won FROM oauth_store WHERE model = $1 AND id_hash = $2 AND NOT EXISTS (SELECT 1 FROM won)`,
    [model, hashId(id)],
  );
  const row = rows[0];
  return { consumed: row?.won === true, grantId: row?.grant_id ?? null };
}

export async function destroyStored(db: Queryable, model: string, id: string): Promise<void> {
  await db.query('DELETE FROM oauth_store WHERE model = $1 AND id_hash = $2', [model, hashId(id)]);
}

/** Every code and token of a grant, whatever its model. */
export async function destroyByGrant(db: Queryable, grantId: string, model: string | null = null): Promise<void> {
  await db.query('DELETE FROM oauth_store WHERE grant_id = $1 AND ($2::text IS NULL OR model = $2)', [grantId, model]);
}

/** How long a registered client may wait for its first authorization before it is deleted. */
export const UNUSED_CLIENT_HOURS = 24;

/**
 * What the library stored and will never read again: every row past its expiry
 * (codes, sessions, interactions, tokens, grants), and clients registered more than 24 hours
 * before `now` that no person ever authorized. Answers how many rows went.
 */
export async function sweepOAuth(db: Queryable, now: Date): Promise<{ expired: number; unusedClients: number; endedGrants: number }> {
  const expired = await db.query('DELETE FROM oauth_store WHERE expires_at IS NOT NULL AND expires_at <= $1', [now]);
  // A client's row is found by the hash of its id, as every row is; grants name the id itself.
  const unused = await db.query(
    `DELETE FROM oauth_store c
      WHERE c.model = 'Client'
        AND (c.payload->>'client_id_issued_at')::bigint <= extract(epoch FROM $1::timestamptz) - $2 * 3600
        AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE sha256(convert_to(g.client_id, 'UTF8')) = c.id_hash)`,
    [now, UNUSED_CLIENT_HOURS],
  );
  // A grant whose library record has expired (and so was just deleted) can never mint a token
  // again: it stops being live, so it no longer takes a place under maxGrantsPerUser. Young rows are
  // left alone: a consent writes its row a moment before the library saves its grant.
  const ended = await db.query(
    `UPDATE oauth_grants g SET revoked_at = $1
      WHERE g.revoked_at IS NULL AND g.created_at <= $1::timestamptz - interval '1 hour'
        AND NOT EXISTS (SELECT 1 FROM oauth_store s WHERE s.model = 'Grant' AND s.id_hash = sha256(convert_to(g.id, 'UTF8')))`,
    [now],
  );
  return { expired: expired.rowCount ?? 0, unusedClients: unused.rowCount ?? 0, endedGrants: ended.rowCount ?? 0 };
}

export interface OAuthSecretsRow { cookie_key: string; jwk: Record<string, unknown> }

export async function findSecrets(db: Queryable): Promise<OAuthSecretsRow | null> {
  const { rows } = await db.query<OAuthSecretsRow>('SELECT cookie_key, jwk FROM oauth_secrets WHERE id = 1');
  return rows[0] ?? null;
}

/** The first instance to start writes its candidate; every instance then reads the one that won. */
export async function ensureSecrets(db: Queryable, candidate: OAuthSecretsRow): Promise<OAuthSecretsRow> {
  await db.query(
    'INSERT INTO oauth_secrets (id, cookie_key, jwk) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING',
    [candidate.cookie_key, JSON.stringify(candidate.jwk)],
  );
  const { rows } = await db.query<OAuthSecretsRow>('SELECT cookie_key, jwk FROM oauth_secrets WHERE id = 1');
  return rows[0]!;
}

export interface GrantRow {
  id: string; user_id: string; client_id: string; client_name: string; request_quota: number; rate_limits: RateLimitRule[];
  created_at: Date; last_used_at: Date | null; revoked_at: Date | null;
}

const GRANT_COLUMNS = 'id, user_id, client_id, client_name, request_quota, rate_limits, created_at, last_used_at, revoked_at';

export async function insertGrant(
  db: Queryable, g: { id: string; userId: string; clientId: string; clientName: string; requestQuota: number; rateLimits: RateLimitRule[] },
): Promise<GrantRow> {
  const { rows } = await db.query<GrantRow>(
    `INSERT INTO oauth_grants (id, user_id, client_id, client_name, request_quota, rate_limits)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${GRANT_COLUMNS}`,
    [g.id, g.userId, g.clientId, g.clientName, g.requestQuota, JSON.stringify(g.rateLimits)],
  );
  return rows[0]!;
}

export async function countLiveGrants(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM oauth_grants WHERE user_id = $1 AND revoked_at IS NULL',
    [userId],
  );
  return rows[0]!.n;
}

export async function listLiveGrants(db: Queryable, userId: string): Promise<GrantRow[]> {
  const { rows } = await db.query<GrantRow>(
    `SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id DESC`, [userId]);
  return rows;
}

/** Sets revoked_at once; null when the grant is unknown, already revoked, or (with userId) someone else's. */
export async function revokeGrant(db: Queryable, id: string, userId: string | null): Promise<GrantRow | null> {
  const { rows } = await db.query<GrantRow>(
    `UPDATE oauth_grants SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR user_id = $2)
     RETURNING ${GRANT_COLUMNS}`,
    [id, userId],
  );
  return rows[0] ?? null;
}

export interface LiveGrantWithOwnerRow extends GrantRow {
  owner_email: string; owner_name: string; owner_role: 'user' | 'admin'; owner_banned: boolean; owner_plan: string | null;
}

/** The grant behind a token, with its owner; a revoked grant or a deleted owner finds nothing. */
export async function findLiveGrantWithOwner(db: Queryable, id: string): Promise<LiveGrantWithOwnerRow | null> {
  const { rows } = await db.query<LiveGrantWithOwnerRow>(
    `SELECT g.id, g.user_id, g.client_id, g.client_name, g.request_quota, g.rate_limits, g.created_at, g.last_used_at, g.revoked_at,
            u.email AS owner_email, u.name AS owner_name, u.role AS owner_role, u.banned AS owner_banned, u.plan AS owner_plan
       FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE g.id = $1 AND g.revoked_at IS NULL`,
    [id],
  );
  return rows[0] ?? null;
}

export async function touchGrant(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE oauth_grants SET last_used_at = now() WHERE id = $1', [id]);
}
