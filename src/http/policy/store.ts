import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import type * as Casbin from 'casbin';
import type { PostgresAdapter } from 'casbin-pg-adapter/lib/adapter.js';
import type { Pool, Client } from '../../store/db.ts';
import { withTransaction } from '../../store/db.ts';
import { signal } from '../../store/notify.ts';
import { createPolicyEngineFromRules, PolicyLoadError, type PolicyEngine } from './engine.ts';
import { describeProblems, parsePolicy, parsePolicyRows, ruleToCsvRow, type PolicyRule } from './rules.ts';

// The policy as the running gateways see it: rows of the casbin table, read through
// casbin-pg-adapter. `keygate policy apply` replaces them in one transaction and signals every
// instance to reload.

const require = createRequire(import.meta.url);
const casbin = require('casbin') as typeof Casbin;
const Adapter = (require('casbin-pg-adapter') as { default: typeof PostgresAdapter }).default;

type Exec = (client: Client) => Promise<unknown>;

async function adapterOn(pool: Pool): Promise<PostgresAdapter> {
  // The table comes from our own migrations; the adapter only reads it, on a pooled client.
  return Adapter.newAdapter({
    migrate: false,
    dbClient: async (exec: Exec) => {
      const client = await pool.connect();
      try {
        return await exec(client);
      } finally {
        client.release();
      }
    },
  });
}

/** The stored lines, in the adapter's CSV form parsed back into rules. */
export async function readStoredRules(pool: Pool, modelText: string): Promise<PolicyRule[]> {
  const adapter = await adapterOn(pool);
  const model = casbin.newModelFromString(modelText);
  await adapter.loadPolicy(model);
  const rows = model.getPolicy('p', 'p');
  const parsed = parsePolicyRows(rows.map((r) => ['p', ...r]));
  if (parsed.problems.length) throw new PolicyLoadError(`the stored policy has malformed lines:\n${describeProblems(parsed.problems, 'database')}`);
  return parsed.rules;
}

export async function loadStoredEngine(pool: Pool, modelText: string): Promise<PolicyEngine> {
  return createPolicyEngineFromRules(modelText, await readStoredRules(pool, modelText));
}

async function replaceRules(tx: Client, rules: readonly PolicyRule[]): Promise<void> {
  await tx.query('DELETE FROM casbin');
  const rows = rules.map((r) => JSON.stringify(ruleToCsvRow(r).slice(1)));
  if (rows.length) await tx.query("INSERT INTO casbin (ptype, rule) SELECT 'p', r::jsonb FROM unnest($1::text[]) AS r", [rows]);
  await signal(tx, { type: 'policy' });
}

/** Parses and test-builds a policy: one the model cannot evaluate never reaches the store. */
async function checkedRules(modelText: string, policyText: string, source: string): Promise<PolicyRule[]> {
  const parsed = parsePolicy(policyText);
  if (parsed.problems.length) throw new PolicyLoadError(`${source} has malformed lines:\n${describeProblems(parsed.problems, source)}`);
  await createPolicyEngineFromRules(modelText, parsed.rules);
  return parsed.rules;
}

// Taken by apply and by first-start seeding, so they never interleave.
const POLICY_LOCK = 0x6b670001;

/** Replaces every stored line with the file's, in one transaction; other instances hear of it on commit. */
export async function applyPolicy(pool: Pool, modelText: string, policyText: string, source: string): Promise<{ rules: number }> {
  const rules = await checkedRules(modelText, policyText, source);
  await withTransaction(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [POLICY_LOCK]);
    await replaceRules(tx, rules);
  });
  return { rules: rules.length };
}

export async function applyPolicyFiles(pool: Pool, modelPath: string, policyPath: string) {
  const [modelText, policyText] = await Promise.all([readFile(modelPath, 'utf8'), readFile(policyPath, 'utf8')]);
  return applyPolicy(pool, modelText, policyText, policyPath);
}

/**
 * The engine a gateway starts with: the stored policy, after writing the files into an empty
 * store on first start. Two instances starting together both see the store empty at most once:
 * the advisory lock makes the second wait and find the rows.
 */
export async function bootstrapPolicy(pool: Pool, modelPath: string, policyPath: string): Promise<{ engine: PolicyEngine; seeded: boolean; differsFromFiles: boolean }> {
  const [modelText, policyText] = await Promise.all([readFile(modelPath, 'utf8'), readFile(policyPath, 'utf8')]);
  const fileRules = await checkedRules(modelText, policyText, policyPath);
  const seeded = await withTransaction(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [POLICY_LOCK]);
    const { rows } = await tx.query<{ n: string }>('SELECT count(*) n FROM casbin');
    if (Number(rows[0]!.n) > 0) return false;
    await replaceRules(tx, fileRules);
    return true;
  });
  const stored = await readStoredRules(pool, modelText);
  const canon = (rs: readonly PolicyRule[]) => rs.map((r) => ruleToCsvRow(r).join(',')).sort().join('\n');
  return { engine: await createPolicyEngineFromRules(modelText, stored), seeded, differsFromFiles: canon(stored) !== canon(fileRules) };
}
