import fc from 'fast-check';
import type { Answers } from '../../src/policy/decisions.ts';
import type { Decision, PolicySubject } from '../../src/policy/engine.ts';
import { EXCEPT, PROBE_METHODS } from '../../src/policy/patterns.ts';
import type { PolicyRule } from '../../src/policy/rules.ts';

// Requests drawn against a policy's own lines, so that every line is reached, its neighbours in the
// index are reached, and so are the spellings next to it that must not match.

export interface Ask { subject: PolicySubject; method: string; path: string }

const segment = fc.constantFrom('x', 'x-1', '0123abcd', 'deadbeef', 'v1', 'v22', 'private', 'admin', 'public', 'run', 'items', 'a00', 's01', 'X', '%2e', 'x.json', '',
  ':key-id', ':id', 'é', '%2f', '%2E%2e', 'a;b', '%00', '%C0%AE');

/** One concrete path a glob or regular expression of the line covers (or nearly: a filler may miss). */
function pathFor(pattern: string, fill: readonly string[], pick: number): string {
  if (pattern.startsWith('^')) {
    const prefix = /^\^([A-Za-z0-9/._-]*)/.exec(pattern)?.[1] ?? '/';
    return prefix + fill.slice(0, 1 + (pick % 3)).join('/');
  }
  const at = pattern.indexOf(EXCEPT);
  const globs = at < 0 ? [pattern] : [pattern.slice(0, at).trim(), ...pattern.slice(at + EXCEPT.length).trim().split(/\s+/)];
  const glob = globs[pick % globs.length]!;
  let i = 0;
  const next = () => fill[i++ % fill.length] || 'x';
  return glob.split('/').map((seg) => (seg === '*' || seg.startsWith(':') ? next() : seg === '**' ? fill.slice(0, pick % 4).join('/') : seg)).join('/').replace(/\/$/, '') || '/';
}

/** Spellings a canonical path is not, and paths a line's pattern is one step away from. */
function oddly(path: string, how: number, extra: string): string {
  switch (how) {
    case 0: return `${path}/${extra}`;
    case 1: return path.slice(0, Math.max(1, path.lastIndexOf('/'))) || '/';
    case 2: return `${path}/`;
    case 3: return path.toUpperCase();
    case 4: return path.replace('/', '//');
    case 5: return `${path}.json`;
    case 6: return path.slice(1);
    case 7: return `${path}/../${extra}`;
    case 8: return `${path};${extra}`;
    // Many segments: deeper than any pattern, so every walk of the index runs out of lines first.
    case 9: return `${path}${'/x'.repeat(64)}`;
    case 10: return `${path}/**`;
    default: return path;
  }
}

const METHODS = [...PROBE_METHODS, 'PROPFIND', 'TRACE', 'get', 'PUT_GET', 'GETX'];

export function subjects(permissions: readonly string[]): fc.Arbitrary<PolicySubject> {
  const names = [...permissions, 'unknown', 'x perm:ai', 'ai:nope', 'mcp:access:extra'];
  return fc
    .record({
      kind: fc.constantFrom('session' as const, 'key' as const, 'anonymous' as const),
      permissions: fc.subarray(names, { maxLength: 5 }),
      role: fc.constantFrom('user' as const, 'admin' as const, null),
      channel: fc.constantFrom(undefined, 'http' as const, 'mcp' as const),
      oauth: fc.boolean(),
    })
    .map(({ kind, permissions: held, role, channel, oauth }) => ({ kind, permissions: held, role, ...(channel ? { channel } : {}), ...(oauth ? { oauth } : {}) }));
}

/** A request aimed at one of the lines (or, one time in eight, at a path made of loose segments). */
export function requests(rules: readonly PolicyRule[], permissions: readonly string[]): fc.Arbitrary<Ask> {
  return fc
    .record({
      subject: subjects(permissions),
      method: fc.oneof(fc.constantFrom(...METHODS), fc.constantFrom(...rules.map((r) => /^\^\(?([A-Z]+)/.exec(r.method)?.[1] ?? 'GET'))),
      line: fc.nat(rules.length - 1),
      fill: fc.array(segment, { minLength: 1, maxLength: 4 }),
      pick: fc.nat(11),
      how: fc.nat(18),
      loose: fc.nat(7),
    })
    .map(({ subject, method, line, fill, pick, how, loose }) => {
      const base = loose === 0 ? `/${fill.join('/')}` : pathFor(rules[line]!.path, fill, pick);
      return { subject, method, path: oddly(base, how, fill[0] ?? 'x') };
    });
}

export type { Answers } from '../../src/policy/decisions.ts';

/** Every field of the decision, and the lines explain lists, from both; null when they agree. */
export function disagreement(compiled: Answers, reference: Answers, a: Ask, withMatches = true): string | null {
  const mine: Decision = compiled.decide(a.subject, a.method, a.path);
  const theirs: Decision = reference.decide(a.subject, a.method, a.path);
  const show = (d: Decision) => JSON.stringify(d);
  if (show({ ...mine }) !== show({ ...theirs })) return `decide ${a.method} ${a.path} ${JSON.stringify(a.subject)}: compiled ${show(mine)}, enforcer ${show(theirs)}`;
  if (!withMatches) return null;
  const ids = (rs: PolicyRule[]) => rs.map((r) => r.id).join(' ');
  const m1 = ids(compiled.matchingRules(a.subject, a.method, a.path));
  const m2 = ids(reference.matchingRules(a.subject, a.method, a.path));
  return m1 === m2 ? null : `matchingRules ${a.method} ${a.path}: compiled [${m1}], enforcer [${m2}]`;
}
