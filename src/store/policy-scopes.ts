import type { Queryable } from './db.ts';

// The live scopes file's text, one row. Written with the casbin rows in the policy transaction,
// whose commit signals every instance to reload; read on every reload.

export async function readScopesText(db: Queryable): Promise<string | null> {
  const { rows } = await db.query<{ text: string }>('SELECT text FROM policy_scopes WHERE id');
  return rows[0]?.text ?? null;
}

export async function writeScopesText(db: Queryable, text: string): Promise<void> {
  await db.query(
    `INSERT INTO policy_scopes (id, text) VALUES (true, $1)
     ON CONFLICT (id) DO UPDATE SET text = EXCLUDED.text, updated_at = now()`,
    [text],
  );
}
