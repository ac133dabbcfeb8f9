import type { Next } from 'koa';
import { AppError } from '../errors.ts';
import type { QuotaSpender } from '../services/quota-lease.ts';
import type { Clock } from '../services/clock.ts';
import type { QuotaOutcome } from '../services/quota.ts';
import type { UsageCounted } from '../services/usage.ts';
import type { GatewayContext } from './state.ts';
import { RATE_WINDOWS } from '../config.ts';

/** The quota's response fields: the IETF draft's and the older ones. */
export function rateLimitHeaders(q: QuotaOutcome): Record<string, string> {
  // Each window is one member of the structured-field list, named by a string: the day first, then
  // the short windows shortest first. The older single-value fields stay the day's.
  const policy = [`"day";q=${q.limit};w=86400`, ...q.windows.map((w) => `"${w.window}";q=${w.limit};w=${RATE_WINDOWS[w.window]}`)];
  const state = [`"day";r=${q.remaining};t=${q.resetSeconds}`, ...q.windows.map((w) => `"${w.window}";r=${w.remaining};t=${w.resetSeconds}`)];
  return {
    'RateLimit-Policy': policy.join(', '),
    RateLimit: state.join(', '),
    'RateLimit-Limit': String(q.limit),
    'RateLimit-Remaining': String(q.remaining),
    'RateLimit-Reset': String(q.resetSeconds),
  };
}

/**
 * Every request a key authenticates spends one of its quota, whatever the policy then says, and
 * every key response carries the rate-limit fields. A counter store that does not answer throws
 * StoreUnavailableError, answered 503: the request fails closed.
 */
export function spendKeyQuota(quota: Pick<QuotaSpender, 'spend'>, clock: Clock, onCounted?: (who: UsageCounted, at: Date, refused: boolean) => void) {
  return async function spendKeyQuotaMiddleware(ctx: GatewayContext, next: Next) {
    const caller = ctx.state.caller;
    if (caller.kind !== 'key') return next();
    const now = clock();
    const outcome = await quota.spend(caller.key.id, caller.key.requestQuota, now, caller.key.rateLimits);
    // Usage history records what the quota counted: a request the counter store never answered is
    // not in it. An OAuth token's "key" is its grant, whose usage is kept apart.
    onCounted?.(caller.grant ? { subject: 'grant', id: caller.grant.id } : { subject: 'key', id: caller.key.id }, now, !outcome.allowed);
    // Set before refusing, so the 429 carries them too: the problem writer keeps headers already set.
    ctx.set(rateLimitHeaders(outcome));
    const burst = outcome.windows.find((w) => w.window === outcome.refusedBy);
    if (!outcome.allowed && burst) {
      // Transient, unlike an exhausted day: the same answer on /api/mcp (not its OAuth refusal).
      throw new AppError('RATE_LIMITED', `This API key has sent its ${burst.limit} requests for this ${burst.window} window. Try again in ${burst.resetSeconds} s.`, { window: burst.window }, { retryAfterSeconds: burst.resetSeconds });
    }
    if (!outcome.allowed) {
      throw new AppError('QUOTA_EXCEEDED', `This API key has used its ${outcome.limit} requests for today. The quota resets at 00:00 UTC.`, {}, { retryAfterSeconds: outcome.resetSeconds });
    }
    await next();
  };
}
