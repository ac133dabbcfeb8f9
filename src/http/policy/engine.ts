// Decides (subject, method, path) against the access matrix. Used by the HTTP middleware, the MCP
// tool forwarder and the policy CLI alike, so none of them has its own idea of who may do what.
import { readFile } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';
import { buildEnforcer, PolicyModelError, type BuiltEnforcer, type RequestValues } from './enforcer.ts';
import { KNOWN_PERMISSIONS, subjectAttributes } from './patterns.ts';
import { checkRules, describeProblems, parsePolicy, type PolicyProblem, type PolicyRule } from './rules.ts';

export type SubjectKind = 'session' | 'key' | 'anonymous';

export interface PolicySubject {
  kind: SubjectKind;
  permissions: readonly string[];
  role: 'user' | 'admin' | null;
  /** `mcp` when an MCP tool asks on the caller's behalf: the request then carries `via:mcp`. */
  channel?: 'http' | 'mcp';
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
}

export interface EngineOptions {
  /** Most decisions remembered; paths are caller-controlled, so the memo must stay bounded. */
  cacheSize?: number;
}

export class PolicyLoadError extends Error {
  override name = 'PolicyLoadError';
}

const DEFAULT_CACHE_SIZE = 10_000;

// Smallest sets first, so the answer names the least a key would need.
const PERMISSION_SETS: readonly (readonly string[])[] = (() => {
  const sets: string[][] = [[]];
  for (const p of KNOWN_PERMISSIONS) for (const s of [...sets]) sets.push([...s, p]);
  return sets.filter((s) => s.length > 0).sort((a, b) => a.length - b.length);
})();

function requestOf(subject: PolicySubject, method: string, path: string): RequestValues {
  const attrs = subjectAttributes(subject.permissions, subject.role);
  return [subject.kind, subject.channel === 'mcp' ? `${attrs} via:mcp`.trim() : attrs, method, path];
}

function engineFrom(enforcer: BuiltEnforcer, rules: readonly PolicyRule[], options: EngineOptions): PolicyEngine {
  const byId = new Map(rules.map((r) => [r.id, r]));
  const memo = new LRUCache<string, Decision>({ max: options.cacheSize ?? DEFAULT_CACHE_SIZE });

  const evaluate = (request: RequestValues): { allowed: boolean; ruleId: string | null } => {
    const [allowed, row] = enforcer.enforceEx(request);
    return { allowed, ruleId: row.length > 0 ? (row[row.length - 1] ?? null) : null };
  };

  // Asked of the policy itself rather than of a hand-kept table, so a new scoped router needs no
  // code change for the 403 to name its permission.
  const missingPermission = (subject: PolicySubject, method: string, path: string): string | null => {
    const held = new Set(subject.permissions);
    for (const extra of PERMISSION_SETS) {
      if (extra.some((p) => held.has(p))) continue;
      if (evaluate(requestOf({ ...subject, permissions: [...subject.permissions, ...extra] }, method, path)).allowed) return extra.join(',');
    }
    return null;
  };

  return {
    rules,
    rule: (id) => byId.get(id),
    decide(subject, method, path) {
      const request = requestOf(subject, method, path);
      // The request values are exactly what casbin sees (permissions sorted and sanitised), so two
      // subjects with one key always get the same answer.
      const key = request.join('\n');
      const hit = memo.get(key);
      if (hit) return hit;
      const { allowed, ruleId } = evaluate(request);
      const required = !allowed && subject.kind === 'key' ? missingPermission(subject, method, path) : null;
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
      const ids = new Set(enforcer.matchingIds(requestOf(subject, method, path)));
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
