// The three texts that make a policy, and the one place they are checked: parsed, built into an
// engine (a policy the model cannot evaluate goes no further) and digested. Pure: reading them from
// files or the store, and writing them, belong to src/services/policy/.
import { createHash } from 'node:crypto';
import { createPolicyEngineFromRules, PolicyLoadError, type PolicyEngine } from './engine.ts';
import { describeProblems, parsePolicy, type PolicyRule } from './rules.ts';
import { parseScopes } from './scopes.ts';

/**
 * What an apply stores, a version holds and a reload reads back. `scopes` is '' where a version
 * holds no scopes text: its engine then reads permissions without a catalog.
 */
export interface PolicyTexts { model: string; policy: string; scopes: string }

/** How a bundle's texts are named in a mistake, and how an empty scopes text is read. */
export interface BundleSource {
  policy: string;
  scopes: string;
  /**
   * The scopes text was read from a scopes file, so even an empty one declares the scopes (none).
   * Otherwise an empty text means "no scopes text", as in a version stored without one.
   */
  scopesFromFile?: boolean;
}

/** Texts that parsed and built: what may be stored, and the engine they make. */
export interface PolicyBundle {
  readonly texts: PolicyTexts;
  readonly rules: readonly PolicyRule[];
  /** Its `scopes` is the catalog read from the texts (empty where they hold none). */
  readonly engine: PolicyEngine;
  readonly sha256: string;
}

/** One digest of the three texts; JSON keeps `a`+`bc` and `ab`+`c` apart. */
export function policySha256(t: PolicyTexts): string {
  return createHash('sha256').update(JSON.stringify([t.model, t.policy, t.scopes])).digest('hex');
}

/**
 * Parses and test-builds the texts; throws PolicyLoadError (lines) or ScopesError naming `source`.
 * A line is malformed, among other reasons, when its path is a regular expression that is not
 * linear-time (patterns.ts): the start, a reload, apply and lint all refuse it here.
 */
export async function checkBundle(texts: PolicyTexts, source: BundleSource): Promise<PolicyBundle> {
  const parsed = parsePolicy(texts.policy);
  if (parsed.problems.length) {
    // The first line names the first problem: a refused start prints only that line.
    const [first, ...more] = describeProblems(parsed.problems, source.policy).split('\n');
    throw new PolicyLoadError(`malformed line ${first}${more.length ? ` (and ${more.length} more)\n${more.join('\n')}` : ''}`);
  }
  const withScopes = texts.scopes !== '' || source.scopesFromFile === true;
  const options = withScopes ? { scopes: parseScopes(texts.scopes, source.scopes) } : {};
  const engine = await createPolicyEngineFromRules(texts.model, parsed.rules, options);
  return { texts, rules: parsed.rules, engine, sha256: policySha256(texts) };
}

/** The names a stored or named policy's mistakes carry: `version 3`, `the scopes of version 3`. */
export const sourceNamed = (name: string): BundleSource => ({ policy: name, scopes: `the scopes of ${name}` });
