import type { Queryable } from './db.ts';

// The record of applied policies (policy_versions) and the one candidate under shadow evaluation
// (policy_shadow) with the divergences instances counted for it. Plain rows out.

export interface PolicyTextsRow { modelText: string; policyText: string; scopesText: string }

export interface VersionRow extends PolicyTextsRow {
  version: number;
  sha256: string;
  appliedAt: Date;
  appliedBy: string;
  message: string;
}

export interface CandidateRow extends PolicyTextsRow {
  id: number;
  sha256: string;
  createdAt: Date;
  createdBy: string;
  message: string;
}

export interface DivergenceRow {
  liveRule: string;
  shadowRule: string;
  outcome: 'would-allow' | 'would-deny';
  count: number;
  example: Record<string, string>;
}

const VERSION_COLUMNS = `version, sha256, model_text "modelText", policy_text "policyText", scopes_text "scopesText",
  applied_at "appliedAt", applied_by "appliedBy", message`;
const CANDIDATE_COLUMNS = `id::int, sha256, model_text "modelText", policy_text "policyText", scopes_text "scopesText",
  created_at "createdAt", created_by "createdBy", message`;

/** The live version is the highest: rollback and promote add versions rather than move a pointer. */
export async function findLiveVersion(db: Queryable): Promise<VersionRow | null> {
  const { rows } = await db.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM policy_versions ORDER BY version DESC LIMIT 1`);
  return rows[0] ?? null;
}

export async function findVersion(db: Queryable, version: number): Promise<VersionRow | null> {
  const { rows } = await db.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM policy_versions WHERE version = $1`, [version]);
  return rows[0] ?? null;
}

export async function listVersions(db: Queryable, limit: number): Promise<VersionRow[]> {
  const { rows } = await db.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM policy_versions ORDER BY version DESC LIMIT $1`, [limit]);
  return rows;
}

/** Callers hold the policy lock, so the next number cannot be taken twice. */
export async function insertVersion(db: Queryable, v: Omit<VersionRow, 'version'>): Promise<number> {
  const { rows } = await db.query<{ version: number }>(
    `INSERT INTO policy_versions (version, sha256, model_text, policy_text, scopes_text, applied_at, applied_by, message)
     SELECT coalesce(max(version), 0) + 1, $1, $2, $3, $4, $5, $6, $7 FROM policy_versions RETURNING version`,
    [v.sha256, v.modelText, v.policyText, v.scopesText, v.appliedAt, v.appliedBy, v.message],
  );
  return rows[0]!.version;
}

/** Version 0: what the store was seeded with, kept at the first apply. Callers hold the policy lock. */
export async function insertSeedVersion(db: Queryable, v: Omit<VersionRow, 'version'>): Promise<void> {
  await db.query(
    `INSERT INTO policy_versions (version, sha256, model_text, policy_text, scopes_text, applied_at, applied_by, message)
     VALUES (0, $1, $2, $3, $4, $5, $6, $7) ON CONFLICT (version) DO NOTHING`,
    [v.sha256, v.modelText, v.policyText, v.scopesText, v.appliedAt, v.appliedBy, v.message],
  );
}

export async function findCandidate(db: Queryable): Promise<CandidateRow | null> {
  const { rows } = await db.query<CandidateRow>(`SELECT ${CANDIDATE_COLUMNS} FROM policy_shadow`);
  return rows[0] ?? null;
}

/** A new candidate replaces the old one and its counts (the divergences cascade). */
export async function replaceCandidate(db: Queryable, c: Omit<CandidateRow, 'id'>): Promise<number> {
  await db.query('DELETE FROM policy_shadow');
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO policy_shadow (sha256, model_text, policy_text, scopes_text, created_at, created_by, message)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id::int`,
    [c.sha256, c.modelText, c.policyText, c.scopesText, c.createdAt, c.createdBy, c.message],
  );
  return rows[0]!.id;
}

export async function deleteCandidate(db: Queryable): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM policy_shadow');
  return (rowCount ?? 0) > 0;
}

/**
 * Adds an instance's counts. Counts for a candidate dropped meanwhile are discarded (the EXISTS),
 * and the first example stored is kept.
 */
export async function addDivergences(db: Queryable, shadowId: number, rows: readonly DivergenceRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO policy_shadow_divergences (shadow_id, live_rule, shadow_rule, outcome, count, example)
     SELECT $1, d.live_rule, d.shadow_rule, d.outcome, d.count, d.example
       FROM jsonb_to_recordset($2::jsonb) AS d(live_rule text, shadow_rule text, outcome text, count bigint, example jsonb)
      WHERE EXISTS (SELECT 1 FROM policy_shadow WHERE id = $1)
     ON CONFLICT (shadow_id, live_rule, shadow_rule, outcome)
       DO UPDATE SET count = policy_shadow_divergences.count + excluded.count`,
    [shadowId, JSON.stringify(rows.map((r) => ({
      live_rule: r.liveRule, shadow_rule: r.shadowRule, outcome: r.outcome, count: r.count, example: r.example,
    })))],
  );
}

export async function listDivergences(db: Queryable, shadowId: number): Promise<DivergenceRow[]> {
  const { rows } = await db.query<DivergenceRow & { count: string }>(
    `SELECT live_rule "liveRule", shadow_rule "shadowRule", outcome, count, example
       FROM policy_shadow_divergences WHERE shadow_id = $1 ORDER BY count DESC, live_rule, shadow_rule, outcome`,
    [shadowId],
  );
  return rows.map((r) => ({ ...r, count: Number(r.count) }));
}
