import type { Next } from 'koa';
import { AppError } from '../services/errors.ts';
import type { CounterStore } from '../services/counters.ts';
import type { Clock } from '../services/clock.ts';
import { rateLimitHeaders, spendQuota } from '../services/quota.ts';
import type { GatewayContext } from './state.ts';

/**
 * Every request a key authenticates spends one of its quota, whatever the policy then says, and
 * every key response carries the rate-limit fields. A counter store that does not answer throws
 * SERVICE_UNAVAILABLE: the request fails closed.
 */
export function spendKeyQuota(counters: CounterStore, clock: Clock) {
  return async function spendKeyQuotaMiddleware(ctx: GatewayContext, next: Next) {
    const caller = ctx.state.caller;
    if (caller.kind !== 'key') return next();
    const outcome = await spendQuota(counters, caller.key.id, caller.key.requestQuota, clock());
    const headers = rateLimitHeaders(outcome);
    if (!outcome.allowed) {
      throw new AppError('QUOTA_EXCEEDED', `This API key has used its ${outcome.limit} requests for today. The quota resets at 00:00 UTC.`, {}, { ...headers, 'Retry-After': String(outcome.resetSeconds) });
    }
    ctx.set(headers);
    await next();
  };
}
