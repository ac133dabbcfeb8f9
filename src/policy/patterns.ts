// The small languages of a policy line's fields, and the functions the model's matcher calls.
// Kept free of casbin so the CLI can check a line without building an enforcer.
import { nonLinearReason } from './linear.ts';

export const SUBJECTS = ['session', 'key', 'anonymous'] as const;
export const KNOWN_ROLES = ['user', 'admin'] as const;
// Methods the CLI probes patterns with; a method pattern that matches none of them matches nothing.
export const PROBE_METHODS = ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

export class PatternError extends Error {
  override name = 'PatternError';
}

const SEGMENT_PARAM = /^:[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether a glob's segment matches any one segment (`*`, `:name`); any other is literal (`:key-id` too). */
export const matchesOneSegment = (seg: string): boolean => seg === '*' || SEGMENT_PARAM.test(seg);

/** What a path pattern compiles to: a test of a canonical path. */
export interface PathMatcher {
  test(path: string): boolean;
}

type Segment = { kind: 'literal'; value: string } | { kind: 'one' } | { kind: 'rest' };

// A glob is matched segment by segment, never through a regular expression: one pass over the
// path, whatever the pattern.
function compileGlob(pattern: string): PathMatcher {
  if (!pattern.startsWith('/')) throw new PatternError('a path must start with / (or ^ for a regular expression)');
  if (pattern === '/') return { test: (path) => path === '/' };
  const raw = pattern.slice(1).split('/');
  const segments = raw.map((seg, i): Segment => {
    if (seg === '**') {
      if (i !== raw.length - 1) throw new PatternError('** may only be the last segment');
      return { kind: 'rest' };
    }
    if (matchesOneSegment(seg)) return { kind: 'one' };
    if (seg === '') throw new PatternError('empty segment (// or a trailing slash) never matches a canonical path');
    if (seg === '.' || seg === '..') throw new PatternError(`a "${seg}" segment never matches a canonical path`);
    if (/[*?#\s]/.test(seg)) {
      throw new PatternError(`"${seg}": wildcards fill a whole segment, and paths carry no query, fragment or space`);
    }
    return { kind: 'literal', value: seg };
  });
  return {
    test(path) {
      if (!path.startsWith('/')) return false;
      const parts = path.slice(1).split('/');
      for (let i = 0; i < segments.length; i++) {
        const seg = segments[i]!;
        // `**` covers the path itself and everything beneath it.
        if (seg.kind === 'rest') return true;
        const part = parts[i];
        if (part === undefined) return false;
        if (seg.kind === 'one' ? part === '' : part !== seg.value) return false;
      }
      return parts.length === segments.length;
    },
  };
}

/** The word that starts a path pattern's list of exceptions: `/api/** except /api/openapi.json`. */
export const EXCEPT = ' except ';

/**
 * A path pattern is a glob over whole segments (`/api/ai/**`, `/api/api-keys/:id`, `/x/*`), a glob
 * with exceptions (`/api/auth/** except /api/auth/get-session /api/auth/api-key/list`: what the
 * first glob covers and none of the others, separated by spaces, so the field holds no comma), or,
 * when it starts with `^`, an anchored regular expression. `**` as the last segment matches the path
 * itself and everything beneath it, so `/api/admin/**` covers `/api/admin` too; `*` and `:name`
 * match exactly one segment. Paths reaching the policy are canonical, so a pattern that could only
 * match a non-canonical path (`//`, `.`, `..`, a trailing slash, a query) is an error, not a no-op.
 */
export function compilePathPattern(pattern: string): PathMatcher {
  // Parsing a line, checking it and compiling it each ask for its pattern, and a reload asks for
  // the same patterns again: the linear-time proof of a regular expression is made once.
  return remembered(compiledPaths, pattern, compilePathPatternOnce);
}

/** A pattern's compiled form or its mistake, worked out once per pattern text. */
function remembered<T>(cache: Map<string, T | PatternError>, pattern: string, compile: (p: string) => T): T {
  let known = cache.get(pattern);
  if (known === undefined) {
    try {
      known = compile(pattern);
    } catch (e) {
      if (!(e instanceof PatternError)) throw e;
      known = e;
    }
    if (cache.size >= MAX_REMEMBERED_PATTERNS) cache.clear();
    cache.set(pattern, known);
  }
  if (known instanceof PatternError) throw known;
  return known;
}

// Patterns come from policy files, not from callers; the bound keeps an endless stream of edited
// policies from growing the map.
const MAX_REMEMBERED_PATTERNS = 50_000;
const compiledPaths = new Map<string, PathMatcher | PatternError>();

function compilePathPatternOnce(pattern: string): PathMatcher {
  if (pattern.startsWith('^')) {
    if (!pattern.endsWith('$')) throw new PatternError('a regular-expression path must end with $ (anchored)');
    let re: RegExp;
    let reason: string | null;
    try {
      re = new RegExp(pattern);
      reason = nonLinearReason(pattern);
    } catch (e) {
      throw new PatternError(`not a valid regular expression (${(e as Error).message})`);
    }
    // The path is the caller's: a backtracking pattern would let one request stall every other.
    if (reason) throw new PatternError(`not linear-time: ${reason}; write it as a glob (with except) or without it`);
    return re;
  }
  const at = pattern.indexOf(EXCEPT);
  if (at < 0) return compileGlob(pattern);
  const base = compileGlob(pattern.slice(0, at).trim());
  const listed = pattern.slice(at + EXCEPT.length).trim().split(/\s+/).filter(Boolean);
  if (listed.length === 0) throw new PatternError('"except" needs at least one path after it');
  const exceptions = listed.map((p) => {
    if (p === 'except') throw new PatternError('one "except" per pattern: list every exception after it');
    if (p.startsWith('^')) throw new PatternError(`exception "${p}": exceptions are globs, not regular expressions`);
    return compileGlob(p);
  });
  return { test: (path) => base.test(path) && !exceptions.some((x) => x.test(path)) };
}

/** The globs a path pattern is written with (its base, then its exceptions); none for a regular expression. */
export function pathGlobs(pattern: string): string[] {
  if (pattern.startsWith('^')) return [];
  const at = pattern.indexOf(EXCEPT);
  return at < 0 ? [pattern] : [pattern.slice(0, at).trim(), ...pattern.slice(at + EXCEPT.length).trim().split(/\s+/).filter(Boolean)];
}

/** A method pattern is an anchored regular expression (`^(GET|HEAD)$`) or `.*` for every method. */
export function compileMethodPattern(pattern: string): RegExp {
  // A policy repeats a handful of method patterns over thousands of lines, each asked for by the
  // parse, the check and the compile; the regular expression holds no state (no g or y flag).
  return remembered(compiledMethods, pattern, compileMethodPatternOnce);
}

const compiledMethods = new Map<string, RegExp | PatternError>();

function compileMethodPatternOnce(pattern: string): RegExp {
  if (pattern !== '.*' && !(pattern.startsWith('^') && pattern.endsWith('$'))) {
    // regexMatch is a search, not a match: an unanchored GET would also match PUT_GET.
    throw new PatternError('a method pattern must be .* or anchored with ^ and $');
  }
  let re: RegExp;
  try {
    re = new RegExp(pattern);
  } catch (e) {
    throw new PatternError(`not a valid regular expression (${(e as Error).message})`);
  }
  if (!PROBE_METHODS.some((m) => re.test(m))) throw new PatternError(`matches none of ${PROBE_METHODS.join(', ')}`);
  return re;
}

export interface ConditionTerm {
  attribute: string;
  negated: boolean;
}

const TERM = /^(!?)((?:perm:[a-z0-9_-]+(?::[a-z0-9_-]+)?)|(?:role|via):[a-z0-9_-]+)$/;

/**
 * A condition is `*` (always) or space-separated terms that must all hold: `perm:reports` (the key
 * holds some action of the scope), `perm:reports:write` (it holds that action), `!perm:mcp` (it
 * lacks mcp), `role:admin`, `!role:admin`, `via:mcp` (an MCP tool is asking on the caller's behalf), `via:oauth` (the key is an OAuth
 * access token).
 */
export function parseCondition(condition: string): ConditionTerm[] {
  if (condition === '*') return [];
  const words = condition.split(/\s+/).filter(Boolean);
  if (words.length === 0) throw new PatternError('empty condition (write * for "always")');
  return words.map((w) => {
    const m = TERM.exec(w);
    if (!m) throw new PatternError(`"${w}" is not perm:SCOPE, perm:SCOPE:ACTION, role:NAME or their negation with !`);
    return { attribute: m[2] ?? '', negated: m[1] === '!' };
  });
}

/** Whether every term holds for an attribute string as built by subjectAttributes. */
export function termsHold(terms: readonly ConditionTerm[], attrs: string): boolean {
  const padded = ` ${attrs} `;
  return terms.every((t) => padded.includes(` ${t.attribute} `) !== t.negated);
}

/** A `perm:` term read as its scope and, for `perm:S:A`, its action. */
export function permTerm(attribute: string): { scope: string; action: string | null } | null {
  if (!attribute.startsWith('perm:')) return null;
  const [scope = '', action] = attribute.slice(5).split(':');
  return { scope, action: action ?? null };
}

/**
 * Condition terms naming a permission or role the gateway never hands out. `declared` answers
 * whether a scope (and action) is in the scopes file.
 */
export function unknownAttributes(terms: readonly ConditionTerm[], declared: (scope: string, action: string | null) => boolean): string[] {
  const known = new Set<string>([...KNOWN_ROLES.map((r) => `role:${r}`), 'via:mcp', 'via:oauth']);
  return terms.filter((t) => {
    const perm = permTerm(t.attribute);
    return perm ? !declared(perm.scope, perm.action) : !known.has(t.attribute);
  }).map((t) => t.attribute);
}

// Only these characters may appear in a permission passed to the matcher: a stored name with a
// space in it ("ai role:admin") would otherwise smuggle extra attributes into the request.
const SAFE_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * The request's attribute string, as the model's `r.attrs`. Each held `S:A` (a bare `S` is
 * `S:access`) gives `perm:S perm:S:A`, so `perm:S` holds for any action of the scope:
 * `"perm:ai perm:ai:access perm:reports perm:reports:read role:admin"`.
 */
export function subjectAttributes(permissions: readonly string[], role: string | null): string {
  const parts = new Set<string>();
  for (const p of permissions) {
    const [scope = '', action = 'access', ...rest] = p.split(':');
    if (rest.length > 0 || !SAFE_NAME.test(scope) || !SAFE_NAME.test(action)) continue;
    parts.add(`perm:${scope}`).add(`perm:${scope}:${action}`);
  }
  const out = [...parts].sort();
  if (role && SAFE_NAME.test(role)) out.push(`role:${role}`);
  return out.join(' ');
}

/**
 * The matcher functions the model calls. Each enforcer gets its own compiled-pattern caches, bounded
 * by the patterns of its policy, so a reload never keeps stale regular expressions around.
 */
export function matcherFunctions(): {
  attrMatch: (attrs: string, cond: string) => boolean;
  pathMatch: (path: string, pattern: string) => boolean;
} {
  const conditions = new Map<string, ConditionTerm[]>();
  const paths = new Map<string, PathMatcher>();
  return {
    attrMatch(attrs, cond) {
      let terms = conditions.get(cond);
      if (!terms) {
        terms = parseCondition(cond);
        conditions.set(cond, terms);
      }
      return termsHold(terms, attrs);
    },
    pathMatch(path, pattern) {
      let re = paths.get(pattern);
      if (!re) {
        re = compilePathPattern(pattern);
        paths.set(pattern, re);
      }
      return re.test(path);
    },
  };
}
