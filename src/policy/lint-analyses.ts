// The analyses behind `keygate policy lint`, pure so that any entry point can show them (the CLI
// prints them; the console may list them beside a policy): mistakes a policy can hold that its
// tests might not reveal. Each takes parsed lines or a built engine and answers findings by line.
import { type PolicyEngine, type PolicySubject, type SubjectKind } from './engine.ts';
import {
  compileMethodPattern, compilePathPattern, parseCondition, pathGlobs, permTerm, PROBE_METHODS, SUBJECTS, subjectAttributes,
  unknownAttributes, type ConditionTerm,
} from './patterns.ts';
import type { ScopeCatalog } from './scopes.ts';
import type { PolicyRule } from './rules.ts';
import { examplePath, forwardedExamples, gatewayRoutes } from './routes.ts';

export interface Finding {
  line: number;
  message: string;
}

// Parsed once per line, whichever analyses ask (a 10,000-line policy asks each line many times).
const parsedTerms = new WeakMap<PolicyRule, readonly ConditionTerm[]>();
function termsOf(rule: PolicyRule): readonly ConditionTerm[] {
  let terms = parsedTerms.get(rule);
  if (!terms) parsedTerms.set(rule, (terms = parseCondition(rule.condition)));
  return terms;
}

/** `S:A` atoms a rule's condition names; `perm:S` stands for each declared action of S. */
function namedAtoms(rule: PolicyRule, catalog: ScopeCatalog | null): string[] {
  const atoms = new Set<string>();
  for (const t of termsOf(rule)) {
    const perm = permTerm(t.attribute);
    if (!perm) continue;
    const actions = perm.action ? [perm.action] : (catalog?.get(perm.scope)?.actions ?? ['access']);
    for (const a of actions) atoms.add(`${perm.scope}:${a}`);
  }
  return [...atoms].sort();
}

/**
 * What one run of an analysis asks many times, worked out once: the subjects of each set of named
 * atoms (their permissions arrays shared, so the engine and conditionHolds read each array's
 * attributes once), a pattern's sample paths and probe methods.
 */
class Asked {
  private readonly subjects = new Map<string, readonly PolicySubject[]>();
  private readonly arrays = new Map<string, readonly string[]>();
  private readonly samples = new Map<string, readonly string[]>();
  private readonly methods = new Map<string, readonly string[]>();
  readonly all: readonly string[];

  constructor(readonly catalog: ScopeCatalog | null) {
    this.all = this.array(allAtoms(catalog));
  }

  private array(perms: readonly string[]): readonly string[] {
    const key = perms.join(' ');
    let a = this.arrays.get(key);
    if (!a) this.arrays.set(key, (a = perms));
    return a;
  }

  // The attribute sets that matter for a rule: keys holding any subset of the permissions its
  // condition names (a handful, never every subset of every declared scope), no permission, or every
  // declared one; each with either role. Sessions carry a role, anonymous callers nothing.
  possibleSubjects(kind: SubjectKind, atoms: readonly string[]): readonly PolicySubject[] {
    const key = `${kind}\n${atoms.join(' ')}`;
    let out = this.subjects.get(key);
    if (out) return out;
    if (kind === 'anonymous') out = [{ kind, permissions: this.array([]), role: null }];
    else {
      const permSets: string[][] = [[]];
      if (kind === 'key') for (const p of atoms.slice(0, 8)) for (const s of [...permSets]) permSets.push([...s, p]);
      const arrays = permSets.map((s) => this.array(s));
      if (kind === 'key' && this.all.length > 0) arrays.push(this.all);
      out = arrays.flatMap((permissions) => (['user', 'admin'] as const).map((role) => ({ kind, permissions, role })));
    }
    this.subjects.set(key, out);
    return out;
  }

  /** In order, and lazily: an analysis mostly stops at the first subject it asks about. */
  *subjectsOf(rule: PolicyRule): Generator<PolicySubject> {
    const atoms = namedAtoms(rule, this.catalog);
    for (const k of kindsOf(rule)) yield* this.possibleSubjects(k, atoms);
  }

  samplePaths(pattern: string): readonly string[] {
    let out = this.samples.get(pattern);
    if (!out) this.samples.set(pattern, (out = samplePaths(pattern)));
    return out;
  }

  probeMethods(pattern: string): readonly string[] {
    let out = this.methods.get(pattern);
    if (!out) {
      const re = compileMethodPattern(pattern);
      this.methods.set(pattern, (out = PROBE_METHODS.filter((m) => re.test(m))));
    }
    return out;
  }
}

function allAtoms(catalog: ScopeCatalog | null): string[] {
  return catalog ? catalog.list.flatMap((s) => s.actions.map((a) => `${s.name}:${a}`)) : [];
}

function kindsOf(rule: PolicyRule): SubjectKind[] {
  return rule.subject === '*' ? [...SUBJECTS] : [rule.subject as SubjectKind];
}

// A subject's attribute words as a set, per permissions array and role: the array of every declared
// permission spells a thousand words, asked of every line.
const spelled = new WeakMap<readonly string[], Map<string | null, ReadonlySet<string>>>();
function conditionHolds(rule: PolicyRule, s: PolicySubject): boolean {
  let byRole = spelled.get(s.permissions);
  if (!byRole) spelled.set(s.permissions, (byRole = new Map()));
  let words = byRole.get(s.role);
  if (!words) byRole.set(s.role, (words = new Set(subjectAttributes(s.permissions, s.role).split(' '))));
  for (const t of termsOf(rule)) if (words.has(t.attribute) === t.negated) return false;
  return true;
}

// Concrete paths a pattern matches: its own segments filled in for a glob, the known routes and
// forwarded examples for a regular expression.
function globSamples(glob: string): string[] {
  const filled = glob.replace(/\/(\*|:[A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g, '/x-1');
  return filled.endsWith('/**') ? [filled.slice(0, -3) || '/', filled.slice(0, -2) + 'x-1'] : [filled];
}

let knownPaths: readonly string[] | undefined;

function samplePaths(pattern: string): string[] {
  const globs = pathGlobs(pattern);
  if (globs.length === 1) return globSamples(globs[0]!);
  // A regular expression, or a glob with exceptions: the known routes it covers, and the samples of
  // its globs (an exception's own samples show what lies just beside it).
  const matcher = compilePathPattern(pattern);
  knownPaths ??= [...gatewayRoutes.map((r) => examplePath(r.path)), ...forwardedExamples.map((f) => f.path)];
  const known = [...knownPaths, ...globs.flatMap(globSamples)];
  return [...new Set(known)].filter((p) => matcher.test(p));
}

/** An allow is unreachable when every request it matches is also matched by some deny. */
export function unreachableAllows(engine: PolicyEngine, catalog: ScopeCatalog | null): Finding[] {
  const findings: Finding[] = [];
  const asked = new Asked(catalog);
  for (const allow of engine.rules) {
    if (allow.effect !== 'allow') continue;
    const methods = asked.probeMethods(allow.method);
    const samples = asked.samplePaths(allow.path);
    // No request to ask with: nothing sampled, no finding.
    if (methods.length === 0 || samples.length === 0) continue;
    const deniers = new Map<string, PolicyRule>();
    let sampled = 0;
    let open = false;
    subjects: for (const s of asked.subjectsOf(allow)) {
      if (!conditionHolds(allow, s)) continue;
      for (const m of methods) {
        for (const p of samples) {
          const matched = engine.matchingRules(s, m, p);
          if (!matched.some((r) => r.id === allow.id)) continue;
          sampled += 1;
          let denied = false;
          for (const r of matched) if (r.effect === 'deny') {
            denied = true;
            deniers.set(r.id, r);
          }
          if (!denied) open = true;
        }
        if (open) break subjects;
      }
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
  const asked = new Asked(catalog);
  // The lines asking for each `S:A`, in file order, found in one pass over the lines (not one pass
  // per declared action): a line asks for what its condition names, `perm:S` for a one-action S.
  const askersOf = new Map<string, PolicyRule[]>();
  for (const rule of engine.rules) {
    if (rule.subject !== 'key' && rule.subject !== '*') continue;
    const atoms = new Set<string>();
    for (const t of termsOf(rule)) {
      const perm = permTerm(t.attribute);
      if (!perm) continue;
      const declared = catalog.get(perm.scope)?.actions;
      if (perm.action) atoms.add(`${perm.scope}:${perm.action}`);
      else if (declared?.length === 1) atoms.add(`${perm.scope}:${declared[0]}`);
    }
    for (const atom of atoms) {
      const list = askersOf.get(atom);
      if (list) list.push(rule);
      else askersOf.set(atom, [rule]);
    }
  }
  const everyRole = (['user', 'admin'] as const).map((role): PolicySubject => ({ kind: 'key', permissions: asked.all, role }));
  for (const scope of catalog.list) {
    for (const action of scope.actions) {
      const askers = askersOf.get(`${scope.name}:${action}`);
      if (!askers) continue;
      const refusers = new Map<string, PolicyRule>();
      let opens = false;
      probes: for (const asker of askers) {
        const methods = asked.probeMethods(asker.method);
        for (const subject of everyRole) for (const m of methods) for (const p of asked.samplePaths(asker.path)) {
          let denied = false;
          for (const r of engine.matchingRules(subject, m, p)) if (r.effect === 'deny' && r.id !== asker.id) {
            denied = true;
            refusers.set(r.id, r);
          }
          // One request the action opens is enough: no finding, whatever the other lines refuse.
          if (!denied) {
            opens = true;
            break probes;
          }
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

function someSubjectHolds(asked: Asked, rule: PolicyRule): boolean {
  for (const s of asked.subjectsOf(rule)) if (conditionHolds(rule, s)) return true;
  return false;
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
  const asked = new Asked(catalog);
  const all = asked.all;
  for (const rule of rules) {
    const terms = termsOf(rule);
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
    } else if (!someSubjectHolds(asked, rule)) {
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
