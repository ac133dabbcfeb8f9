import type { Queryable } from './db.ts';

export interface UserRow {
  id: string; email: string; name: string; password_hash: string;
  role: 'user' | 'admin'; banned: boolean; plan: string | null; created_at: Date;
}

const COLUMNS = 'id, email, name, password_hash, role, banned, plan, created_at';

export async function insertUser(db: Queryable, u: { email: string; name: string; passwordHash: string; role?: 'user' | 'admin'; plan?: string | null }): Promise<UserRow | null> {
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

export async function setUserBanned(db: Queryable, id: string, banned: boolean): Promise<boolean> {
  const r = await db.query('UPDATE users SET banned = $2 WHERE id = $1', [id, banned]);
  return r.rowCount === 1;
}

export async function setUserRole(db: Queryable, email: string, role: 'user' | 'admin'): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`UPDATE users SET role = $2 WHERE lower(email) = lower($1) RETURNING ${COLUMNS}`, [email, role]);
  return rows[0] ?? null;
}

export async function setUserPlan(db: Queryable, email: string, plan: string | null): Promise<UserRow | null> {
  const { rows } = await db.query<UserRow>(`UPDATE users SET plan = $2 WHERE lower(email) = lower($1) RETURNING ${COLUMNS}`, [email, plan]);
  return rows[0] ?? null;
}

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
