// The policy against what the gateway serves: every route it serves is decided by a line for each
// kind of caller (nothing left to the silent default), and every line names something that exists.
import type { PolicyEngine, PolicySubject, SubjectKind } from '../../policy/engine.ts';
import { compilePathPattern } from '../../policy/patterns.ts';
import type { PolicyRule } from '../../policy/rules.ts';
import { examplePath, forwardedExamples, gatewayRoutes, routeMethods } from '../../policy/routes.ts';

export interface RouteFinding {
  /** The policy line the finding is about, or null when it is about a route. */
  line: number | null;
  message: string;
}

const baseSubjects: Record<SubjectKind, PolicySubject> = {
  session: { kind: 'session', permissions: [], role: 'user' },
  key: { kind: 'key', permissions: [], role: 'user' },
  anonymous: { kind: 'anonymous', permissions: [], role: null },
};

// Everything under /api that the gateway does not serve is forwarded upstream, so a pattern there
// always names something; outside /api only the gateway's own routes exist.
function literalPrefix(pattern: string): string {
  if (pattern.startsWith('^')) return /^\^([^()[\]{}.*+?|\\$]*)/.exec(pattern)?.[1] ?? '';
  return pattern.split(/\/(?=[*:])/)[0] ?? '';
}

function namesForwardedPath(pattern: string): boolean {
  const prefix = literalPrefix(pattern);
  return prefix === '/api' || prefix.startsWith('/api/');
}

export function routeFindings(engine: PolicyEngine): RouteFinding[] {
  const findings: RouteFinding[] = [];
  for (const route of gatewayRoutes) {
    const path = examplePath(route.path);
    for (const method of routeMethods(route)) {
      const undecided = Object.values(baseSubjects).filter((s) => engine.decide(s, method, path).ruleId === null);
      if (undecided.length === 0) continue;
      const kinds = undecided.map((s) => s.kind).join(', ');
      const message = `route ${method} ${route.path} is decided by no policy line for ${kinds} (only by the default deny)`;
      findings.push({ line: null, message });
    }
  }
  const served = [...gatewayRoutes.map((r) => examplePath(r.path)), ...forwardedExamples.map((f) => f.path)];
  for (const rule of engine.rules) {
    if (!namesNothing(rule, served)) continue;
    const message = `${rule.id}: path ${rule.path} matches no route the gateway serves, and lies outside /api where nothing is forwarded`;
    findings.push({ line: rule.line, message });
  }
  return findings;
}

function namesNothing(rule: PolicyRule, served: readonly string[]): boolean {
  if (namesForwardedPath(rule.path)) return false;
  const re = compilePathPattern(rule.path);
  return !served.some((p) => re.test(p));
}
