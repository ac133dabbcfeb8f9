// `decide` and `matchingRules` answered from the compiled form (compiled.ts): what the request path,
// `policy explain` and the console's explain ask. No memo: a path never seen costs what a seen one
// does, and no caller can push another's decisions out of a cache.
import { compilePolicy, conditionHolds, verdict, type Attributes, type CompiledLine } from './compiled.ts';
import type { Decision, PolicyEngine, PolicySubject } from './types.ts';
import type { PolicyRule } from './rules.ts';
import { RefusalSearch } from './refused-search.ts';
import { spell, type ScopeCatalog } from './scopes.ts';
import { atomsOfNames, permWords } from './search.ts';

interface Held { set: ReadonlySet<string>; perms: ReadonlySet<string> }

const SAFE_ROLE = /^[A-Za-z0-9_-]+$/;
const NO_ONE: Held = { set: new Set(), perms: new Set() };

export type Answers = Pick<PolicyEngine, 'decide' | 'matchingRules'>;

export function compiledDecisions(rules: readonly PolicyRule[], catalog: ScopeCatalog | null): Answers {
  const compiled = compilePolicy(rules, (scope) => (catalog ? catalog.get(scope)?.actions ?? [] : null));
  // The attribute words of every atom a refusal's search may try, spelled once.
  const wordsOf = new Map<string, readonly string[]>();
  for (const l of compiled.lines) for (const a of l.asks) if (!wordsOf.has(a)) wordsOf.set(a, permWords([a]));
  const search = new RefusalSearch();
  // Decisions that depend only on the deciding line (all but a key's refusal that names a
  // permission) are made once per line and shared. A line either allows or refuses, so the
  // deciding line and whether a key was refused tell them apart.
  const fixed = [new Map<CompiledLine | null, Decision>(), new Map<CompiledLine | null, Decision>()] as const;
  const fixedOf = (line: CompiledLine | null, allowed: boolean, refusedKey: boolean): Decision => {
    const at = fixed[refusedKey ? 1 : 0];
    let d = at.get(line);
    if (!d) {
      d = Object.freeze({ allowed, ruleId: line?.rule.id ?? null, requiredPermission: null, neverForKeys: refusedKey });
      at.set(line, d);
    }
    return d;
  };

  // A key's permissions array lives as long as its cached record: its atoms and attribute words are
  // worked out once per array, in a weak map that dies with the arrays and with this form.
  const heldOf = new WeakMap<readonly string[], Held>();
  const held = (subject: PolicySubject): Held => {
    if (subject.kind !== 'key') return NO_ONE;
    let h = heldOf.get(subject.permissions);
    if (!h) {
      const atoms = atomsOfNames(catalog, subject.permissions);
      heldOf.set(subject.permissions, (h = { set: new Set(atoms), perms: new Set(permWords(atoms)) }));
    }
    return h;
  };
  const attributesOf = (subject: PolicySubject, perms: ReadonlySet<string>): Attributes => ({
    perms,
    role: subject.role && SAFE_ROLE.test(subject.role) ? `role:${subject.role}` : null,
    mcp: subject.channel === 'mcp',
    oauth: subject.oauth === true,
  });

  return {
    decide(subject, method, path) {
      const h = held(subject);
      const attrs = attributesOf(subject, h.perms);
      const lines = compiled.candidates(subject.kind, method, path);
      const { allowed, line } = verdict(lines, attrs);
      if (allowed || subject.kind !== 'key') return fixedOf(line, allowed, false);
      // What a refused key lacks is searched among the atoms the candidate lines name: bounded by
      // those lines, whatever the number of declared scopes.
      const found = search.find(lines, attrs, h.set, wordsOf);
      const needs = found === null ? null : found.map((atom) => spell(catalog, ...(atom.split(':') as [string, string]))).join(',');
      if (needs === null) return fixedOf(line, false, true);
      return Object.freeze({ allowed: false, ruleId: line?.rule.id ?? null, requiredPermission: needs, neverForKeys: false });
    },
    matchingRules(subject, method, path) {
      const attrs = attributesOf(subject, held(subject).perms);
      const matched = compiled.candidates(subject.kind, method, path).filter((l) => conditionHolds(l, attrs));
      return matched.sort((x, y) => x.index - y.index).map((l) => l.rule);
    },
  };
}
