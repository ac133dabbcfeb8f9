import type { Next } from 'koa';
import { AppError } from '../../services/errors.ts';
import type { PolicyEngine, PolicySubject } from './engine.ts';
import type { Caller, GatewayContext } from '../state.ts';

/** The enforcer in use. A reload builds a new engine and swaps it here in one assignment. */
export interface PolicyHolder { current: PolicyEngine }

export function subjectOf(caller: Caller): PolicySubject {
  switch (caller.kind) {
    case 'anonymous':
      return { kind: 'anonymous', permissions: [], role: null };
    case 'session':
      return { kind: 'session', permissions: [], role: caller.user.role };
    case 'key':
      return { kind: 'key', permissions: caller.key.scopes, role: caller.user.role };
  }
}

/**
 * The policy files are written against the default prefix `/api`; a gateway mounted under another
 * prefix maps it onto `/api` before asking. Letters are lowered so that a case-insensitive upstream
 * cannot be reached through a spelling the policy would not recognise.
 */
export function policyPath(path: string, apiPrefix: string): string {
  const mapped = apiPrefix !== '/api' && (path === apiPrefix || path.startsWith(apiPrefix + '/')) ? '/api' + path.slice(apiPrefix.length) : path;
  return mapped.toLowerCase();
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A cookie rides along on cross-site requests; a write whose origin is elsewhere is refused. */
function isCrossOriginWrite(ctx: GatewayContext, ownOrigin: string): boolean {
  if (SAFE_METHODS.has(ctx.method)) return false;
  if (ctx.get('sec-fetch-site') === 'cross-site') return true;
  const origin = ctx.get('origin');
  return origin !== '' && origin !== ownOrigin;
}

export function refusal(engine: PolicyEngine, caller: Caller, method: string, path: string, channel: 'http' | 'mcp' = 'http'): AppError | null {
  const d = engine.decide({ ...subjectOf(caller), channel }, method, path);
  if (d.allowed) return null;
  if (caller.kind === 'anonymous') return new AppError('UNAUTHENTICATED', 'Sign in or send an API key in the x-api-key header.');
  if (caller.kind === 'key') {
    if (d.requiredPermission) {
      return new AppError('FORBIDDEN', `This API key lacks the "${d.requiredPermission}" permission. Create a key with ${d.requiredPermission === 'ai' ? 'AI' : d.requiredPermission.toUpperCase()} access to use this route.`, { requiredPermission: d.requiredPermission });
    }
    return new AppError('FORBIDDEN', 'API keys are never allowed here. Use a signed-in session instead.');
  }
  return new AppError('FORBIDDEN', caller.user.role === 'admin' ? 'This route is closed to every caller.' : 'You do not have access to this route.');
}

export function enforcePolicy(holder: PolicyHolder, opts: { apiPrefix: string; publicUrl: string | null }) {
  const fixedOrigin = opts.publicUrl ? new URL(opts.publicUrl).origin : null;
  return async function enforcePolicyMiddleware(ctx: GatewayContext, next: Next) {
    const caller = ctx.state.caller;
    const refused = refusal(holder.current, caller, ctx.method, policyPath(ctx.path, opts.apiPrefix));
    if (refused) throw refused;
    // Not ctx.origin: in Koa 3 that is the request's own Origin header, which would always match.
    if (caller.kind === 'session' && isCrossOriginWrite(ctx, fixedOrigin ?? `${ctx.protocol}://${ctx.host}`)) {
      throw new AppError('FORBIDDEN', 'Cross-site requests cannot change anything with a session cookie. Send the request from this site.');
    }
    await next();
  };
}

/**
 * The decision for an upstream call an MCP tool makes on the caller's behalf: the same matrix,
 * asked with the `via:mcp` attribute so policy lines can open routes to MCP clients (automations).
 * `path` is the request path under the configured prefix.
 */
export function mcpToolRefusal(engine: PolicyEngine, caller: Caller, method: string, path: string, apiPrefix: string): AppError | null {
  return refusal(engine, caller, method, policyPath(path, apiPrefix), 'mcp');
}
