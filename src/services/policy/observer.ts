// Every decision counted by the line that made it, and, while a candidate policy exists, the same
// request decided under the candidate too. The live decision is the one returned (and enforced);
// the candidate's only counts where it would differ. Nothing here touches a store per request:
// counts live in memory and `flush` adds them to the database on the instance's own schedule.
import type { Logger } from 'pino';
import type { Decision, PolicyEngine, PolicySubject } from '../../policy/engine.ts';
import { subjectAttributes } from '../../policy/patterns.ts';
import type { Pool } from '../../store/db.ts';
import { logTaskFailure } from '../../store/outage.ts';
import { addDivergences, type DivergenceRow } from '../../store/policy-versions.ts';
import type { Clock } from '../clock.ts';

export type Outcome = 'would-allow' | 'would-deny';

export interface DecisionCount { rule: string; effect: 'allow' | 'deny'; count: number }
export interface DivergenceCount { liveRule: string; shadowRule: string; outcome: Outcome; count: number }
export interface Candidate { id: number; engine: PolicyEngine }

export interface DecisionObserver {
  /** An engine deciding as `live` does, counting each decision and comparing it with the candidate's. */
  observe(live: PolicyEngine, candidate: Candidate | null): PolicyEngine;
  /** Totals since the process started, for /metrics. */
  decisionCounts(): DecisionCount[];
  divergenceCounts(): DivergenceCount[];
  /** Adds the divergences counted since the last flush to the database; kept for the next one if it fails. */
  flush(): Promise<void>;
}

/** The rule id reported when no line matched and the default denied. */
export const DEFAULT_DENY = 'default-deny';

interface Divergence extends DivergenceCount {
  shadowId: number;
  unflushed: number;
  example: Record<string, string>;
  lastLoggedAt: number;
  suppressed: number;
}

// A path can carry a key or user id (`/api/api-keys/<id>`); those are not the log's business.
// A segment is an id when it is a UUID, a number of four digits or more, or a run of 16 or more
// URL-safe characters with a digit among them.
const ID_SEGMENT = new RegExp(`^(?:${[
  '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
  '[0-9]{4,}',
  '(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{16,}',
].join('|')})$`, 'i');
export const withoutIds = (path: string) => path.split('/').map((s) => (ID_SEGMENT.test(s) ? ':id' : s)).join('/');

function exampleOf(subject: PolicySubject, method: string, path: string): Record<string, string> {
  return {
    method, path: withoutIds(path), subject: subject.kind,
    attributes: subjectAttributes(subject.permissions, subject.role), via: subject.channel ?? 'http',
  };
}

interface Tally { allow: number; deny: number }

// Nothing is remembered per request: paths name resources, so almost every path is new, and a memo
// keyed on them would miss, keep each request's decision alive long enough to be copied out of the
// young generation, and let one caller's random paths push out everyone else's entries.
export function createDecisionObserver({ pool, clock, logger, logEveryMs = 1000 }: {
  pool: Pool; clock: Clock; logger?: Pick<Logger, 'info' | 'warn'>; logEveryMs?: number;
}): DecisionObserver {
  // Keyed by rule id alone (null: default deny), so counting a decision builds no string.
  const decisions = new Map<string | null, Tally>();
  const divergences = new Map<string, Divergence>();

  const tallyOf = (ruleId: string | null): Tally => {
    let cell = decisions.get(ruleId);
    if (!cell) decisions.set(ruleId, (cell = { allow: 0, deny: 0 }));
    return cell;
  };
  const count = (d: Decision, cell: Tally) => {
    if (d.allowed) cell.allow += 1;
    else cell.deny += 1;
  };

  // Where a divergence between these two decisions is counted.
  const divergenceOf = (
    shadowId: number, live: Decision, shadow: Decision, subject: PolicySubject, method: string, path: string,
  ): Divergence => {
    const liveRule = live.ruleId ?? DEFAULT_DENY;
    const shadowRule = shadow.ruleId ?? DEFAULT_DENY;
    const outcome: Outcome = shadow.allowed ? 'would-allow' : 'would-deny';
    const key = `${shadowId}\n${liveRule}\n${shadowRule}\n${outcome}`;
    let d = divergences.get(key);
    if (!d) {
      d = {
        shadowId, liveRule, shadowRule, outcome, count: 0, unflushed: 0,
        example: exampleOf(subject, method, path), lastLoggedAt: -Infinity, suppressed: 0,
      };
      divergences.set(key, d);
    }
    return d;
  };

  const diverged = (d: Divergence, subject: PolicySubject, method: string, path: string) => {
    const { liveRule, shadowRule, outcome } = d;
    d.count += 1;
    d.unflushed += 1;
    const now = clock().getTime();
    // One line a second per pair at most: a popular route must not turn the log into a copy of traffic.
    if (now - d.lastLoggedAt < logEveryMs) {
      d.suppressed += 1;
      return;
    }
    const fields = { liveRule, shadowRule, outcome, ...exampleOf(subject, method, path), alsoSince: d.suppressed };
    logger?.info(fields, 'the candidate policy decides differently');
    d.lastLoggedAt = now;
    d.suppressed = 0;
  };

  return {
    observe(live, candidate) {
      return {
        scopes: live.scopes,
        rules: live.rules,
        rule: live.rule,
        matchingRules: live.matchingRules,
        reference: live.reference,
        decide(subject, method, path) {
          const decision = live.decide(subject, method, path);
          count(decision, tallyOf(decision.ruleId));
          if (candidate) {
            const shadow = candidate.engine.decide(subject, method, path);
            if (shadow.allowed !== decision.allowed) {
              diverged(divergenceOf(candidate.id, decision, shadow, subject, method, path), subject, method, path);
            }
          }
          return decision;
        },
      };
    },
    decisionCounts() {
      const out: DecisionCount[] = [];
      for (const [rule, c] of decisions) {
        if (c.allow) out.push({ rule: rule ?? DEFAULT_DENY, effect: 'allow', count: c.allow });
        if (c.deny) out.push({ rule: rule ?? DEFAULT_DENY, effect: 'deny', count: c.deny });
      }
      return out;
    },
    divergenceCounts() {
      const totals = new Map<string, DivergenceCount>();
      for (const d of divergences.values()) {
        const key = `${d.liveRule}\n${d.shadowRule}\n${d.outcome}`;
        const t = totals.get(key) ?? { liveRule: d.liveRule, shadowRule: d.shadowRule, outcome: d.outcome, count: 0 };
        t.count += d.count;
        totals.set(key, t);
      }
      return [...totals.values()];
    },
    async flush() {
      const byCandidate = new Map<number, { entry: Divergence; taken: number }[]>();
      for (const entry of divergences.values()) {
        if (entry.unflushed === 0) continue;
        const list = byCandidate.get(entry.shadowId) ?? [];
        list.push({ entry, taken: entry.unflushed });
        byCandidate.set(entry.shadowId, list);
      }
      for (const [shadowId, list] of byCandidate) {
        const rows: DivergenceRow[] = list.map(({ entry, taken }) => ({
          liveRule: entry.liveRule, shadowRule: entry.shadowRule, outcome: entry.outcome, count: taken, example: entry.example,
        }));
        try {
          await addDivergences(pool, shadowId, rows);
          // Requests counted while the write was in flight stay for the next flush.
          for (const { entry, taken } of list) entry.unflushed -= taken;
        } catch (err) {
          logTaskFailure(logger, err, 'could not add shadow divergence counts to the database; keeping them for the next try');
        }
      }
    },
  };
}
