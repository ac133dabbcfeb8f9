import type { Next } from 'koa';
import { AppError } from '../errors.ts';
import type { QuotaSpender } from '../services/quota-lease.ts';
import type { Clock } from '../services/clock.ts';
import type { QuotaOutcome } from '../services/quota.ts';
import type { UsageCounted } from '../services/usage.ts';
import type { GatewayContext } from './state.ts';

/** The quota's response fields: the IETF draft's and the older ones. */
export function rateLimitHeaders(q: QuotaOutcome): Record<string, string> {
  return {
    'RateLimit-Policy': `"day";q=${q.limit};w=86400`,
    RateLimit: `"day";r=${q.remaining};t=${q.resetSeconds}`,
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
    const outcome = await quota.spend(caller.key.id, caller.key.requestQuota, now);
    // Usage history records what the quota counted: a request the counter store never answered is
    // not in it. An OAuth token's "key" is its grant, whose usage is kept apart.
    onCounted?.(caller.grant ? { subject: 'grant', id: caller.grant.id } : { subject: 'key', id: caller.key.id }, now, !outcome.allowed);
    // Set before refusing, so the 429 carries them too: the problem writer keeps headers already set.
    ctx.set(rateLimitHeaders(outcome));
    if (!outcome.allowed) {
      throw new AppError('QUOTA_EXCEEDED', `This API key has used its ${outcome.limit} requests for today. The quota resets at 00:00 UTC.`, {}, { retryAfterSeconds: outcome.resetSeconds });
    }
    await next();
  };
}
