// The decisions of node-casbin's enforcer over the policy lines: the meaning of the model and policy
// files, and what the compiled form (compiled.ts) must answer in every case. Each evaluation walks
// every line, so the request path does not ask here; the differential tests do.
import type { BuiltEnforcer, RequestValues } from './enforcer.ts';
import type { Answers } from './decisions.ts';
import type { Decision, PolicySubject } from './types.ts';
import { parseCondition, permTerm, subjectAttributes, type ConditionTerm } from './patterns.ts';
import type { PolicyRule } from './rules.ts';
import type { ScopeCatalog } from './scopes.ts';
import { atomsOfNames, missingPermission } from './search.ts';

function requestOf(subject: PolicySubject, atoms: readonly string[], method: string, path: string): RequestValues {
  const attrs = [subjectAttributes(atoms, subject.role), subject.channel === 'mcp' ? 'via:mcp' : '', subject.oauth ? 'via:oauth' : ''];
  return [subject.kind, attrs.filter(Boolean).join(' '), method, path];
}

export function referenceOf(enforcer: BuiltEnforcer, rules: readonly PolicyRule[], catalog: ScopeCatalog | null): Answers {
  const byId = new Map(rules.map((r) => [r.id, r]));
  const terms = new Map<string, ConditionTerm[]>(rules.map((r) => [r.id, parseCondition(r.condition)]));
  const actionsOf = (scope: string): readonly string[] => (catalog ? catalog.get(scope)?.actions ?? [] : ['access']);
  const atomsOf = (subject: PolicySubject) => (subject.kind === 'key' ? atomsOfNames(catalog, subject.permissions) : []);

  // Asked of the policy itself rather than of a hand-kept table, so a new scoped router needs no
  // code change for the 403 to name its permission: one an allow line asks for, or one a deny line
  // asks to be missing, among the lines that match whatever the attributes.
  const required = (subject: PolicySubject, atoms: readonly string[], method: string, path: string): string | null => {
    const held = new Set(atoms);
    const candidates = new Set<string>();
    for (const id of enforcer.candidateIds(requestOf(subject, atoms, method, path))) {
      const rule = byId.get(id);
      for (const t of (rule && terms.get(id)) ?? []) {
        const perm = permTerm(t.attribute);
        if (!perm || (rule!.effect === 'allow') === t.negated) continue;
        const declared = actionsOf(perm.scope);
        const actions = perm.action ? (declared.includes(perm.action) || !catalog ? [perm.action] : []) : declared;
        for (const a of actions) if (!held.has(`${perm.scope}:${a}`)) candidates.add(`${perm.scope}:${a}`);
      }
    }
    return missingPermission(catalog, candidates, (extra) => enforcer.enforceEx(requestOf(subject, [...atoms, ...extra], method, path))[0]);
  };

  return {
    decide(subject, method, path): Decision {
      const atoms = atomsOf(subject);
      const [allowed, row] = enforcer.enforceEx(requestOf(subject, atoms, method, path));
      const needs = !allowed && subject.kind === 'key' ? required(subject, atoms, method, path) : null;
      return Object.freeze({
        allowed,
        ruleId: row.length > 0 ? (row[row.length - 1] ?? null) : null,
        requiredPermission: needs,
        neverForKeys: !allowed && subject.kind === 'key' && needs === null,
      });
    },
    matchingRules(subject, method, path) {
      const ids = new Set(enforcer.matchingIds(requestOf(subject, atomsOf(subject), method, path)));
      return rules.filter((r) => ids.has(r.id));
    },
  };
}
