// The one place a casbin enforcer is built, so every caller (server, reload, CLI, tests) registers
// the same matcher functions; without them casbin fails with "matcher result should only be of
// type boolean…", which names neither the function nor the line.
import { createRequire } from 'node:module';
import type * as Casbin from 'casbin';
import { matcherFunctions } from './patterns.ts';
import { ruleToCsvRow, type PolicyRule } from './rules.ts';

// The CommonJS build decides about twice as fast as the ESM one, whose transpiled object-spread
// helpers dominate each evaluation.
const casbin = createRequire(import.meta.url)('casbin') as typeof Casbin;

export type RequestValues = [subject: string, attributes: string, method: string, path: string];

export interface BuiltEnforcer {
  /** casbin's answer and the policy row (without ptype) that decided it, or [] when none did. */
  enforceEx(request: RequestValues): [boolean, string[]];
  /** Ids of every line whose matcher holds for the request, whatever the effect. */
  matchingIds(request: RequestValues): string[];
  /**
   * Ids of every line that would match the request with some attributes: the matcher with its
   * attribute test taken as true. Their conditions name the only permissions that can change the
   * answer, so a refusal's `requiredPermission` is searched among those, not over every scope.
   */
  candidateIds(request: RequestValues): string[];
  /**
   * The model's matcher and effect are the shipped ones (whitespace aside), whose meaning the
   * compiled form implements. Another matcher is answered by this enforcer alone.
   */
  readonly standard: boolean;
}

export class PolicyModelError extends Error {
  override name = 'PolicyModelError';
}

// The engine reads rows by position, so the model may change its matcher but not these shapes.
const REQUEST_TOKENS = ['r_sub', 'r_attrs', 'r_act', 'r_obj'];
const POLICY_TOKENS = ['p_sub', 'p_cond', 'p_act', 'p_obj', 'p_eft', 'p_id'];

const STANDARD_MATCHER = '(p.sub=="*"||r.sub==p.sub)&&attrMatch(r.attrs,p.cond)&&regexMatch(r.act,p.act)&&pathMatch(r.obj,p.obj)';
const STANDARD_EFFECT = 'some(where(p.eft==allow))&&!some(where(p.eft==deny))';
// casbin rewrites `p.sub` to `p_sub` when it loads the model.
const squeezed = (s: string | undefined) => (s ?? '').replace(/\s+/g, '').replace(/\b([rp])_(?=[a-z])/g, '$1.');

function checkShape(model: Casbin.Model): string {
  const tokens = (sec: string) => model.model.get(sec)?.get(sec)?.tokens ?? [];
  const same = (a: string[], b: string[]) => a.length === b.length && a.every((t, i) => t === b[i]);
  if (!same(tokens('r'), REQUEST_TOKENS)) throw new PolicyModelError('[request_definition] must be: r = sub, attrs, act, obj');
  if (!same(tokens('p'), POLICY_TOKENS)) throw new PolicyModelError('[policy_definition] must be: p = sub, cond, act, obj, eft, id');
  if (model.model.get('g')) {
    throw new PolicyModelError('[role_definition] is not supported: subjects are caller kinds, attributes are conditions');
  }
  const matcher = model.model.get('m')?.get('m')?.value;
  if (!matcher) throw new PolicyModelError('[matchers] must define m');
  return matcher;
}

function parseModel(modelText: string): { model: Casbin.Model; matcher: string; standard: boolean } {
  let model: Casbin.Model;
  try {
    model = casbin.newModelFromString(modelText);
  } catch (e) {
    throw new PolicyModelError(`model: ${(e as Error).message}`);
  }
  const matcher = checkShape(model);
  const effect = model.model.get('e')?.get('e')?.value;
  return { model, matcher, standard: squeezed(matcher) === STANDARD_MATCHER && squeezed(effect) === STANDARD_EFFECT };
}

/**
 * Whether the model's matcher and effect are the shipped ones, whose meaning the compiled form
 * implements; throws PolicyModelError as buildEnforcer would for a model of another shape.
 */
export function isStandardModel(modelText: string): boolean {
  return parseModel(modelText).standard;
}

export async function buildEnforcer(modelText: string, rules: readonly PolicyRule[]): Promise<BuiltEnforcer> {
  const { model, matcher, standard } = parseModel(modelText);
  // A second matcher that records each line it holds for and then answers false, so that no line
  // ends the evaluation early (a matching deny would): coverage and lint need every matching line,
  // while enforceEx names only the deciding one.
  model.addDef('m', 'm2', `(${matcher}) && policyTrace(p_id)`);
  const traceContext = new casbin.EnforceContext('r', 'p', 'e', 'm2');
  model.addDef('m', 'm3', `(${matcher.replace(/\battrMatch\(/g, 'attrAny(')}) && policyTrace(p_id)`);
  const candidateContext = new casbin.EnforceContext('r', 'p', 'e', 'm3');
  const trace: string[] = [];

  const enforcer = await casbin.newEnforcer(model);
  const fns = matcherFunctions();
  await enforcer.addFunction('attrMatch', fns.attrMatch);
  await enforcer.addFunction('pathMatch', fns.pathMatch);
  await enforcer.addFunction('attrAny', () => true);
  await enforcer.addFunction('policyTrace', (id: string) => {
    trace.push(id);
    return false;
  });
  if (rules.length > 0) await enforcer.addPolicies(rules.map((r) => ruleToCsvRow(r).slice(1)));

  return {
    standard,
    enforceEx: (request) => enforcer.enforceExSync(...request),
    matchingIds(request) {
      trace.length = 0;
      // Synchronous, so no other request can interleave with the shared trace array.
      enforcer.enforceSync(traceContext, ...request);
      return trace.slice();
    },
    candidateIds(request) {
      trace.length = 0;
      enforcer.enforceSync(candidateContext, ...request);
      return trace.slice();
    },
  };
}
