// Decides (subject, method, path) against the access matrix. Used by the HTTP middleware, the MCP
// tool forwarder and the policy CLI alike, so none of them has its own idea of who may do what.
import { readFile } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';
import { buildEnforcer, PolicyModelError, type BuiltEnforcer, type RequestValues } from './enforcer.ts';
import { parseCondition, permTerm, subjectAttributes, type ConditionTerm } from './patterns.ts';
import { emptyCatalog, heldAtoms, permissionsFromNames, spell, type ScopeCatalog } from './scopes.ts';
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
  /** Memoized; the returned object is frozen and shared between callers. */
  decide(subject: PolicySubject, method: string, path: string): Decision;
  /** Every line whose matcher holds for the request, in file order, whatever the outcome. */
  matchingRules(subject: PolicySubject, method: string, path: string): PolicyRule[];
  rule(id: string): PolicyRule | undefined;
  readonly rules: readonly PolicyRule[];
  /** The scopes a key may hold, read with the policy and swapped in with it. */
  readonly scopes: ScopeCatalog;
}

/** The engine in force. A reload builds a new engine and swaps it here in one assignment. */
export interface PolicyHolder { current: PolicyEngine }

export interface EngineOptions {
  /** Most decisions remembered; paths are caller-controlled, so the memo must stay bounded. */
  cacheSize?: number;
  /**
   * The declared scopes. With them, a held permission they do not declare opens nothing and names
   * are spelled by the file; without them (a unit test's handful of lines) every name counts.
   */
  scopes?: ScopeCatalog;
}

export class PolicyLoadError extends Error {
  override name = 'PolicyLoadError';
}

const DEFAULT_CACHE_SIZE = 10_000;

// Bounds the search for what a refused key lacks: sets of at most this many permissions, tried
// smallest first, from the handful the matching lines name (never every subset of every scope).
const MAX_SET = 4;
const MAX_TRIES = 256;

function* combinations<T>(items: readonly T[], size: number, from = 0): Generator<T[]> {
  if (size === 0) {
    yield [];
    return;
  }
  for (let i = from; i <= items.length - size; i++) for (const rest of combinations(items, size - 1, i + 1)) yield [items[i]!, ...rest];
}

function requestOf(subject: PolicySubject, atoms: readonly string[], method: string, path: string): RequestValues {
  const attrs = [subjectAttributes(atoms, subject.role), subject.channel === 'mcp' ? 'via:mcp' : '', subject.oauth ? 'via:oauth' : ''];
  return [subject.kind, attrs.filter(Boolean).join(' '), method, path];
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
 * What a memoized decision is keyed on: the subject as asked (permissions in any order), before its
 * permissions are read against the scopes, so a hit costs one string join however many scopes are
 * declared. The same for every engine, so a caller deciding one request under two engines (the shadow
 * observer) builds it once.
 */
export function decisionKey(subject: PolicySubject, method: string, path: string): string {
  const held = subject.kind !== 'key' ? '' : subject.permissions.length > 1 ? joinedHeld(subject.permissions) : (subject.permissions[0] ?? '');
  return `${subject.kind}\n${subject.role}\n${subject.channel ?? 'http'}${subject.oauth ? '+oauth' : ''}\n${held}\n${method}\n${path}`;
}

function engineFrom(enforcer: BuiltEnforcer, rules: readonly PolicyRule[], options: EngineOptions): PolicyEngine {
  const byId = new Map(rules.map((r) => [r.id, r]));
  const memo = new LRUCache<string, Decision>({ max: options.cacheSize ?? DEFAULT_CACHE_SIZE });
  const catalog = options.scopes ?? null;
  const terms = new Map<string, ConditionTerm[]>(rules.map((r) => [r.id, parseCondition(r.condition)]));

  const atomsOf = (names: readonly string[]): string[] => {
    if (catalog) return heldAtoms(catalog, permissionsFromNames(catalog, names).permissions);
    return [...new Set(names.map((n) => (n.includes(':') ? n : `${n}:access`)))].sort();
  };
  const actionsOf = (scope: string): readonly string[] => (catalog ? catalog.get(scope)?.actions ?? [] : ['access']);

  const evaluate = (request: RequestValues): { allowed: boolean; ruleId: string | null } => {
    const [allowed, row] = enforcer.enforceEx(request);
    return { allowed, ruleId: row.length > 0 ? (row[row.length - 1] ?? null) : null };
  };

  // Asked of the policy itself rather than of a hand-kept table, so a new scoped router needs no
  // code change for the 403 to name its permission. Only a permission some matching line's
  // condition names can change the answer: one an allow line asks for, or one a deny line asks
  // to be missing.
  const missingPermission = (subject: PolicySubject, atoms: readonly string[], method: string, path: string): string | null => {
    const held = new Set(atoms);
    const candidates = new Set<string>();
    for (const id of enforcer.candidateIds(requestOf(subject, atoms, method, path))) {
      const rule = byId.get(id);
      for (const t of (rule && terms.get(id)) ?? []) {
        const perm = permTerm(t.attribute);
        if (!perm || (rule!.effect === 'allow') === t.negated) continue;
        const actions = perm.action ? (actionsOf(perm.scope).includes(perm.action) || !catalog ? [perm.action] : []) : actionsOf(perm.scope);
        for (const a of actions) if (!held.has(`${perm.scope}:${a}`)) candidates.add(`${perm.scope}:${a}`);
      }
    }
    const list = [...candidates].sort();
    let tries = 0;
    for (let size = 1; size <= Math.min(MAX_SET, list.length); size++) {
      for (const extra of combinations(list, size)) {
        if (++tries > MAX_TRIES) return null;
        if (evaluate(requestOf(subject, [...atoms, ...extra], method, path)).allowed) {
          return extra.map((atom) => spell(catalog, ...(atom.split(':') as [string, string]))).join(',');
        }
      }
    }
    return null;
  };

  return {
    rules,
    scopes: catalog ?? emptyCatalog(),
    rule: (id) => byId.get(id),
    decide(subject, method, path) {
      // The memo lives and dies with this engine, so a reload with other scopes never answers from it.
      const key = decisionKey(subject, method, path);
      const hit = memo.get(key);
      if (hit) return hit;
      const atoms = subject.kind === 'key' ? atomsOf(subject.permissions) : [];
      const request = requestOf(subject, atoms, method, path);
      const { allowed, ruleId } = evaluate(request);
      const required = !allowed && subject.kind === 'key' ? missingPermission(subject, atoms, method, path) : null;
      const decision = Object.freeze({
        allowed,
        ruleId,
        requiredPermission: required,
        neverForKeys: !allowed && subject.kind === 'key' && required === null,
      });
      memo.set(key, decision);
      return decision;
    },
    matchingRules(subject, method, path) {
      const ids = new Set(enforcer.matchingIds(requestOf(subject, subject.kind === 'key' ? atomsOf(subject.permissions) : [], method, path)));
      return rules.filter((r) => ids.has(r.id));
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
