// A candidate policy waits beside the live one while every instance evaluates it in the shadow
// (observer.ts counts where it would decide differently); promote makes it live as a new version.
import { withTransaction, type Pool } from '../../store/db.ts';
import { lockPolicy } from '../../store/casbin.ts';
import {
  deleteCandidate, findCandidate, listDivergences, replaceCandidate, type CandidateRow, type DivergenceRow,
} from '../../store/policy-versions.ts';
import { checkBundle, sourceNamed, type PolicyTexts } from '../../policy/bundle.ts';
import { AppError } from '../../errors.ts';
import type { Clock } from '../clock.ts';
import { auditVersion, signalPolicyChanged, storeVersion, textsOf, type ApplyOutcome, type Authorship } from './versions.ts';

export interface ShadowService {
  /** Stores the texts as the candidate every instance evaluates beside the live policy. */
  store(texts: PolicyTexts, who: Authorship, source?: string): Promise<{ id: number; rules: number }>;
  candidate(): Promise<CandidateRow | null>;
  /** The candidate becomes live as a new version and stops being a candidate, in one transaction. */
  promote(by: string, expectedId?: number, actor?: Pick<Authorship, 'actor' | 'meta'>): Promise<ApplyOutcome>;
  /** Drops the candidate; false when there was none. */
  off(): Promise<boolean>;
  /** What the instances counted where the candidate decided differently, most frequent first. */
  divergences(candidateId: number): Promise<DivergenceRow[]>;
}

export function createShadowService({ pool, clock }: { pool: Pool; clock: Clock }): ShadowService {
  return {
    async store(texts, who, source = 'policy') {
      const bundle = await checkBundle(texts, sourceNamed(source));
      const id = await withTransaction(pool, async (tx) => {
        await lockPolicy(tx);
        const created = await replaceCandidate(tx, {
          sha256: bundle.sha256, modelText: texts.model, policyText: texts.policy, scopesText: texts.scopes,
          createdAt: clock(), createdBy: who.by, message: who.message,
        });
        await signalPolicyChanged(tx);
        return created;
      });
      return { id, rules: bundle.rules.length };
    },
    candidate: () => findCandidate(pool),
    promote: (by, expectedId, actor = {}) =>
      withTransaction(pool, async (tx) => {
        await lockPolicy(tx);
        const c = await findCandidate(tx);
        if (!c) throw new AppError('NOT_FOUND', 'There is no candidate policy to promote; store one with `keygate policy apply --shadow`.');
        // The checks ran against the candidate read before; one replaced since then was not checked.
        if (expectedId !== undefined && c.id !== expectedId) {
          throw new AppError('VALIDATION_FAILED', 'The candidate changed while it was being checked; run promote again.');
        }
        const bundle = await checkBundle(textsOf(c), sourceNamed('the candidate'));
        const who: Authorship = { by, message: c.message ? `promote: ${c.message}` : 'promote', ...actor };
        const outcome = await storeVersion(tx, bundle, who, clock);
        await auditVersion(tx, 'POLICY_PROMOTED', outcome, who, { candidate: c.id });
        await deleteCandidate(tx);
        // Whether or not it was live already, the candidate is gone: every instance stops evaluating it.
        await signalPolicyChanged(tx);
        return outcome;
      }),
    off: () =>
      withTransaction(pool, async (tx) => {
        await lockPolicy(tx);
        const dropped = await deleteCandidate(tx);
        if (dropped) await signalPolicyChanged(tx);
        return dropped;
      }),
    divergences: (id) => listDivergences(pool, id),
  };
}
