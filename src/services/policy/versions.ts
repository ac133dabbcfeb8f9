// The policy's record: each apply a numbered version of the model, policy and scopes texts;
// rollback and promote add versions, so the record is never rewritten.
import { withTransaction, type Client, type Pool } from '../../store/db.ts';
import { lockPolicy, readStoredRules, replaceRules } from '../../store/casbin.ts';
import { findLiveVersion, findVersion, insertVersion, listVersions, type CandidateRow, type VersionRow } from '../../store/policy-versions.ts';
import { checkBundle, policySha256, sourceNamed, type PolicyTexts } from '../../policy/bundle.ts';
import { createPolicyEngineFromRules, type PolicyEngine } from '../../policy/engine.ts';
import { parseScopes } from '../../policy/scopes.ts';
import { readScopesText, writeScopesText } from '../../store/policy-scopes.ts';
import type { PolicyRule } from '../../policy/rules.ts';
import { AppError } from '../errors.ts';
import type { Clock } from '../clock.ts';

export interface Authorship { by: string; message: string }

export type ApplyOutcome =
  | { status: 'applied'; version: number; rules: number }
  | { status: 'already-live'; version: number };

/** The engine the texts make, read with their own scopes (without a catalog where they hold none). */
export async function engineOfTexts(t: PolicyTexts, source: string): Promise<PolicyEngine> {
  return (await checkBundle(t, sourceNamed(source))).engine;
}

/** Parses and test-builds the texts: a policy the model cannot evaluate never reaches the store. */
export async function rulesOf(t: PolicyTexts, source: string): Promise<PolicyRule[]> {
  return (await engineOfTexts(t, source)).rules.slice();
}

export const textsOf = (row: VersionRow | CandidateRow): PolicyTexts => ({ model: row.modelText, policy: row.policyText, scopes: row.scopesText });

/**
 * The texts become the live policy as a new version, unless they are live already. Takes the
 * policy lock, so two applies of different texts get consecutive versions and two of the same
 * text store it once.
 */
export async function storeVersion(tx: Client, texts: PolicyTexts, who: Authorship, source: string, clock: Clock): Promise<ApplyOutcome> {
  const rules = await rulesOf(texts, source);
  const sha256 = policySha256(texts);
  await lockPolicy(tx);
  const live = await findLiveVersion(tx);
  if (live && live.sha256 === sha256) return { status: 'already-live', version: live.version };
  const version = await insertVersion(tx, { sha256, modelText: texts.model, policyText: texts.policy, scopesText: texts.scopes, appliedAt: clock(), appliedBy: who.by, message: who.message });
  // Lines and scopes change together, so an instance reloading on the commit reads a matching pair.
  if (texts.scopes) await writeScopesText(tx, texts.scopes);
  await replaceRules(tx, rules);
  return { status: 'applied', version, rules: rules.length };
}

export interface PolicyVersionService {
  /** The texts become the live policy as a new version, unless they are live already. */
  apply(texts: PolicyTexts, who: Authorship, source?: string): Promise<ApplyOutcome>;
  rollback(version: number, by: string): Promise<ApplyOutcome>;
  /** null: the store holds what the files seeded at first start, or nothing yet (version 0). */
  live(): Promise<VersionRow | null>;
  version(version: number): Promise<VersionRow>;
  history(limit: number): Promise<VersionRow[]>;
  /**
   * The engine of what the store holds now: the live version's texts, else (a store only seeded
   * from files) its lines and scopes read with `files`' model.
   */
  liveEngine(files: PolicyTexts): Promise<{ engine: PolicyEngine; version: number; sha256: string | null }>;
}

export function createPolicyVersionService({ pool, clock }: { pool: Pool; clock: Clock }): PolicyVersionService {
  const version = async (n: number): Promise<VersionRow> => {
    const row = await findVersion(pool, n);
    if (!row) throw new AppError('NOT_FOUND', `There is no policy version ${n}.`);
    return row;
  };

  return {
    apply: (texts, who, source = 'policy') => withTransaction(pool, (tx) => storeVersion(tx, texts, who, source, clock)),
    async rollback(n, by) {
      const row = await version(n);
      return withTransaction(pool, (tx) => storeVersion(tx, textsOf(row), { by, message: `rollback to ${n}` }, `version ${n}`, clock));
    },
    live: () => findLiveVersion(pool),
    version,
    history: (limit) => listVersions(pool, limit),
    async liveEngine(files) {
      const live = await findLiveVersion(pool);
      if (live) return { engine: await engineOfTexts(textsOf(live), `live version ${live.version}`), version: live.version, sha256: live.sha256 };
      const [rules, scopes] = await Promise.all([readStoredRules(pool), readScopesText(pool)]);
      const catalog = parseScopes(scopes ?? files.scopes, 'the stored scopes');
      return { engine: await createPolicyEngineFromRules(files.model, rules, { scopes: catalog }), version: 0, sha256: null };
    },
  };
}
