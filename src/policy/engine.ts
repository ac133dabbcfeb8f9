// Decides (subject, method, path) against the access matrix. Used by the HTTP middleware, the MCP
// tool forwarder and the policy CLI alike, so none of them has its own idea of who may do what.
import { readFile } from 'node:fs/promises';
import { compilePolicy, conditionHolds, verdict, type Attributes, type CompiledLine } from './compiled.ts';
import { buildEnforcer, PolicyModelError, type BuiltEnforcer } from './enforcer.ts';
import { referenceOf } from './reference.ts';
import { emptyCatalog, type ScopeCatalog } from './scopes.ts';
import { atomsOfNames, missingPermission, permWords } from './search.ts';
import { checkRules, describeProblems, parsePolicy, type PolicyProblem, type PolicyRule } from './rules.ts';

export type SubjectKind = 'session' | 'key' | 'anonymous';

export interface PolicySubject {
  kind: SubjectKind;
  /** Held permissions as `S` (its `access` action) or `S:A`: `['ai', 'reports:read']`. */
  permissions: readonly string[];
  role: 'user' | 'admin' | null;
  /** `mcp` when an MCP tool asks on the caller's behalf: the request then carries `via:mcp`. */
  channel?: 'http' | 'mcp';
  /** An OAuth access token rather than a key: the request then carries `via:oauth`. */
  oauth?: boolean;
}

export interface Decision {
  allowed: boolean;
  /** Id of the line that decided: the first matching deny, else the last matching allow; null when no line matched (default deny). */
  ruleId: string | null;
  /** For a refused key: the permission (or comma-joined permissions) whose addition would allow it. */
  requiredPermission: string | null;
  /** For a refused key: no permission would allow it; only a signed-in session can do this. */
  neverForKeys: boolean;
}

export interface PolicyEngine {
  /** The returned object is frozen and may be shared between callers. */
  decide(subject: PolicySubject, method: string, path: string): Decision;
  /** Every line whose matcher holds for the request, in file order, whatever the outcome. */
  matchingRules(subject: PolicySubject, method: string, path: string): PolicyRule[];
  rule(id: string): PolicyRule | undefined;
  readonly rules: readonly PolicyRule[];
  /** The scopes a key may hold, read with the policy and swapped in with it. */
  readonly scopes: ScopeCatalog;
  /**
   * The same two questions asked of node-casbin's enforcer over the same lines: what the compiled
   * form answering `decide` and `matchingRules` is checked against. Slow (it walks every line).
   */
  readonly reference: Pick<PolicyEngine, 'decide' | 'matchingRules'>;
}

/** The engine in force. A reload builds a new engine and swaps it here in one assignment. */
export interface PolicyHolder { current: PolicyEngine }

export interface EngineOptions {
  /**
   * The declared scopes. With them, a held permission they do not declare opens nothing and names
   * are spelled by the file; without them (a unit test's handful of lines) every name counts.
   */
  scopes?: ScopeCatalog;
}

export class PolicyLoadError extends Error {
  override name = 'PolicyLoadError';
}

// A subject's permissions array is usually one a key's record holds for every request of that key
// (refusal.ts keeps it), so its sorted spelling is made once per array.
const heldKeys = new WeakMap<readonly string[], string>();
function joinedHeld(permissions: readonly string[]): string {
  let held = heldKeys.get(permissions);
  if (held === undefined) heldKeys.set(permissions, (held = [...permissions].sort().join(',')));
  return held;
}

/**
 * A request as one string: the subject as asked (permissions in any order), the method and the
 * path. The observer keys the pair of decisions it counts on it, so a caller deciding one request
 * under two engines builds it once.
 */
export function decisionKey(subject: PolicySubject, method: string, path: string): string {
  const held = subject.kind !== 'key' ? '' : subject.permissions.length > 1 ? joinedHeld(subject.permissions) : (subject.permissions[0] ?? '');
  return `${subject.kind}\n${subject.role}\n${subject.channel ?? 'http'}${subject.oauth ? '+oauth' : ''}\n${held}\n${method}\n${path}`;
}

interface Held { atoms: readonly string[]; set: ReadonlySet<string>; perms: ReadonlySet<string> }

const SAFE_ROLE = /^[A-Za-z0-9_-]+$/;
const NO_ONE: Held = { atoms: [], set: new Set(), perms: new Set() };

function engineFrom(enforcer: BuiltEnforcer, rules: readonly PolicyRule[], options: EngineOptions): PolicyEngine {
  const byId = new Map(rules.map((r) => [r.id, r]));
  const catalog = options.scopes ?? null;
  const reference = referenceOf(enforcer, rules, catalog);
  const compiled = compilePolicy(rules, (scope) => (catalog ? catalog.get(scope)?.actions ?? [] : null));
  // Decisions that depend only on the deciding line (all but a key's refusal that names a
  // permission) are made once per line and shared. A line either allows or refuses, so the
  // deciding line and whether a key was refused tell them apart.
  const fixed = [new Map<CompiledLine | null, Decision>(), new Map<CompiledLine | null, Decision>()] as const;
  const fixedOf = (line: CompiledLine | null, allowed: boolean, refusedKey: boolean): Decision => {
    const at = fixed[refusedKey ? 1 : 0];
    let d = at.get(line);
    if (!d) at.set(line, (d = Object.freeze({ allowed, ruleId: line?.rule.id ?? null, requiredPermission: null, neverForKeys: refusedKey })));
    return d;
  };

  // A key's permissions array lives as long as its cached record: its atoms and attribute words are
  // worked out once per array, in a map no other caller can evict them from.
  const heldOf = new WeakMap<readonly string[], Held>();
  const held = (subject: PolicySubject): Held => {
    if (subject.kind !== 'key') return NO_ONE;
    let h = heldOf.get(subject.permissions);
    if (!h) {
      const atoms = atomsOfNames(catalog, subject.permissions);
      heldOf.set(subject.permissions, (h = { atoms, set: new Set(atoms), perms: new Set(permWords(atoms)) }));
    }
    return h;
  };
  const attributesOf = (subject: PolicySubject, perms: ReadonlySet<string>): Attributes => ({
    perms,
    role: subject.role && SAFE_ROLE.test(subject.role) ? `role:${subject.role}` : null,
    mcp: subject.channel === 'mcp',
    oauth: subject.oauth === true,
  });

  const decide = (subject: PolicySubject, method: string, path: string): Decision => {
    if (!enforcer.standard) return reference.decide(subject, method, path);
    const h = held(subject);
    const attrs = attributesOf(subject, h.perms);
    const lines = compiled.candidates(subject.kind, method, path);
    const { allowed, line } = verdict(lines, attrs);
    if (allowed || subject.kind !== 'key') return fixedOf(line, allowed, false);
    const asks = new Set<string>();
    for (const l of lines) for (const a of l.asks) if (!h.set.has(a)) asks.add(a);
    if (asks.size === 0) return fixedOf(line, false, true);
    const needs = missingPermission(catalog, asks, (extra) => {
      const perms = new Set(h.perms);
      for (const w of permWords(extra)) perms.add(w);
      return verdict(lines, { ...attrs, perms }).allowed;
    });
    if (needs === null) return fixedOf(line, false, true);
    return Object.freeze({ allowed: false, ruleId: line?.rule.id ?? null, requiredPermission: needs, neverForKeys: false });
  };

  return {
    rules,
    scopes: catalog ?? emptyCatalog(),
    reference,
    rule: (id) => byId.get(id),
    decide,
    matchingRules(subject, method, path) {
      if (!enforcer.standard) return reference.matchingRules(subject, method, path);
      const attrs = attributesOf(subject, held(subject).perms);
      return compiled.candidates(subject.kind, method, path).filter((l) => conditionHolds(l, attrs)).sort((x, y) => x.index - y.index).map((l) => l.rule);
    },
  };
}

function throwIfMalformed(problems: readonly PolicyProblem[], source: string): void {
  // A half-loaded matrix would quietly allow what a refused line was meant to stop.
  if (problems.length > 0) throw new PolicyLoadError(`the policy has malformed lines:\n${describeProblems(problems, source)}`);
}

/** Builds an engine from already-parsed lines (the database's rows, or a test's handful). */
export async function createPolicyEngineFromRules(
  modelText: string,
  rules: readonly PolicyRule[],
  options: EngineOptions = {},
  source = 'policy',
): Promise<PolicyEngine> {
  throwIfMalformed(checkRules(rules), source);
  return engineFrom(await buildEnforcer(modelText, rules), rules, options);
}

export async function createPolicyEngine(modelText: string, policyCsvText: string, options: EngineOptions = {}): Promise<PolicyEngine> {
  const parsed = parsePolicy(policyCsvText);
  throwIfMalformed(parsed.problems, 'policy');
  return createPolicyEngineFromRules(modelText, parsed.rules, options);
}

export async function loadPolicyEngine(modelPath: string, policyPath: string, options: EngineOptions = {}): Promise<PolicyEngine> {
  const [modelText, policyText] = await Promise.all([readFile(modelPath, 'utf8'), readFile(policyPath, 'utf8')]);
  const parsed = parsePolicy(policyText);
  throwIfMalformed(parsed.problems, policyPath);
  try {
    return await createPolicyEngineFromRules(modelText, parsed.rules, options, policyPath);
  } catch (e) {
    if (e instanceof PolicyModelError) throw new PolicyModelError(`${modelPath}: ${e.message}`);
    throw e;
  }
}

export { PolicyModelError } from './enforcer.ts';
export { formatRule, parsePolicy, parsePolicyRows, readPolicyFile, ruleToCsvRow, type PolicyRule, type PolicyProblem } from './rules.ts';
