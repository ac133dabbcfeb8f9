import { retryOnConflict, type Queryable } from './db.ts';
import type { RateLimitRule } from '../config.ts';

/** Scope name -> permitted actions, as stored: `{ ai: ["access"] }`, `{ mcp: ["access"] }`. */
export type Permissions = Record<string, string[]>;

export interface ApiKeyRow {
  id: string; user_id: string; name: string; start: string; prefix: string; permissions: Permissions;
  request_quota: number; rate_limits: RateLimitRule[]; enabled: boolean; expires_at: Date | null; revoked_at: Date | null;
  created_at: Date; last_used_at: Date | null;
  rotated_from: string | null; rotated_to: string | null;
  /** created_at as PostgreSQL prints it, with microseconds: the exact keyset cursor. */
  created_cursor: string;
}

// The hash is written and matched on, never read back out.
const COLUMNS = `id, user_id, name, start, prefix, permissions, request_quota, rate_limits, enabled, expires_at, revoked_at,
  created_at, last_used_at, rotated_from, rotated_to, created_at::text AS created_cursor`;

/**
 * A rotated key whose grace period has ended is gone like a revoked one: out of every list and
 * every key route (docs/key-life.md). `$now` is the caller's clock, so tests and instances agree.
 */
const notRetired = (alias: string, nowParam: string) =>
  `NOT (${alias}rotated_to IS NOT NULL AND ${alias}expires_at <= ${nowParam}::timestamptz)`;

export interface KeyInsert {
  userId: string; name: string; keyHash: Buffer; start: string; prefix: string; permissions: Permissions;
  requestQuota: number; rateLimits: RateLimitRule[]; expiresAt?: Date | null; rotatedFrom?: string | null;
}

export async function insertKey(db: Queryable, k: KeyInsert): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO apikeys (user_id, name, key_hash, start, prefix, permissions, request_quota, expires_at, rotated_from, rate_limits)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
    [
      k.userId, k.name, k.keyHash, k.start, k.prefix, JSON.stringify(k.permissions), k.requestQuota, k.expiresAt ?? null,
      k.rotatedFrom ?? null, JSON.stringify(k.rateLimits),
    ],
  );
  return rows[0]!;
}

/** Serializes creates per user across every instance: the row lock holds until the transaction ends. */
export async function lockOwner(db: Queryable, userId: string): Promise<boolean> {
  const r = await db.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [userId]);
  return r.rowCount === 1;
}

/** Keys held: a rotated key stops counting at once, even during its grace period. */
export async function countLiveKeys(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    'SELECT count(*) n FROM apikeys WHERE user_id = $1 AND revoked_at IS NULL AND rotated_to IS NULL',
    [userId],
  );
  return Number(rows[0]!.n);
}

export async function listLiveKeys(db: Queryable, userId: string, now: Date): Promise<ApiKeyRow[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM apikeys WHERE user_id = $1 AND revoked_at IS NULL AND ${notRetired('', '$2')}
      ORDER BY created_at DESC, id DESC`, [userId, now]);
  return rows;
}

export async function findLiveKey(db: Queryable, id: string, now: Date): Promise<ApiKeyRow | null> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM apikeys WHERE id = $1 AND revoked_at IS NULL AND ${notRetired('', '$2')}`,
    [id, now],
  );
  return rows[0] ?? null;
}


/** One indexed lookup by hash with the owner's ban flag. A deleted owner's keys are gone by cascade. */
export interface KeyWithOwnerRow extends ApiKeyRow {
  owner_banned: boolean; owner_email: string; owner_name: string; owner_role: 'user' | 'admin'; owner_plan: string | null;
}

export async function findKeyByHash(db: Queryable, keyHash: Buffer, prepared = true): Promise<KeyWithOwnerRow | null> {
  // A named statement: PostgreSQL plans it once per connection, which is most of a lookup's cost.
  // Behind a transaction pooler it is left unnamed: the name would exist on one server connection
  // and not on the next one the pooler hands out.
  const { rows } = await db.query<KeyWithOwnerRow>({
    ...(prepared ? { name: 'find-key-by-hash' } : {}),
    text: `SELECT k.id, k.user_id, k.name, k.start, k.prefix, k.permissions, k.request_quota, k.rate_limits, k.enabled, k.expires_at,
            k.revoked_at, k.created_at, k.last_used_at, k.rotated_from, k.rotated_to, k.created_at::text AS created_cursor,
            u.banned AS owner_banned,
            u.email AS owner_email, u.name AS owner_name, u.role AS owner_role, u.plan AS owner_plan
       FROM apikeys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = $1`,
    values: [keyHash],
  });
  return rows[0] ?? null;
}

/** `userId` null: any owner's key (an admin's change). */
export async function updateKey(
  db: Queryable, id: string, userId: string | null, p: { name?: string; enabled?: boolean; expiresAt?: Date | null }, now: Date,
): Promise<ApiKeyRow | null> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE apikeys SET
        name = COALESCE($3, name),
        enabled = COALESCE($4, enabled),
        -- A rotated key's grace period may be cut short, never stretched: the rotation is the rule.
        expires_at = CASE WHEN NOT $5 THEN expires_at
                          WHEN rotated_to IS NULL THEN $6::timestamptz
                          ELSE LEAST(expires_at, COALESCE($6::timestamptz, expires_at)) END
      WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND revoked_at IS NULL AND ${notRetired('', '$7')} RETURNING ${COLUMNS}`,
    [id, userId, p.name ?? null, p.enabled ?? null, p.expiresAt !== undefined, p.expiresAt ?? null, now],
  );
  return rows[0] ?? null;
}

/** The fields an update may change, as they stand, the row locked until the transaction ends. */
interface KeyFields { name: string; enabled: boolean; expires_at: Date | null }

export async function lockKeyFields(db: Queryable, id: string): Promise<KeyFields | null> {
  const { rows } = await db.query<KeyFields>(
    'SELECT name, enabled, expires_at FROM apikeys WHERE id = $1 FOR UPDATE',
    [id],
  );
  return rows[0] ?? null;
}

/** Sets revoked_at once; null when the key is unknown, not the owner's, or already revoked. */
export async function revokeKey(db: Queryable, id: string, ownerId: string | null, at: Date): Promise<ApiKeyRow | null> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE apikeys SET revoked_at = $3 WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND revoked_at IS NULL
       AND ${notRetired('', '$3')}
     RETURNING ${COLUMNS}`,
    [id, ownerId, at],
  );
  return rows[0] ?? null;
}

/** Live keys, not rotated away, whose expiry falls in (now, until]: the expiry warning's candidates. */
export async function listKeysExpiringBy(db: Queryable, now: Date, until: Date): Promise<ApiKeyRow[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM apikeys WHERE revoked_at IS NULL AND rotated_to IS NULL AND expires_at > $1 AND expires_at <= $2
      ORDER BY expires_at LIMIT 10000`,
    [now, until],
  );
  return rows;
}

/** Many presented keys at once, by hash: which are stored, and whether each is revoked. */
export async function findKeysByHashes(
  db: Queryable, hashes: Buffer[],
): Promise<{ id: string; key_hash: Buffer; revoked_at: Date | null }[]> {
  const { rows } = await db.query<{ id: string; key_hash: Buffer; revoked_at: Date | null }>(
    'SELECT id, key_hash, revoked_at FROM apikeys WHERE key_hash = ANY ($1::bytea[])', [hashes],
  );
  return rows;
}

export interface LeakedKeyRow { id: string; name: string; start: string; leaked_at: Date; leaked_url: string }

/** An owner's keys revoked in the last 30 days because they were found public. */
export async function listLeakedKeys(db: Queryable, userId: string, now: Date): Promise<LeakedKeyRow[]> {
  const { rows } = await db.query<LeakedKeyRow>(
    `SELECT id, name, start, leaked_at, leaked_url FROM apikeys
      WHERE user_id = $1 AND leaked_at IS NOT NULL AND leaked_at > $2::timestamptz - interval '30 days' ORDER BY leaked_at DESC LIMIT 50`,
    [userId, now],
  );
  return rows;
}

/**
 * Keys found public, revoked and marked with where, in one statement: only those still live (not
 * revoked, not retired by a rotation) change and are answered. Locked in id order first, so two
 * reports naming the same keys wait for one another instead of deadlocking.
 */
export async function revokeLeakedKeys(db: Queryable, leaks: { id: string; url: string }[], at: Date): Promise<ApiKeyRow[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `WITH locked AS MATERIALIZED (
       SELECT id AS leak_id FROM apikeys WHERE id = ANY ($1::uuid[]) AND revoked_at IS NULL ORDER BY id FOR UPDATE)
     UPDATE apikeys SET revoked_at = $3, leaked_at = $3, leaked_url = l.leak_url
       FROM locked JOIN unnest($1::uuid[], $2::text[]) AS l(leak_id, leak_url) USING (leak_id)
      WHERE apikeys.id = locked.leak_id AND apikeys.revoked_at IS NULL AND ${notRetired('apikeys.', '$3')}
     RETURNING ${COLUMNS}`,
    [leaks.map((l) => l.id), leaks.map((l) => l.url), at],
  );
  return rows;
}

export interface AdminKeyRow extends ApiKeyRow { owner_name: string; owner_email: string }

/** The key states an operator filters on; `revoked` is the only one that shows revoked keys. */
export const KEY_FILTER_STATES = ['active', 'disabled', 'expired', 'revoked'] as const;
/** `q`: the start of a key as shown (its prefix and first characters), or of its id. */
export interface KeyFilter { ownerEmail?: string; state?: (typeof KEY_FILTER_STATES)[number]; scope?: string; q?: string }

const likePrefix = (s: string) => `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

// The same precedence keyView uses: disabled before expired. `active` here is the key's life, not
// its day's quota (a rate-limited key is still active: that state lives in Redis, not in this row).
const STATE_SQL: Record<(typeof KEY_FILTER_STATES)[number], string> = {
  active: 'k.revoked_at IS NULL AND k.enabled AND (k.expires_at IS NULL OR k.expires_at > $4::timestamptz)',
  disabled: 'k.revoked_at IS NULL AND NOT k.enabled',
  expired: 'k.revoked_at IS NULL AND k.enabled AND k.expires_at <= $4::timestamptz',
  revoked: 'k.revoked_at IS NOT NULL',
};

/** Newest first, keyset-paginated on (created_at, id), so concurrent inserts never shift a page. */
export async function listKeysPage(
  db: Queryable, limit: number, after: { createdAt: string; id: string } | null, now: Date, filter: KeyFilter = {},
): Promise<AdminKeyRow[]> {
  const state = filter.state ? STATE_SQL[filter.state] : 'k.revoked_at IS NULL';
  const { rows } = await db.query<AdminKeyRow>(
    `SELECT k.id, k.user_id, k.name, k.start, k.prefix, k.permissions, k.request_quota, k.rate_limits, k.enabled, k.expires_at,
            k.revoked_at, k.created_at, k.last_used_at, k.rotated_from, k.rotated_to, k.created_at::text AS created_cursor,
            u.name AS owner_name, u.email AS owner_email
       FROM apikeys k JOIN users u ON u.id = k.user_id
      WHERE ${state} AND ${notRetired('k.', '$4')}
        AND ($2::timestamptz IS NULL OR (k.created_at, k.id) < ($2::timestamptz, $3::uuid))
        AND ($5::text IS NULL OR lower(u.email) = lower($5::text))
        AND ($6::text IS NULL OR k.permissions ? $6::text)
        AND ($7::text IS NULL OR k.start LIKE $7::text OR k.id::text LIKE lower($7::text))
      ORDER BY k.created_at DESC, k.id DESC LIMIT $1`,
    [
      limit, after?.createdAt ?? null, after?.id ?? null, now, filter.ownerEmail ?? null, filter.scope ?? null,
      filter.q ? likePrefix(filter.q) : null,
    ],
  );
  return rows;
}

/**
 * Batched write of last use: one statement for many keys. Several instances write the same keys, so
 * the rows are locked in id order first (a cycle of waits needs two orders), and a conflict that
 * still happens is retried.
 */
export async function touchKeys(db: Queryable, uses: { id: string; at: Date }[]): Promise<void> {
  if (!uses.length) return;
  const sorted = [...uses].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  await retryOnConflict(() => db.query(
    `WITH locked AS MATERIALIZED (SELECT id FROM apikeys WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE)
     UPDATE apikeys k SET last_used_at = GREATEST(k.last_used_at, u.at)
       FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at) WHERE k.id = u.id AND k.id IN (SELECT id FROM locked)`,
    [sorted.map((u) => u.id), sorted.map((u) => u.at)],
  ));
}
