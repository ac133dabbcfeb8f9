// Decides (subject, method, path) against the access matrix. Used by the HTTP middleware, the MCP
// tool forwarder and the policy CLI alike, so none of them has its own idea of who may do what.
import { readFile } from 'node:fs/promises';
import { compiledDecisions, type Answers } from './decisions.ts';
import { buildEnforcer, isStandardModel, PolicyModelError, type BuiltEnforcer } from './enforcer.ts';
import { referenceOf } from './reference.ts';
import { emptyCatalog, type ScopeCatalog } from './scopes.ts';
import { checkRules, describeProblems, parsePolicy, type PolicyProblem, type PolicyRule } from './rules.ts';

export type { Decision, PolicyEngine, PolicyHolder, PolicySubject, SubjectKind } from './types.ts';
import type { PolicyEngine, PolicySubject } from './types.ts';

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
 * path. Nothing on the request path keys on it (a memo of paths would miss on real traffic); a test
 * that asks node-casbin's enforcer the same question many times keys its own memo on it.
 */
export function decisionKey(subject: PolicySubject, method: string, path: string): string {
  const held = subject.kind !== 'key' ? ''
    : subject.permissions.length > 1 ? joinedHeld(subject.permissions) : (subject.permissions[0] ?? '');
  return `${subject.kind}\n${subject.role}\n${subject.channel ?? 'http'}${subject.oauth ? '+oauth' : ''}\n${held}\n${method}\n${path}`;
}

function engineFrom(modelText: string, enforcer: BuiltEnforcer | null, rules: readonly PolicyRule[], options: EngineOptions): PolicyEngine {
  const byId = new Map(rules.map((r) => [r.id, r]));
  const catalog = options.scopes ?? null;
  // Another matcher than the shipped one means something the compiled form does not implement:
  // the enforcer, built already, answers.
  const eager = enforcer ? referenceOf(enforcer, rules, catalog) : null;
  let reference: Promise<Answers> | undefined = eager ? Promise.resolve(eager) : undefined;
  const answers = eager ?? compiledDecisions(rules, catalog);
  return {
    rules,
    scopes: catalog ?? emptyCatalog(),
    reference: () => (reference ??= buildEnforcer(modelText, rules).then((built) => referenceOf(built, rules, catalog))),
    rule: (id) => byId.get(id),
    decide: answers.decide,
    matchingRules: answers.matchingRules,
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
  const enforcer = isStandardModel(modelText) ? null : await buildEnforcer(modelText, rules);
  return engineFrom(modelText, enforcer, rules, options);
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
