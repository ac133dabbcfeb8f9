// The decisions two policies make differently: the heart of `keygate policy diff`, and of the
// console's "what this version changed". One implementation, so both say the same thing.
import type { PolicyEngine, PolicySubject } from './engine.ts';
import { pathGlobs } from './patterns.ts';
import type { ScopeCatalog } from './scopes.ts';
import { examplePath, forwardedExamples, gatewayRoutes, routeMethods } from './routes.ts';

export interface DiffRequest { method: string; path: string }

export interface DecisionChange {
  request: string;
  /** The subjects whose decision changes this way, as `policy explain` labels them. */
  subjects: string[];
  before: string;
  after: string;
}

export function subjectLabel(s: PolicySubject): string {
  if (s.kind === 'anonymous') return 'anonymous';
  const perms = s.kind === 'key' ? [...s.permissions].sort() : [];
  const attrs = [...perms, ...(s.kind === 'session' && s.role === 'admin' ? ['admin'] : [])];
  return attrs.length > 0 ? `${s.kind}[${attrs.join(',')}]` : s.kind;
}

/** Every declared permission once, spelled as a key holds it: `ai`, `reports:read`, `reports:write`. */
export function declaredPermissions(...catalogs: ScopeCatalog[]): string[] {
  const names = new Set<string>();
  for (const c of catalogs) {
    for (const s of c.list) for (const a of s.actions) names.add(s.actions.length === 1 && a === 'access' ? s.name : `${s.name}:${a}`);
  }
  return [...names];
}

/**
 * The subjects a diff compares: each kind of caller, and keys with no permission, each declared
 * permission alone, and all of them together, over every declared scope, not a fixed few.
 */
export function standardSubjects(...catalogs: ScopeCatalog[]): PolicySubject[] {
  const perms = declaredPermissions(...catalogs);
  return [
    { kind: 'anonymous', permissions: [], role: null },
    { kind: 'session', permissions: [], role: 'user' },
    { kind: 'session', permissions: [], role: 'admin' },
    { kind: 'key', permissions: [], role: 'user' },
    ...perms.map((p): PolicySubject => ({ kind: 'key', permissions: [p], role: 'user' })),
    ...(perms.length > 1 ? [{ kind: 'key', permissions: perms, role: 'user' } satisfies PolicySubject] : []),
  ];
}

/** A read and a write on the path a glob line names, so a new router's lines are diffed too. */
function linePaths(engines: readonly PolicyEngine[]): DiffRequest[] {
  const out: DiffRequest[] = [];
  for (const e of engines) for (const r of e.rules) {
    for (const glob of pathGlobs(r.path)) {
      const path = glob.replace(/\/(\*|:[A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g, '/x-1').replace(/\/\*\*$/, '') || '/';
      out.push({ method: 'GET', path }, { method: 'POST', path });
    }
  }
  return out;
}

/** The route table, the forwarded surface, the paths the lines name, and `extra` (a suite's cases), once each. */
export function diffRequests(engines: readonly PolicyEngine[], extra: readonly DiffRequest[] = []): DiffRequest[] {
  const all: DiffRequest[] = [
    ...gatewayRoutes.flatMap((r) => routeMethods(r).map((method) => ({ method, path: examplePath(r.path) }))),
    ...forwardedExamples,
    ...linePaths(engines),
    ...extra,
  ];
  const seen = new Set<string>();
  return all.filter((r) => {
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function outcome(decision: { allowed: boolean; ruleId: string | null }): string {
  const verdict = decision.allowed ? 'allow' : 'deny';
  return decision.ruleId ? `${verdict} (${decision.ruleId})` : `${verdict} (no line)`;
}

/** One entry per request and change; the subjects that share a change are listed together. */
export function decisionChanges(
  oldE: PolicyEngine, newE: PolicyEngine, reqs: readonly DiffRequest[],
): { decisions: DecisionChange[]; changed: number; subjects: number } {
  const subjects = standardSubjects(oldE.scopes, newE.scopes);
  const changes = new Map<string, DecisionChange>();
  for (const r of reqs) {
    for (const s of subjects) {
      const before = oldE.decide(s, r.method, r.path);
      const after = newE.decide(s, r.method, r.path);
      if (before.allowed === after.allowed) continue;
      const request = `${r.method} ${r.path}`;
      const key = `${request}\n${outcome(before)}\n${outcome(after)}`;
      const entry = changes.get(key) ?? { request, subjects: [], before: outcome(before), after: outcome(after) };
      entry.subjects.push(subjectLabel(s));
      changes.set(key, entry);
    }
  }
  const decisions = [...changes.values()];
  return { decisions, changed: decisions.reduce((n, c) => n + c.subjects.length, 0), subjects: subjects.length };
}

/** A decision change as `policy diff` prints it. */
export const decisionLine = (c: DecisionChange): string => `${c.request}  ${c.subjects.join(', ')}: ${c.before} -> ${c.after}`;
