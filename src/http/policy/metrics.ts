import { Counter, Gauge, type Registry } from 'prom-client';
import type { DecisionObserver } from '../../services/policy/index.ts';

// Read from the observer's in-memory totals when scraped, so a decision costs a Map update rather
// than a labelled prom-client increment. Label values are rule ids of the policy (and
// `default-deny`), so their number stays bounded by the policy's lines.
export function policyMetrics(registry: Registry, version: () => number, observer: DecisionObserver): void {
  new Gauge({
    name: 'keygate_policy_version',
    help: 'The policy version this instance has loaded (0: the store was seeded from the files)',
    registers: [registry],
    collect() {
      this.set(version());
    },
  });
  new Counter({
    name: 'keygate_policy_decisions_total',
    help: 'Access decisions by the policy line that made them (default-deny when none matched) and effect',
    labelNames: ['rule', 'effect'],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of observer.decisionCounts()) this.inc({ rule: c.rule, effect: c.effect }, c.count);
    },
  });
  new Counter({
    name: 'keygate_policy_shadow_divergences_total',
    help: 'Requests the candidate policy would decide differently from the live one',
    labelNames: ['live_rule', 'shadow_rule', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const d of observer.divergenceCounts()) {
        this.inc({ live_rule: d.liveRule, shadow_rule: d.shadowRule, outcome: d.outcome }, d.count);
      }
    },
  });
}
