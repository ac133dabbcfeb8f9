import type { Client, Queryable } from './db.ts';
import { PolicyLoadError } from '../policy/engine.ts';
import { describeProblems, parsePolicyRows, ruleToCsvRow, type PolicyRule } from '../policy/rules.ts';

// The policy as the running gateways see it: rows of the casbin table, in casbin-pg-adapter's
// format (ptype, rule as a JSON array), so the adapter and casbin tools can still read them. The
// policy service replaces them in one transaction and, as its own step, signals every instance to
// reload.

/**
 * The stored lines in the order they were written, which is the file's. casbin-pg-adapter's own
 * loadPolicy reads without ORDER BY, so once PostgreSQL reuses space in the table a gateway could
 * name a different one of two matching deny lines than the file does (and so word its 403 and
 * requiredPermission differently). The rows stay in the adapter's format.
 */
export async function readStoredRules(pool: Queryable, _modelText?: string): Promise<PolicyRule[]> {
  const { rows } = await pool.query<{ ptype: string; rule: string[] }>('SELECT ptype, rule FROM casbin ORDER BY id');
  const parsed = parsePolicyRows(rows.map((r) => [r.ptype, ...r.rule]));
  if (parsed.problems.length) {
    throw new PolicyLoadError(`the stored policy has malformed lines:\n${describeProblems(parsed.problems, 'database')}`);
  }
  return parsed.rules;
}

// Taken by apply and by first-start seeding, so they never interleave.
const POLICY_LOCK = 0x6b670001;

/** Holds the policy lock until the transaction ends. */
export async function lockPolicy(tx: Client): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [POLICY_LOCK]);
}

export async function countRules(tx: Client): Promise<number> {
  const { rows } = await tx.query<{ n: string }>('SELECT count(*) n FROM casbin');
  return Number(rows[0]!.n);
}

/** Every stored line becomes the given ones. Signals nobody: the caller tells the instances. */
export async function replaceRules(tx: Client, rules: readonly PolicyRule[]): Promise<void> {
  await tx.query('DELETE FROM casbin');
  const rows = rules.map((r) => JSON.stringify(ruleToCsvRow(r).slice(1)));
  // Ids follow the file's order (ORDER BY the ordinality): readers sort on them.
  if (rows.length) {
    await tx.query(
      "INSERT INTO casbin (ptype, rule) SELECT 'p', r::jsonb FROM unnest($1::text[]) WITH ORDINALITY AS t(r, n) ORDER BY n",
      [rows],
    );
  }
}
