import { AppError, refusalError } from '../../errors.ts';
import type { PolicyHolder } from '../../policy/engine.ts';
import { policyPath, refusalOf } from '../../policy/refusal.ts';
import type { GatewayContext } from '../state.ts';

// Only the asking lives here; the decision and the words of a refusal are src/policy's.

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A cookie rides along on cross-site requests; a write whose origin is elsewhere is refused. */
function isCrossOriginWrite(ctx: GatewayContext, ownOrigin: string): boolean {
  if (SAFE_METHODS.has(ctx.method)) return false;
  if (ctx.get('sec-fetch-site') === 'cross-site') return true;
  const origin = ctx.get('origin');
  return origin !== '' && origin !== ownOrigin;
}

export function enforcePolicy(holder: PolicyHolder, opts: { apiPrefix: string; publicUrl: string | null }) {
  const fixedOrigin = opts.publicUrl ? new URL(opts.publicUrl).origin : null;
  return function enforcePolicyStep(ctx: GatewayContext): void {
    const caller = ctx.state.caller;
    const refused = refusalOf(holder.current, caller, ctx.method, policyPath(ctx.path, opts.apiPrefix));
    if (refused) throw refusalError(refused);
    // Not ctx.origin: in Koa 3 that is the request's own Origin header, which would always match.
    if (caller.kind === 'session' && isCrossOriginWrite(ctx, fixedOrigin ?? `${ctx.protocol}://${ctx.host}`)) {
      throw new AppError('FORBIDDEN', 'Cross-site requests cannot change anything with a session cookie. Send the request from this site.');
    }
  };
}
