// The analyses behind `keygate policy lint`, pure so that any entry point can show them (the CLI
// prints them; the console may list them beside a policy): mistakes a policy can hold that its
// tests might not reveal. Each takes parsed lines or a built engine and answers findings by line.
import { type PolicyEngine, type PolicySubject, type SubjectKind } from './engine.ts';
import {
  compileMethodPattern, compilePathPattern, parseCondition, pathGlobs, permTerm, PROBE_METHODS, SUBJECTS, subjectAttributes, termsHold,
  unknownAttributes,
} from './patterns.ts';
import type { ScopeCatalog } from './scopes.ts';
import type { PolicyRule } from './rules.ts';
import { examplePath, forwardedExamples, gatewayRoutes } from './routes.ts';

export interface Finding {
  line: number;
  message: string;
}

/** `S:A` atoms a rule's condition names; `perm:S` stands for each declared action of S. */
function namedAtoms(rule: PolicyRule, catalog: ScopeCatalog | null): string[] {
  const atoms = new Set<string>();
  for (const t of parseCondition(rule.condition)) {
    const perm = permTerm(t.attribute);
    if (!perm) continue;
    const actions = perm.action ? [perm.action] : (catalog?.get(perm.scope)?.actions ?? ['access']);
    for (const a of actions) atoms.add(`${perm.scope}:${a}`);
  }
  return [...atoms].sort();
}

// The attribute sets that matter for a rule: keys holding any subset of the permissions its
// condition names (a handful, never every subset of every declared scope), no permission, or every
// declared one; each with either role. Sessions carry a role, anonymous callers nothing.
function possibleSubjects(kind: SubjectKind, atoms: readonly string[], all: readonly string[]): PolicySubject[] {
  if (kind === 'anonymous') return [{ kind, permissions: [], role: null }];
  const permSets: string[][] = [[]];
  if (kind === 'key') {
    for (const p of atoms.slice(0, 8)) for (const s of [...permSets]) permSets.push([...s, p]);
    if (all.length > 0) permSets.push([...all]);
  }
  return permSets.flatMap((permissions) => (['user', 'admin'] as const).map((role) => ({ kind, permissions, role })));
}

function allAtoms(catalog: ScopeCatalog | null): string[] {
  return catalog ? catalog.list.flatMap((s) => s.actions.map((a) => `${s.name}:${a}`)) : [];
}

function kindsOf(rule: PolicyRule): SubjectKind[] {
  return rule.subject === '*' ? [...SUBJECTS] : [rule.subject as SubjectKind];
}

function conditionHolds(rule: PolicyRule, s: PolicySubject): boolean {
  return termsHold(parseCondition(rule.condition), subjectAttributes(s.permissions, s.role));
}

// Concrete paths a pattern matches: its own segments filled in for a glob, the known routes and
// forwarded examples for a regular expression.
function globSamples(glob: string): string[] {
  const filled = glob.replace(/\/(\*|:[A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g, '/x-1');
  return filled.endsWith('/**') ? [filled.slice(0, -3) || '/', filled.slice(0, -2) + 'x-1'] : [filled];
}

function samplePaths(pattern: string): string[] {
  const globs = pathGlobs(pattern);
  if (globs.length === 1) return globSamples(globs[0]!);
  // A regular expression, or a glob with exceptions: the known routes it covers, and the samples of
  // its globs (an exception's own samples show what lies just beside it).
  const matcher = compilePathPattern(pattern);
  const known = [...gatewayRoutes.map((r) => examplePath(r.path)), ...forwardedExamples.map((f) => f.path), ...globs.flatMap(globSamples)];
  return [...new Set(known)].filter((p) => matcher.test(p));
}

/** An allow is unreachable when every request it matches is also matched by some deny. */
export function unreachableAllows(engine: PolicyEngine, catalog: ScopeCatalog | null): Finding[] {
  const findings: Finding[] = [];
  const all = allAtoms(catalog);
  for (const allow of engine.rules.filter((r) => r.effect === 'allow')) {
    const methods = PROBE_METHODS.filter((m) => compileMethodPattern(allow.method).test(m));
    const subjects = kindsOf(allow)
      .flatMap((k) => possibleSubjects(k, namedAtoms(allow, catalog), all))
      .filter((s) => conditionHolds(allow, s));
    const deniers = new Map<string, PolicyRule>();
    let sampled = 0;
    let open = false;
    for (const s of subjects) {
      for (const m of methods) {
        for (const p of samplePaths(allow.path)) {
          const matched = engine.matchingRules(s, m, p);
          if (!matched.some((r) => r.id === allow.id)) continue;
          sampled += 1;
          const denies = matched.filter((r) => r.effect === 'deny');
          if (denies.length === 0) open = true;
          for (const d of denies) deniers.set(d.id, d);
        }
        if (open) break;
      }
      if (open) break;
    }
    if (open || sampled === 0) continue;
    const by = [...deniers.values()].map((d) => `line ${d.line} (${d.id})`).join(', ');
    findings.push({ line: allow.line, message: `${allow.id}: allow can never take effect; every request it matches is denied by ${by}` });
  }
  return findings;
}

/**
 * A declared scope action opens nothing when every request a line asks it for (a deny refusing keys
 * that lack it, an allow for keys that hold it) is refused, by another line, to a key holding every
 * declared permission: holding it can never change an answer (as a `billing:write` whose
 * routes a "never for keys" line closes).
 */
export function deadActions(engine: PolicyEngine, catalog: ScopeCatalog | null): Finding[] {
  if (!catalog) return [];
  const findings: Finding[] = [];
  const all = allAtoms(catalog);
  const asks = (rule: PolicyRule, scope: string, action: string) =>
    (rule.subject === 'key' || rule.subject === '*') && parseCondition(rule.condition).some((t) => {
      const perm = permTerm(t.attribute);
      const onlyAction = perm?.action === null && catalog.get(scope)?.actions.length === 1;
      return perm !== null && perm.scope === scope && (perm.action === action || onlyAction);
    });
  for (const scope of catalog.list) {
    for (const action of scope.actions) {
      const askers = engine.rules.filter((r) => asks(r, scope.name, action));
      if (askers.length === 0) continue;
      const refusers = new Map<string, PolicyRule>();
      let opens = false;
      for (const asker of askers) {
        const methods = PROBE_METHODS.filter((m) => compileMethodPattern(asker.method).test(m));
        for (const role of ['user', 'admin'] as const) for (const m of methods) for (const p of samplePaths(asker.path)) {
          if (opens) break;
          const denies = engine.matchingRules({ kind: 'key', permissions: all, role }, m, p)
            .filter((r) => r.effect === 'deny' && r.id !== asker.id);
          if (denies.length === 0) opens = true;
          for (const d of denies) refusers.set(d.id, d);
        }
      }
      if (opens || refusers.size === 0) continue;
      const named = (rules: Iterable<PolicyRule>) => [...rules].map((r) => `line ${r.line} (${r.id})`).join(', ');
      findings.push({
        line: askers[0]!.line,
        message: `${scope.name}:${action} opens nothing: every request ${named(askers)} asks it for is refused to keys holding it`
          + ` by ${named(refusers.values())}`,
      });
    }
  }
  return findings;
}

const SAME_SHAPE = '(same subject, condition, method, path and effect)';

/** Per line: conditions naming what is not declared or can never hold, and duplicates. */
export function lineFindings(rules: readonly PolicyRule[], catalog: ScopeCatalog | null, scopesFile: string): Finding[] {
  const findings: Finding[] = [];
  const seen = new Map<string, number>();
  const declared = (scope: string, action: string | null) => {
    if (!catalog) return true;
    const s = catalog.get(scope);
    return s !== undefined && (action === null || s.actions.includes(action));
  };
  const all = allAtoms(catalog);
  for (const rule of rules) {
    const terms = parseCondition(rule.condition);
    const unknown = unknownAttributes(terms, declared);
    if (unknown.length > 0) {
      const perms = unknown.filter((u) => u.startsWith('perm:'));
      const others = unknown.filter((u) => !u.startsWith('perm:'));
      const declaredList = all.map((a) => `perm:${a}`).join(', ') || 'none';
      const known = 'perm:SCOPE, perm:SCOPE:ACTION, role:user, role:admin, via:mcp';
      if (perms.length) {
        const why = `a scope or action ${scopesFile} does not declare (declared: ${declaredList})`;
        findings.push({ line: rule.line, message: `${rule.id}: unknown ${perms.join(', ')}: ${why}` });
      }
      if (others.length) findings.push({ line: rule.line, message: `${rule.id}: unknown ${others.join(', ')} (known: ${known})` });
    } else if (!kindsOf(rule).some((k) => possibleSubjects(k, namedAtoms(rule, catalog), all).some((s) => conditionHolds(rule, s)))) {
      findings.push({ line: rule.line, message: `${rule.id}: condition "${rule.condition}" can never hold for subject ${rule.subject}` });
    }
    const condition = terms.map((t) => (t.negated ? '!' : '') + t.attribute).sort().join(' ');
    const shape = [rule.subject, condition, rule.method, rule.path, rule.effect].join('\n');
    const first = seen.get(shape);
    if (first === undefined) seen.set(shape, rule.line);
    else findings.push({ line: rule.line, message: `${rule.id}: duplicate of line ${first} ${SAME_SHAPE}` });
  }
  return findings;
}
