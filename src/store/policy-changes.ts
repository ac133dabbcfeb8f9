import type { Queryable } from './db.ts';

// The decisions a policy version changed against the one before, worked out once and kept
// (policy_version_changes). Plain rows out.

export interface StoredDecision { request: string; subjects: string[]; before: string; after: string }
export interface VersionChangesRow { version: number; against: number | null; changed: number; decisions: StoredDecision[] }

export async function findVersionChanges(db: Queryable, versions: readonly number[]): Promise<VersionChangesRow[]> {
  if (versions.length === 0) return [];
  const { rows } = await db.query<VersionChangesRow>(
    'SELECT version, against, changed, decisions FROM policy_version_changes WHERE version = ANY($1::int[])',
    [versions],
  );
  return rows;
}

/** Two instances working out the same version store it once; both answers are the same. */
export async function insertVersionChanges(db: Queryable, row: VersionChangesRow): Promise<void> {
  await db.query(
    `INSERT INTO policy_version_changes (version, against, changed, decisions) VALUES ($1, $2, $3, $4::jsonb)
     ON CONFLICT (version) DO NOTHING`,
    [row.version, row.against, row.changed, JSON.stringify(row.decisions)],
  );
}
