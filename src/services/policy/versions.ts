// The policy's record: each apply a numbered version of the model, policy and scopes texts;
// rollback and promote add versions, so the record is never rewritten.
import { withTransaction, type Client, type Pool } from '../../store/db.ts';
import { countRules, lockPolicy, readStoredRules, replaceRules } from '../../store/casbin.ts';
import { signal } from '../../store/notify.ts';
import {
  findLiveVersion, findVersion, insertSeedVersion, insertVersion, listVersions, type CandidateRow, type VersionRow,
} from '../../store/policy-versions.ts';
import { checkBundle, policySha256, sourceNamed, type PolicyBundle, type PolicyTexts } from '../../policy/bundle.ts';
import { formatRule } from '../../policy/rules.ts';
import { createPolicyEngineFromRules, type PolicyEngine } from '../../policy/engine.ts';
import { parseScopes } from '../../policy/scopes.ts';
import { readScopesText, writeScopesText } from '../../store/policy-scopes.ts';
import { AppError } from '../../errors.ts';
import { systemClock, type Clock } from '../clock.ts';
import { actorColumns, type AuditActor, type AuditDetail } from '../../store/audit.ts';
import { recordChange } from '../events/record.ts';
import { actorOf } from '../events/types.ts';

export interface Authorship {
  by: string;
  message: string;
  /** Who the audit log names: the console's admin, else the command line. */
  actor?: AuditActor;
  meta?: { ip: string | null; userAgent: string | null };
}

/** The audit entry of a new version, written in the transaction that stores it. */
export async function auditVersion(
  tx: Client,
  type: 'POLICY_APPLIED' | 'POLICY_ROLLED_BACK' | 'POLICY_PROMOTED',
  outcome: ApplyOutcome,
  who: Authorship,
  extra: AuditDetail = {},
): Promise<void> {
  if (outcome.status !== 'applied') return;
  const detail = { version: outcome.version, by: who.by, message: who.message, ...extra };
  await recordChange(tx, {
    audit: {
      type, ...actorColumns(who.actor ?? 'cli'), ownerUserId: null, keyId: null,
      ip: who.meta?.ip ?? null, userAgent: who.meta?.userAgent ?? null, detail,
    },
    // A promoted candidate is a policy put in force like an apply.
    event: {
      type: type === 'POLICY_ROLLED_BACK' ? 'policy.rolled_back' : 'policy.applied',
      data: { ...detail, actor: actorOf(who.actor ?? 'cli') },
    },
  });
}

export type ApplyOutcome =
  | { status: 'applied'; version: number; rules: number; scopes: number }
  | { status: 'already-live'; version: number };

/** The engine the texts make, read with their own scopes (without a catalog where they hold none). */
export async function engineOfTexts(t: PolicyTexts, source: string): Promise<PolicyEngine> {
  return (await checkBundle(t, sourceNamed(source))).engine;
}

export const textsOf = (row: VersionRow | CandidateRow): PolicyTexts => ({
  model: row.modelText, policy: row.policyText, scopes: row.scopesText,
});

/**
 * The one write that puts checked texts in force: the stored lines and scopes become theirs. The
 * first start's seed and every apply, rollback and promote make it. The caller holds the policy
 * lock, so lines and scopes change together and an instance reloading on the commit reads a
 * matching pair, and the caller signals (`signalPolicyChanged`) once its transaction holds all it
 * will write.
 */
export async function writeLive(tx: Client, bundle: PolicyBundle): Promise<void> {
  if (bundle.texts.scopes) await writeScopesText(tx, bundle.texts.scopes);
  await replaceRules(tx, bundle.rules);
}

/** Every instance reloads the stored policy (and candidate) when the transaction commits; not before, not if it rolls back. */
export async function signalPolicyChanged(tx: Client): Promise<void> {
  await signal(tx, { type: 'policy' });
}

/**
 * The bundle becomes the live policy as a new version, unless it is live already. Takes the policy
 * lock, so two applies of different texts get consecutive versions and two of the same text store
 * it once. Signals nobody: the caller does, when it has written all it will.
 */
export async function storeVersion(tx: Client, bundle: PolicyBundle, who: Authorship, clock: Clock): Promise<ApplyOutcome> {
  const { texts, sha256 } = bundle;
  await lockPolicy(tx);
  const live = await findLiveVersion(tx);
  // Version 0 is what a first start seeded: the first apply stores version 1 whatever it holds.
  if (live && live.version > 0 && live.sha256 === sha256) return { status: 'already-live', version: live.version };
  if (!live) await keepSeedAsVersionZero(tx, texts.model, clock);
  const version = await insertVersion(tx, {
    sha256, modelText: texts.model, policyText: texts.policy, scopesText: texts.scopes,
    appliedAt: clock(), appliedBy: who.by, message: who.message,
  });
  await writeLive(tx, bundle);
  return { status: 'applied', version, rules: bundle.rules.length, scopes: bundle.engine.scopes.list.length };
}

export const SEED_MESSAGE = 'seeded from files at first start';

/** The files a first start writes into an empty store are version 0 from that moment. Callers hold the policy lock. */
export async function storeSeedVersion(tx: Client, texts: PolicyTexts, clock: Clock): Promise<void> {
  await insertSeedVersion(tx, {
    sha256: policySha256(texts), modelText: texts.model, policyText: texts.policy, scopesText: texts.scopes,
    appliedAt: clock(), appliedBy: 'keygate', message: SEED_MESSAGE,
  });
}

/**
 * A store seeded before the seed was kept as version 0 at once (or by an older keygate) holds
 * lines and no version: its lines and scopes become version 0, so `policy rollback 0` returns to
 * them. The seed stored no text of its own:
 * the policy text is written back from the stored lines (the file's comments are gone, the lines
 * and their order are not), and the model is the one this apply brings, which the gateways read
 * the seeded lines with when it is the configured file, as it is unless --model says otherwise.
 */
export async function keepSeedAsVersionZero(tx: Client, modelText: string, clock: Clock): Promise<void> {
  if ((await countRules(tx)) === 0) return;
  const [rules, scopes] = await Promise.all([readStoredRules(tx), readScopesText(tx)]);
  const texts: PolicyTexts = {
    model: modelText,
    policy: `# ${SEED_MESSAGE}: the lines the store held before version 1\n${rules.map((r) => `${formatRule(r)}\n`).join('')}`,
    scopes: scopes ?? '',
  };
  await insertSeedVersion(tx, {
    sha256: policySha256(texts), modelText: texts.model, policyText: texts.policy, scopesText: texts.scopes,
    appliedAt: clock(), appliedBy: 'keygate', message: SEED_MESSAGE,
  });
}

/**
 * Applying a policy: the texts are checked (one the model cannot evaluate never reaches the store)
 * and become the live policy as a new version. `keygate policy apply` and rollback come here, and
 * so would an admin console.
 */
export async function applyPolicy(
  pool: Pool,
  texts: PolicyTexts,
  who: Authorship,
  opts: { clock?: Clock; source?: string; rollbackTo?: number } = {},
): Promise<ApplyOutcome> {
  const bundle = await checkBundle(texts, sourceNamed(opts.source ?? 'policy'));
  return withTransaction(pool, async (tx) => {
    const outcome = await storeVersion(tx, bundle, who, opts.clock ?? systemClock);
    if (opts.rollbackTo !== undefined) await auditVersion(tx, 'POLICY_ROLLED_BACK', outcome, who, { rollbackTo: opts.rollbackTo });
    else await auditVersion(tx, 'POLICY_APPLIED', outcome, who);
    // What is live already changed nothing an instance holds.
    if (outcome.status === 'applied') await signalPolicyChanged(tx);
    return outcome;
  });
}

export interface PolicyVersionService {
  /** The texts become the live policy as a new version, unless they are live already. */
  apply(texts: PolicyTexts, who: Authorship, source?: string): Promise<ApplyOutcome>;
  /** `message`: why, in the operator's words; `rollback to N` when none is given. */
  rollback(version: number, by: string, actor?: Pick<Authorship, 'actor' | 'meta'>, message?: string): Promise<ApplyOutcome>;
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

  let builtLive: { key: string; engine: Promise<PolicyEngine> } | null = null;

  return {
    apply: (texts, who, source = 'policy') => applyPolicy(pool, texts, who, { clock, source }),
    async rollback(n, by, actor = {}, message) {
      const row = await version(n);
      const who = { by, message: message || `rollback to ${n}`, ...actor };
      return applyPolicy(pool, textsOf(row), who, { clock, source: `version ${n}`, rollbackTo: n });
    },
    live: () => findLiveVersion(pool),
    version,
    history: (limit) => listVersions(pool, limit),
    async liveEngine(files) {
      const live = await findLiveVersion(pool);
      if (live) {
        // A version never changes, so its engine is built once, not on every explain a console makes.
        const key = `${live.version}:${live.sha256}`;
        if (builtLive?.key !== key) builtLive = { key, engine: engineOfTexts(textsOf(live), `live version ${live.version}`) };
        const building = builtLive;
        const engine = await building.engine.catch((err: unknown) => {
          if (builtLive === building) builtLive = null;
          throw err;
        });
        return { engine, version: live.version, sha256: live.sha256 };
      }
      const [rules, scopes] = await Promise.all([readStoredRules(pool), readScopesText(pool)]);
      const catalog = parseScopes(scopes ?? files.scopes, 'the stored scopes');
      return { engine: await createPolicyEngineFromRules(files.model, rules, { scopes: catalog }), version: 0, sha256: null };
    },
  };
}
