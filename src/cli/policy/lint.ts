// `keygate policy lint`: mistakes a policy file can hold that its tests might not reveal.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createPolicyEngineFromRules, type PolicyEngine, type PolicySubject, type SubjectKind } from '../../http/policy/engine.ts';
import { compileMethodPattern, compilePathPattern, KNOWN_PERMISSIONS, parseCondition, PROBE_METHODS, SUBJECTS, subjectAttributes, termsHold, unknownAttributes } from '../../http/policy/patterns.ts';
import { parsePolicy, type PolicyRule } from '../../http/policy/rules.ts';
import { examplePath, forwardedExamples, gatewayRoutes } from '../../http/policy/routes.ts';
import { CliError, defaultModelFor, display, listFiles, policiesDir, resolveAll, type CliIo } from './common.ts';
import { routeFindings } from './route-coverage.ts';

interface Finding {
  line: number;
  message: string;
}

// Every attribute set a caller of each kind can carry: keys have permissions and their owner's
// role, sessions a role, anonymous callers nothing.
function possibleSubjects(kind: SubjectKind): PolicySubject[] {
  if (kind === 'anonymous') return [{ kind, permissions: [], role: null }];
  const permSets: string[][] = [[]];
  if (kind === 'key') for (const p of KNOWN_PERMISSIONS) for (const s of [...permSets]) permSets.push([...s, p]);
  return permSets.flatMap((permissions) => (['user', 'admin'] as const).map((role) => ({ kind, permissions, role })));
}

function kindsOf(rule: PolicyRule): SubjectKind[] {
  return rule.subject === '*' ? [...SUBJECTS] : [rule.subject as SubjectKind];
}

function conditionHolds(rule: PolicyRule, s: PolicySubject): boolean {
  return termsHold(parseCondition(rule.condition), subjectAttributes(s.permissions, s.role));
}

// Concrete paths a pattern matches: its own segments filled in for a glob, the known routes and
// forwarded examples for a regular expression.
function samplePaths(pattern: string): string[] {
  if (pattern.startsWith('^')) {
    const re = compilePathPattern(pattern);
    return [...gatewayRoutes.map((r) => examplePath(r.path)), ...forwardedExamples.map((f) => f.path)].filter((p) => re.test(p));
  }
  const filled = pattern.replace(/\/(\*|:[A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g, '/x-1');
  return filled.endsWith('/**') ? [filled.slice(0, -3) || '/', filled.slice(0, -2) + 'x-1'] : [filled];
}

/** An allow is unreachable when every request it matches is also matched by some deny. */
function unreachableAllows(engine: PolicyEngine): Finding[] {
  const findings: Finding[] = [];
  for (const allow of engine.rules.filter((r) => r.effect === 'allow')) {
    const methods = PROBE_METHODS.filter((m) => compileMethodPattern(allow.method).test(m));
    const subjects = kindsOf(allow).flatMap(possibleSubjects).filter((s) => conditionHolds(allow, s));
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

function lineFindings(rules: readonly PolicyRule[]): Finding[] {
  const findings: Finding[] = [];
  const seen = new Map<string, number>();
  for (const rule of rules) {
    const terms = parseCondition(rule.condition);
    const unknown = unknownAttributes(terms);
    if (unknown.length > 0) {
      findings.push({ line: rule.line, message: `${rule.id}: unknown ${unknown.join(', ')} (known: ${KNOWN_PERMISSIONS.map((p) => `perm:${p}`).join(', ')}, role:user, role:admin)` });
    } else if (!kindsOf(rule).some((k) => possibleSubjects(k).some((s) => conditionHolds(rule, s)))) {
      findings.push({ line: rule.line, message: `${rule.id}: condition "${rule.condition}" can never hold for subject ${rule.subject}` });
    }
    const shape = [rule.subject, [...terms.map((t) => (t.negated ? '!' : '') + t.attribute)].sort().join(' '), rule.method, rule.path, rule.effect].join('\n');
    const first = seen.get(shape);
    if (first === undefined) seen.set(shape, rule.line);
    else findings.push({ line: rule.line, message: `${rule.id}: duplicate of line ${first} (same subject, condition, method, path and effect)` });
  }
  return findings;
}

async function lintFile(io: CliIo, policyPath: string): Promise<Finding[]> {
  const file = display(io, policyPath);
  let text: string;
  let modelText: string;
  try {
    text = await readFile(policyPath, 'utf8');
  } catch {
    throw new CliError(`${file}: cannot read the policy`);
  }
  const parsed = parsePolicy(text);
  const findings: Finding[] = [...parsed.problems, ...lineFindings(parsed.rules)];
  const modelPath = defaultModelFor(policyPath);
  try {
    modelText = await readFile(modelPath, 'utf8');
  } catch {
    throw new CliError(`${display(io, modelPath)}: cannot read the model the policy is checked with`);
  }
  let engine: PolicyEngine;
  try {
    engine = await createPolicyEngineFromRules(modelText, parsed.rules);
  } catch (e) {
    throw new CliError(`${display(io, modelPath)}: ${(e as Error).message}`);
  }
  findings.push(...unreachableAllows(engine));
  for (const f of routeFindings(engine)) findings.push({ line: f.line ?? 0, message: f.message });
  return findings.sort((a, b) => a.line - b.line);
}

export async function lintCommand(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const files = positionals.length > 0 ? resolveAll(io, positionals) : await listFiles(policiesDir(io.cwd), ['.csv']);
  if (files.length === 0) throw new CliError('no policy files found (policies/*.csv)');
  let total = 0;
  for (const f of files) {
    const findings = await lintFile(io, f);
    total += findings.length;
    // Line 0 marks a finding about the file as a whole (a route no line decides).
    for (const x of findings) io.stdout(`${display(io, f)}${x.line > 0 ? `:${x.line}` : ''}: ${x.message}\n`);
  }
  io.stdout(`${total} finding${total === 1 ? '' : 's'} in ${files.length} file${files.length === 1 ? '' : 's'}\n`);
  return total === 0 ? 0 : 1;
}
