import type { Middleware, Next } from 'koa';
import { AppError } from '../errors.ts';
import type { UserRecord } from '../services/accounts.ts';
import { requireSessionCaller } from './routes/callers.ts';
import type { Caller, GatewayContext, GatewayState } from './state.ts';

// The one rule of every admin router, API and pages alike: a signed-in admin, nobody else. The
// policy keeps these paths to admins too; the rule stands on its own so that a policy rolled back
// past its admin lines still opens nothing here. A key is refused even when its owner is an admin:
// a key leaks more easily than a session, and the console can revoke every key there is.

/** Where a caller stands before an admin route; only `admin` passes. */
export type AdminStanding = 'admin' | 'anonymous' | 'not-a-session' | 'not-an-admin';

export function adminStanding(c: Caller): AdminStanding {
  if (c.kind === 'anonymous') return 'anonymous';
  if (c.kind !== 'session') return 'not-a-session';
  return c.user.role === 'admin' ? 'admin' : 'not-an-admin';
}

/**
 * The admin API's guard, `router.use(requireAdmin)` before its routes: a refusal is the problem the
 * session check gives elsewhere (401 anonymous, 403 a key), or 403 for a signed-in non-admin.
 */
export const requireAdmin: Middleware<GatewayState> = function requireAdmin(ctx: GatewayContext, next: Next) {
  if (adminStanding(requireSessionCaller(ctx)) !== 'admin') throw new AppError('FORBIDDEN', 'The operator console is for admins.');
  return next();
};

/**
 * The admin a handler behind the rule acts as. It only narrows the caller's type; a session got
 * here because the router's rule let it through, so the role is not asked again.
 */
export function theAdmin(ctx: GatewayContext): UserRecord {
  const c = ctx.state.caller;
  if (c.kind !== 'session') throw new Error(`admin route ${ctx.method} ${ctx.path} has no admin rule in front of it`);
  return c.user;
}
