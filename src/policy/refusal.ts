// What a refused caller is told, found from the policy alone. The HTTP middleware and the MCP tools
// both ask here, so neither has its own idea of who may do what or of how a refusal reads.
import type { Decision, PolicyEngine, PolicySubject } from './engine.ts';
import { heldAtoms, permissionWords, type Permissions } from './scopes.ts';
import { gatewayRoutes } from './routes.ts';

type Role = 'user' | 'admin';

/** The parts of a resolved caller the policy looks at; the HTTP caller type fits it as is. */
export type PolicyCaller =
  | { kind: 'anonymous' }
  | { kind: 'session'; user: { role: Role } }
  | { kind: 'key'; user: { role: Role }; key: { permissions: Permissions } }
  | { kind: 'grant'; user: { role: Role }; grant: { permissions: Permissions } };

export interface Refusal {
  code: 'UNAUTHENTICATED' | 'FORBIDDEN';
  detail: string;
  /** For a refused key: the permission (or comma-joined set) whose addition would allow it. */
  requiredPermission?: string;
}

// A key's permissions object lives as long as its cached record, and every request of that key
// presents the same one: its atoms are worked out once, not per request.
const atomsByPermissions = new WeakMap<Permissions, readonly string[]>();
const atomsOf = (permissions: Permissions): readonly string[] => {
  let atoms = atomsByPermissions.get(permissions);
  if (!atoms) atomsByPermissions.set(permissions, (atoms = Object.freeze(heldAtoms(null, permissions))));
  return atoms;
};

export function subjectOf(caller: PolicyCaller, channel: 'http' | 'mcp' = 'http'): PolicySubject {
  switch (caller.kind) {
    case 'anonymous':
      return { kind: 'anonymous', permissions: [], role: null, channel };
    case 'session':
      return { kind: 'session', permissions: [], role: caller.user.role, channel };
    case 'key':
      return { kind: 'key', permissions: atomsOf(caller.key.permissions), role: caller.user.role, channel };
    // An OAuth grant is decided as a key holding what it grants, with `via:oauth` so a line can
    // tell the two apart: every rule about keys applies to it.
    case 'grant':
      return { kind: 'key', permissions: atomsOf(caller.grant.permissions), role: caller.user.role, channel, oauth: true };
  }
}

/**
 * The policy files are written against the default prefix `/api`; a gateway mounted under another
 * prefix maps it onto `/api` before asking. Letters are lowered so that a case-insensitive upstream
 * cannot be reached through a spelling the policy would not recognise.
 */
export function policyPath(path: string, apiPrefix: string): string {
  const underPrefix = apiPrefix !== '/api' && (path === apiPrefix || path.startsWith(apiPrefix + '/'));
  const mapped = underPrefix ? '/api' + path.slice(apiPrefix.length) : path;
  return mapped.toLowerCase();
}

/**
 * The path without each suffix its last segment could be read with: `pending.tar.json` also as
 * `pending.tar` and `pending`. Rails and older Spring read `.json` as a response format and serve
 * the route without it, so a refusal must not be escaped by adding one.
 */
const servedLiterally = new Set(gatewayRoutes.filter((r) => !r.path.includes(':') && !r.path.endsWith('*')).map((r) => r.path));

export function unsuffixedPaths(path: string): string[] {
  // A route the gateway serves under that very name (/api/openapi.json) is dispatched exactly by its
  // own router; no upstream reads its suffix.
  if (servedLiterally.has(path)) return [];
  const slash = path.lastIndexOf('/');
  const last = path.slice(slash + 1);
  const out: string[] = [];
  for (let dot = last.lastIndexOf('.'); dot > 0; dot = last.lastIndexOf('.', dot - 1)) {
    out.push(path.slice(0, slash + 1) + last.slice(0, dot));
  }
  return out;
}

/**
 * The decision the gateway enforces for a request, and the path it was made on: the path as spelled,
 * unless it is allowed and the route without a suffix is refused, whose refusal then wins. The
 * request path and `policy explain` both ask here, so they name the same line.
 */
export function decisionAsServed(
  engine: Pick<PolicyEngine, 'decide'>, subject: PolicySubject, method: string, path: string,
): { decision: Decision; path: string } {
  const d = engine.decide(subject, method, path);
  for (const bare of d.allowed ? unsuffixedPaths(path) : []) {
    const without = engine.decide(subject, method, bare);
    if (!without.allowed) return { decision: without, path: bare };
  }
  return { decision: d, path };
}

export function refusalOf(
  engine: PolicyEngine, caller: PolicyCaller, method: string, path: string, channel: 'http' | 'mcp' = 'http',
): Refusal | null {
  const d = decisionAsServed(engine, subjectOf(caller, channel), method, path).decision;
  if (d.allowed) return null;
  if (caller.kind === 'anonymous') return { code: 'UNAUTHENTICATED', detail: 'Sign in or send an API key in the x-api-key header.' };
  if (caller.kind === 'key' || caller.kind === 'grant') {
    if (d.requiredPermission) {
      const names = d.requiredPermission.split(',');
      const what = names.length > 1 ? `permissions "${names.join('" and "')}"` : `"${d.requiredPermission}" permission`;
      const detail = `This API key lacks the ${what}. Create a key with ${permissionWords(engine.scopes, names)} to use this route.`;
      return { code: 'FORBIDDEN', detail, requiredPermission: d.requiredPermission };
    }
    return { code: 'FORBIDDEN', detail: 'API keys are never allowed here. Use a signed-in session instead.' };
  }
  const detail = caller.user.role === 'admin' ? 'This route is closed to every caller.' : 'You do not have access to this route.';
  return { code: 'FORBIDDEN', detail };
}

/**
 * The decision for an upstream call an MCP tool makes on the caller's behalf: the same matrix,
 * asked with the `via:mcp` attribute so policy lines can open routes to MCP clients (automations).
 * `path` is the request path under the configured prefix.
 */
export function mcpToolRefusal(
  engine: PolicyEngine, caller: PolicyCaller, method: string, path: string, apiPrefix: string,
): Refusal | null {
  return refusalOf(engine, caller, method, policyPath(path, apiPrefix), 'mcp');
}
