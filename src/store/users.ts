import type { Queryable } from './db.ts';

export interface UserRow {
  id: string; email: string; name: string; password_hash: string;
  role: 'user' | 'admin'; banned: boolean; plan: string | null; created_at: Date;
}

const COLUMNS = 'id, email, name, password_hash, role, banned, plan, created_at';

export async function insertUser(
  db: Queryable, u: { email: string; name: string; passwordHash: string; role?: 'user' | 'admin'; plan?: string | null },
): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (email, name, password_hash, role, plan) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`,
    [u.email, u.name, u.passwordHash, u.role ?? 'user', u.plan ?? null],
  );
  return rows[0] ?? null;
}

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE lower(email) = lower($1)`, [email]);
  return rows[0] ?? null;
}

export async function findUserById(db: Queryable, id: string): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function updateUserPassword(db: Queryable, id: string, passwordHash: string): Promise<void> {
  await db.query('UPDATE users SET password_hash = $2 WHERE id = $1', [id, passwordHash]);
}

/** Whom an operator's change names: a user's id (the console) or e-mail (the command line). */
export type UserMatch = { id: string } | { email: string };

const matchSql = (m: UserMatch) => ('id' in m ? ['id = $1', m.id] : ['lower(email) = lower($1)', m.email]) as [string, string];

/** Sets one column and returns the row with the value it held before (`previous`), in one statement. */
async function setColumn<C extends 'role' | 'plan' | 'banned'>(
  db: Queryable, m: UserMatch, column: C, value: UserRow[C],
): Promise<(UserRow & { previous: UserRow[C] }) | null> {
  const [where, arg] = matchSql(m);
  const { rows } = await db.query<UserRow & { previous: UserRow[C] }>(
    `UPDATE users u SET ${column} = $2 FROM (SELECT id, ${column} AS previous FROM users WHERE ${where} FOR UPDATE) o
      WHERE u.id = o.id RETURNING ${COLUMNS.split(', ').map((c) => `u.${c}`).join(', ')}, o.previous`,
    [arg, value],
  );
  return rows[0] ?? null;
}

export const setUserBannedReturning = (db: Queryable, m: UserMatch, banned: boolean) => setColumn(db, m, 'banned', banned);
export const setUserRole = (db: Queryable, m: UserMatch, role: 'user' | 'admin') => setColumn(db, m, 'role', role);
export const setUserPlan = (db: Queryable, m: UserMatch, plan: string | null) => setColumn(db, m, 'plan', plan);

/** Cascades to sessions, memberships and API keys. */
export async function deleteUser(db: Queryable, id: string): Promise<boolean> {
  const r = await db.query('DELETE FROM users WHERE id = $1', [id]);
  return r.rowCount === 1;
}

/** Users oldest first; with a prefix, those whose e-mail or name starts with it (any case). */
export async function listUsers(db: Queryable, prefix: string | null): Promise<UserRow[]> {
  const { rows } = await db.query<UserRow>(
    `SELECT ${COLUMNS} FROM users
     WHERE $1::text IS NULL OR starts_with(lower(email), lower($1)) OR starts_with(lower(name), lower($1))
     ORDER BY created_at, email`,
    [prefix],
  );
  return rows;
}

export interface UserPageRow extends UserRow { keys_held: number }

/**
 * The console's user list: oldest first, keyset-paginated on (created_at, id), those whose e-mail
 * starts with `emailPrefix` (any case), each with the keys they hold (not revoked).
 */
export async function listUsersPage(
  db: Queryable, opts: { emailPrefix: string | null; limit: number; after: { createdAt: string; id: string } | null },
): Promise<(UserPageRow & { created_cursor: string })[]> {
  const { rows } = await db.query<UserPageRow & { created_cursor: string }>(
    `SELECT ${COLUMNS.split(', ').map((c) => `u.${c}`).join(', ')}, u.created_at::text AS created_cursor,
            (SELECT count(*)::int FROM apikeys k WHERE k.user_id = u.id AND k.revoked_at IS NULL) AS keys_held
       FROM users u
      WHERE ($1::text IS NULL OR starts_with(lower(u.email), lower($1)))
        AND ($3::timestamptz IS NULL OR (u.created_at, u.id) > ($3::timestamptz, $4::uuid))
      ORDER BY u.created_at, u.id LIMIT $2`,
    [opts.emailPrefix, opts.limit, opts.after?.createdAt ?? null, opts.after?.id ?? null],
  );
  return rows;
}
