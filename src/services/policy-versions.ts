// The policy's record (CONTRACT 13): each apply a numbered version of the model, policy and scopes
// texts; rollback and promote add versions, so the record is never rewritten. A candidate waits
// beside the live policy while every instance evaluates it in the shadow.
import { withTransaction, type Pool } from '../store/db.ts';
import { lockPolicy, readStoredRules, replaceRules } from '../store/casbin.ts';
import { signal } from '../store/notify.ts';
import {
  deleteCandidate, findCandidate, findLiveVersion, findVersion, insertVersion, listDivergences, listVersions, replaceCandidate,
  type CandidateRow, type DivergenceRow, type VersionRow,
} from '../store/policy-versions.ts';
import { listInstancesSeenSince, type InstanceRow } from '../store/fleet.ts';
import { checkBundle, policySha256, sourceNamed, type PolicyTexts } from '../policy/bundle.ts';
import { createPolicyEngineFromRules, type PolicyEngine } from '../policy/engine.ts';
import { parseScopes } from '../policy/scopes.ts';
import { readScopesText, writeScopesText } from '../store/policy-scopes.ts';
import type { PolicyRule } from '../policy/rules.ts';
import { AppError } from './errors.ts';
import type { Clock } from './clock.ts';

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

const textsOf = (row: VersionRow | CandidateRow): PolicyTexts => ({ model: row.modelText, policy: row.policyText, scopes: row.scopesText });

export interface PolicyVersionService {
  /** The texts become the live policy as a new version, unless they are live already. */
  apply(texts: PolicyTexts, who: Authorship, source?: string): Promise<ApplyOutcome>;
  rollback(version: number, by: string): Promise<ApplyOutcome>;
  /** null: the store holds what the files seeded at first start, or nothing yet (version 0). */
  live(): Promise<VersionRow | null>;
  version(version: number): Promise<VersionRow>;
  history(limit: number): Promise<VersionRow[]>;
  /** Stores the texts as the candidate every instance evaluates beside the live policy. */
  shadow(texts: PolicyTexts, who: Authorship, source?: string): Promise<{ id: number; rules: number }>;
  candidate(): Promise<CandidateRow | null>;
  /** The candidate becomes live as a new version and stops being a candidate, in one transaction. */
  promote(by: string, expectedId?: number): Promise<ApplyOutcome>;
  shadowOff(): Promise<boolean>;
  divergences(candidateId: number): Promise<DivergenceRow[]>;
  /**
   * The engine of what the store holds now: the live version's texts, else (a store only seeded
   * from files) its lines and scopes read with `files`' model.
   */
  liveEngine(files: PolicyTexts): Promise<{ engine: PolicyEngine; version: number; sha256: string | null }>;
  /** The live version and every instance heard from within `horizonMs`. */
  fleet(horizonMs: number): Promise<{ liveVersion: number; instances: InstanceRow[] }>;
}

export function createPolicyVersionService({ pool, clock }: { pool: Pool; clock: Clock }): PolicyVersionService {
  // Under the policy lock, so two applies of different texts get consecutive versions and two of
  // the same text store it once.
  const store = async (tx: Parameters<Parameters<typeof withTransaction>[1]>[0], texts: PolicyTexts, who: Authorship, source: string): Promise<ApplyOutcome> => {
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
  };

  const version = async (n: number): Promise<VersionRow> => {
    const row = await findVersion(pool, n);
    if (!row) throw new AppError('NOT_FOUND', `There is no policy version ${n}.`);
    return row;
  };

  return {
    apply: (texts, who, source = 'policy') => withTransaction(pool, (tx) => store(tx, texts, who, source)),
    async rollback(n, by) {
      const row = await version(n);
      return withTransaction(pool, (tx) => store(tx, textsOf(row), { by, message: `rollback to ${n}` }, `version ${n}`));
    },
    live: () => findLiveVersion(pool),
    version,
    history: (limit) => listVersions(pool, limit),
    async shadow(texts, who, source = 'policy') {
      const rules = await rulesOf(texts, source);
      const id = await withTransaction(pool, async (tx) => {
        await lockPolicy(tx);
        const created = await replaceCandidate(tx, { sha256: policySha256(texts), modelText: texts.model, policyText: texts.policy, scopesText: texts.scopes, createdAt: clock(), createdBy: who.by, message: who.message });
        await signal(tx, { type: 'policy' });
        return created;
      });
      return { id, rules: rules.length };
    },
    candidate: () => findCandidate(pool),
    promote: (by, expectedId) =>
      withTransaction(pool, async (tx) => {
        await lockPolicy(tx);
        const c = await findCandidate(tx);
        if (!c) throw new AppError('NOT_FOUND', 'There is no candidate policy to promote; store one with `keygate policy apply --shadow`.');
        // The checks ran against the candidate read before; one replaced since then was not checked.
        if (expectedId !== undefined && c.id !== expectedId) throw new AppError('VALIDATION_FAILED', 'The candidate changed while it was being checked; run promote again.');
        const outcome = await store(tx, textsOf(c), { by, message: c.message ? `promote: ${c.message}` : 'promote' }, 'the candidate');
        await deleteCandidate(tx);
        // An already-live candidate changes no rule, so nothing else would tell instances it is gone.
        await signal(tx, { type: 'policy' });
        return outcome;
      }),
    shadowOff: () =>
      withTransaction(pool, async (tx) => {
        await lockPolicy(tx);
        const dropped = await deleteCandidate(tx);
        if (dropped) await signal(tx, { type: 'policy' });
        return dropped;
      }),
    divergences: (id) => listDivergences(pool, id),
    async liveEngine(files) {
      const live = await findLiveVersion(pool);
      if (live) return { engine: await engineOfTexts(textsOf(live), `live version ${live.version}`), version: live.version, sha256: live.sha256 };
      const [rules, scopes] = await Promise.all([readStoredRules(pool), readScopesText(pool)]);
      const catalog = parseScopes(scopes ?? files.scopes, 'the stored scopes');
      return { engine: await createPolicyEngineFromRules(files.model, rules, { scopes: catalog }), version: 0, sha256: null };
    },
    async fleet(horizonMs) {
      const [live, instances] = await Promise.all([findLiveVersion(pool), listInstancesSeenSince(pool, new Date(clock().getTime() - horizonMs))]);
      return { liveVersion: live?.version ?? 0, instances };
    },
  };
}
