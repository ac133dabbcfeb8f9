import { z } from 'zod';
import { configSchema, type FileConfig } from './schema.ts';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Issue = z.core.$ZodIssue;

// A literal field that did not match (`enabled: false` against `true`): the branch is not the one
// the file meant, so its other complaints are noise.
const missesDiscriminant = (i: Issue): boolean => i.code === 'invalid_value' && i.values.length === 1 && i.path.length === 1;

/**
 * The issue to report and its full path: inside a union, the branch whose discriminants match the
 * input, and in it the issue deepest in the file, so `apiKeys.maxKeysPerUser: ten` names that field
 * rather than the union. A union no branch of which matches is reported as itself.
 */
function deepestIssue(issue: Issue, base: readonly PropertyKey[] = []): { issue: Issue; path: PropertyKey[] } {
  const path = [...base, ...issue.path];
  if (issue.code !== 'invalid_union') return { issue, path };
  const branch = issue.errors.find((b) => b.length > 0 && !b.some(missesDiscriminant));
  if (!branch) return { issue, path };
  const deepest = branch.map((i) => deepestIssue(i, path)).sort((a, b) => b.path.length - a.path.length);
  return deepest[0]!;
}

function describeIssue(top: Issue): string {
  const { issue, path: at } = deepestIssue(top);
  const path = at.length ? at.map(String).join('.') : '(root)';
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => (path === '(root)' ? k : `${path}.${k}`));
    return `${keys.join(', ')}: unknown key${keys.length > 1 ? 's' : ''}`;
  }
  // A discriminated union whose discriminant names no branch (`variant: C`).
  if (issue.code === 'invalid_union' && issue.discriminator !== undefined && 'options' in issue && issue.options) {
    const options = issue.options.filter((o) => o !== undefined && o !== null).map(String);
    return `${path}: expected ${options.join(' or ')}`;
  }
  if (issue.code === 'invalid_union' && path.endsWith('apiKeys')) {
    return `${path}: expected { enabled: false } or { enabled: true, variant: A|B, ... }`
      + ' (Variant B takes only enabled, variant and prefix)';
  }
  return `${path}: ${issue.message}`;
}

// Variant B refuses the Variant A fields; zod reports that as a union failure, so look for the
// clearer cause first.
function variantBMisuse(raw: unknown): string | null {
  if (!raw || typeof raw !== 'object') return null;
  const keys = (raw as { apiKeys?: unknown }).apiKeys;
  if (!keys || typeof keys !== 'object') return null;
  const k = keys as Record<string, unknown>;
  if (k.variant !== 'B') return null;
  for (const f of ['maxKeysPerUser', 'maxCreatesPerDay']) {
    if (f in k) return `apiKeys.${f}: not allowed under variant B`;
  }
  return null;
}

export function parseConfig(raw: unknown): FileConfig {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) {
    const first = result.error.issues[0];
    throw new ConfigError(variantBMisuse(raw) ?? (first ? describeIssue(first) : 'invalid configuration'));
  }
  return result.data;
}
