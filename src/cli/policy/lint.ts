// `keygate policy lint`: mistakes a policy file can hold that its tests might not reveal.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createPolicyEngineFromRules, type PolicyEngine, type PolicySubject, type SubjectKind } from '../../policy/engine.ts';
import { compileMethodPattern, compilePathPattern, parseCondition, pathGlobs, permTerm, PROBE_METHODS, SUBJECTS, subjectAttributes, termsHold, unknownAttributes } from '../../policy/patterns.ts';
import { parseScopes, scopeLines, ScopesError, type ScopeCatalog } from '../../policy/scopes.ts';
import { parsePolicy, type PolicyRule } from '../../policy/rules.ts';
import { examplePath, forwardedExamples, gatewayRoutes } from '../../policy/routes.ts';
import { CliError, defaultModelFor, defaultScopesFor, display, listFiles, policiesDir, resolveAll, type CliIo } from './common.ts';
import { routeFindings } from './route-coverage.ts';
import { kindOf, lintSuite, policiesBeside } from './lint-kinds.ts';

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
  const permSets: (readonly string[])[] = [[]];
  if (kind === 'key') {
    for (const p of atoms.slice(0, 8)) for (const s of [...permSets]) permSets.push([...s, p]);
    // The one array itself, so its attributes are spelled once for every line (conditionHolds).
    if (all.length > 0) permSets.push(all);
  }
  return permSets.flatMap((permissions) => (['user', 'admin'] as const).map((role) => ({ kind, permissions, role })));
}

function allAtoms(catalog: ScopeCatalog | null): string[] {
  return catalog ? catalog.list.flatMap((s) => s.actions.map((a) => `${s.name}:${a}`)) : [];
}

function kindsOf(rule: PolicyRule): SubjectKind[] {
  return rule.subject === '*' ? [...SUBJECTS] : [rule.subject as SubjectKind];
}

// Every declared permission is one subject per role, asked of each of thousands of lines: its
// attribute string is spelled once per permissions array.
const spelled = new WeakMap<readonly string[], Map<string | null, string>>();
function conditionHolds(rule: PolicyRule, s: PolicySubject): boolean {
  let byRole = spelled.get(s.permissions);
  if (!byRole) spelled.set(s.permissions, (byRole = new Map()));
  let attrs = byRole.get(s.role);
  if (attrs === undefined) byRole.set(s.role, (attrs = subjectAttributes(s.permissions, s.role)));
  return termsHold(parseCondition(rule.condition), attrs);
}

// Concrete paths a pattern matches: its own segments filled in for a glob, the known routes and
// forwarded examples for a regular expression.
function globSamples(glob: string): string[] {
  const filled = glob.replace(/\/(\*|:[A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g, '/x-1');
  return filled.endsWith('/**') ? [filled.slice(0, -3) || '/', filled.slice(0, -2) + 'x-1'] : [filled];
}

let knownPaths: string[] | undefined;

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
function unreachableAllows(engine: PolicyEngine, catalog: ScopeCatalog | null): Finding[] {
  const findings: Finding[] = [];
  const all = allAtoms(catalog);
  for (const allow of engine.rules.filter((r) => r.effect === 'allow')) {
    const methods = PROBE_METHODS.filter((m) => compileMethodPattern(allow.method).test(m));
    const subjects = kindsOf(allow).flatMap((k) => possibleSubjects(k, namedAtoms(allow, catalog), all)).filter((s) => conditionHolds(allow, s));
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
 * declared permission: holding it can never change an answer (issue 24: a `billing:write` whose
 * routes a "never for keys" line closes).
 */
function deadActions(engine: PolicyEngine, catalog: ScopeCatalog | null): Finding[] {
  if (!catalog) return [];
  const findings: Finding[] = [];
  const all = allAtoms(catalog);
  // The lines that ask for each `S:A`, found in one pass over the lines (not one per declared action).
  const askersOf = new Map<string, PolicyRule[]>();
  for (const rule of engine.rules) {
    if (rule.subject !== 'key' && rule.subject !== '*') continue;
    const atoms = new Set<string>();
    for (const t of parseCondition(rule.condition)) {
      const perm = permTerm(t.attribute);
      const only = perm && catalog.get(perm.scope)?.actions;
      if (perm?.action) atoms.add(`${perm.scope}:${perm.action}`);
      else if (perm && only?.length === 1) atoms.add(`${perm.scope}:${only[0]}`);
    }
    for (const atom of atoms) askersOf.set(atom, [...(askersOf.get(atom) ?? []), rule]);
  }
  for (const scope of catalog.list) {
    for (const action of scope.actions) {
      const askers = askersOf.get(`${scope.name}:${action}`) ?? [];
      if (askers.length === 0) continue;
      const refusers = new Map<string, PolicyRule>();
      let opens = false;
      for (const asker of askers) {
        const methods = PROBE_METHODS.filter((m) => compileMethodPattern(asker.method).test(m));
        for (const role of ['user', 'admin'] as const) for (const m of methods) for (const p of samplePaths(asker.path)) {
          if (opens) break;
          const denies = engine.matchingRules({ kind: 'key', permissions: all, role }, m, p).filter((r) => r.effect === 'deny' && r.id !== asker.id);
          if (denies.length === 0) opens = true;
          for (const d of denies) refusers.set(d.id, d);
        }
      }
      if (opens || refusers.size === 0) continue;
      const named = (rules: Iterable<PolicyRule>) => [...rules].map((r) => `line ${r.line} (${r.id})`).join(', ');
      findings.push({
        line: askers[0]!.line,
        message: `${scope.name}:${action} opens nothing: every request ${named(askers)} asks it for is refused to keys holding it by ${named(refusers.values())}`,
      });
    }
  }
  return findings;
}

function lineFindings(rules: readonly PolicyRule[], catalog: ScopeCatalog | null, scopesFile: string): Finding[] {
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
      if (perms.length) findings.push({ line: rule.line, message: `${rule.id}: unknown ${perms.join(', ')}: a scope or action ${scopesFile} does not declare (declared: ${all.map((a) => `perm:${a}`).join(', ') || 'none'})` });
      if (others.length) findings.push({ line: rule.line, message: `${rule.id}: unknown ${others.join(', ')} (known: perm:SCOPE, perm:SCOPE:ACTION, role:user, role:admin, via:mcp)` });
    } else if (!kindsOf(rule).some((k) => possibleSubjects(k, namedAtoms(rule, catalog), all).some((s) => conditionHolds(rule, s)))) {
      findings.push({ line: rule.line, message: `${rule.id}: condition "${rule.condition}" can never hold for subject ${rule.subject}` });
    }
    const shape = [rule.subject, [...terms.map((t) => (t.negated ? '!' : '') + t.attribute)].sort().join(' '), rule.method, rule.path, rule.effect].join('\n');
    const first = seen.get(shape);
    if (first === undefined) seen.set(shape, rule.line);
    else findings.push({ line: rule.line, message: `${rule.id}: duplicate of line ${first} (same subject, condition, method, path and effect)` });
  }
  return findings;
}

interface ScopesLint { catalog: ScopeCatalog | null; findings: string[] }

/** The scopes file itself: a mistake in it is an error of every policy read with it. */
async function lintScopes(io: CliIo, path: string): Promise<ScopesLint> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return { catalog: null, findings: [`${display(io, path)}: cannot read the scopes file`] };
  }
  try {
    return { catalog: parseScopes(text, display(io, path)), findings: [] };
  } catch (e) {
    if (!(e instanceof ScopesError)) throw e;
    return { catalog: null, findings: e.message.split('\n') };
  }
}

/** Scope names the lines' conditions mention. */
function namedScopes(rules: readonly PolicyRule[]): Set<string> {
  const names = new Set<string>();
  for (const r of rules) for (const t of parseCondition(r.condition)) {
    const perm = permTerm(t.attribute);
    if (perm) names.add(perm.scope);
  }
  return names;
}

/**
 * The findings of a policy text checked with a model text and a scopes catalog (null: the scopes
 * file itself is broken); `modelName` and `scopesName` name them in messages.
 */
export async function lintTexts(modelText: string, policyText: string, modelName: string, catalog: ScopeCatalog | null, scopesName: string, used = new Set<string>()): Promise<Finding[]> {
  const parsed = parsePolicy(policyText);
  for (const n of namedScopes(parsed.rules)) used.add(n);
  const findings: Finding[] = [...parsed.problems, ...lineFindings(parsed.rules, catalog, scopesName)];
  let engine: PolicyEngine;
  try {
    engine = await createPolicyEngineFromRules(modelText, parsed.rules, catalog ? { scopes: catalog } : {});
  } catch (e) {
    throw new CliError(`${modelName}: ${(e as Error).message}`);
  }
  findings.push(...unreachableAllows(engine, catalog), ...deadActions(engine, catalog));
  for (const f of routeFindings(engine)) findings.push({ line: f.line ?? 0, message: f.message });
  return findings.sort((a, b) => a.line - b.line);
}

async function lintFile(io: CliIo, policyPath: string, catalog: ScopeCatalog | null, scopesPath: string, used: Set<string>, modelPath = defaultModelFor(policyPath)): Promise<Finding[]> {
  let text: string;
  let modelText: string;
  try {
    text = await readFile(policyPath, 'utf8');
  } catch {
    throw new CliError(`${display(io, policyPath)}: cannot read the policy`);
  }
  try {
    modelText = await readFile(modelPath, 'utf8');
  } catch {
    throw new CliError(`${display(io, modelPath)}: cannot read the model the policy is checked with`);
  }
  return lintTexts(modelText, text, display(io, modelPath), catalog, display(io, scopesPath), used);
}

export async function lintCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { scopes: { type: 'string' } } });
  // Run by `keygate`, the configured files are the default; called bare, every file in policies/.
  const configured = io.policy && positionals.length === 0 ? io.policy : undefined;
  let total = 0;
  // Named files are checked as what they are: a scopes file with the policies beside it, a suite by loading it.
  const files: string[] = [];
  let others = 0;
  let scopesFile = values.scopes ? resolveAll(io, [values.scopes])[0]! : undefined;
  for (const f of resolveAll(io, positionals)) {
    const kind = await kindOf(io, f);
    if (kind === 'policy') files.push(f);
    else if (kind === 'suite') {
      total += await lintSuite(io, f);
      others += 1;
    } else {
      scopesFile = f;
      others += 1;
      files.push(...(await policiesBeside(f)).filter((p) => !files.includes(p)));
    }
  }
  if (positionals.length === 0) files.push(...(configured ? [configured.file] : await listFiles(policiesDir(io.cwd), ['.csv'])));
  if (files.length === 0 && positionals.length === 0) throw new CliError('no policy files found (policies/*.csv)');
  let warnings = 0;
  // Each scopes file once, with the scopes every policy read with it names between them.
  const scopeFiles = new Map<string, ScopesLint & { used: Set<string> }>();
  for (const f of files) {
    const scopesPath = scopesFile ?? configured?.scopes ?? defaultScopesFor(f);
    let scopes = scopeFiles.get(scopesPath);
    if (!scopes) {
      scopes = { ...(await lintScopes(io, scopesPath)), used: new Set<string>() };
      scopeFiles.set(scopesPath, scopes);
      total += scopes.findings.length;
      for (const x of scopes.findings) io.stdout(`${x}\n`);
    }
    const findings = await lintFile(io, f, scopes.catalog, scopesPath, scopes.used, configured?.model);
    total += findings.length;
    // Line 0 marks a finding about the file as a whole (a route no line decides).
    for (const x of findings) io.stdout(`${display(io, f)}${x.line > 0 ? `:${x.line}` : ''}: ${x.message}\n`);
  }
  // A scopes file with no policy beside it is still checked on its own.
  if (scopesFile && !scopeFiles.has(scopesFile)) {
    const alone = await lintScopes(io, scopesFile);
    total += alone.findings.length;
    for (const x of alone.findings) io.stdout(`${x}\n`);
  }
  for (const [path, { catalog, used }] of scopeFiles) {
    if (!catalog) continue;
    const lines = scopeLines(catalog.text);
    for (const s of catalog.list.filter((x) => !used.has(x.name))) {
      warnings += 1;
      io.stdout(`${display(io, path)}:${lines.get(s.name) ?? 1}: warning: scope ${s.name} is declared but no policy line names it (perm:${s.name}), so holding it changes nothing\n`);
    }
  }
  io.stdout(`${total} finding${total === 1 ? '' : 's'}${warnings ? `, ${warnings} warning${warnings === 1 ? '' : 's'}` : ''} in ${files.length + others} file${files.length + others === 1 ? '' : 's'}\n`);
  return total === 0 ? 0 : 1;
}
