// Why a request is allowed or refused: the decision, the line that made it, and every other line
// that matched. Worded by the caller (the CLI prints it; an admin page would show it), decided here
// once, by the same engine that enforces.
import type { Decision, PolicyEngine, PolicySubject } from '../../policy/engine.ts';
import { decisionAsServed, policyPath } from '../../policy/refusal.ts';
import type { PolicyRule } from '../../policy/rules.ts';

export interface Explanation {
  decision: Decision;
  /** The line that decided; undefined when no line matched and the default denied. */
  decidedBy: PolicyRule | undefined;
  /** The other lines whose matcher holds for the request, in file order. */
  alsoMatched: PolicyRule[];
  /** The path the decision was made on: the one asked, lowered, or the route without its suffix. */
  decidedOn: string;
}

export function explain(engine: PolicyEngine, subject: PolicySubject, method: string, path: string): Explanation {
  // Decided as the request path decides it: on the path as the policy reads it (letters lowered),
  // and by the route without a suffix when that one refuses (`pending.json` as `pending`).
  const { decision, path: decidedOn } = decisionAsServed(engine, subject, method, policyPath(path, '/api'));
  return {
    decision,
    decidedBy: decision.ruleId ? engine.rule(decision.ruleId) : undefined,
    alsoMatched: engine.matchingRules(subject, method, decidedOn).filter((r) => r.id !== decision.ruleId),
    decidedOn,
  };
}
