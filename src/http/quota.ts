import { AppError } from '../errors.ts';
import type { QuotaSpender } from '../services/quota/lease.ts';
import type { Clock } from '../services/clock.ts';
import type { QuotaOutcome } from '../services/quota/decide.ts';
import type { UsageCounted } from '../services/usage.ts';
import type { Caller, GatewayContext } from './state.ts';
import { RATE_WINDOWS } from '../config.ts';
import type { Exhausted } from '../services/events/exhaustion.ts';

/** The callers whose requests are counted: keys, and OAuth grants like keys. */
type KeyCaller = Extract<Caller, { kind: 'key' | 'grant' }>;
const meteredOf = (caller: KeyCaller) => (caller.kind === 'key' ? caller.key : caller.grant);

// Each window is one member of the structured-field list, named by a string: the day first, then
// the short windows shortest first. The older single-value fields stay the day's.
const policyField = (q: QuotaOutcome) =>
  [`"day";q=${q.limit};w=86400`, ...q.windows.map((w) => `"${w.window}";q=${w.limit};w=${RATE_WINDOWS[w.window]}`)].join(', ');
const stateField = (q: QuotaOutcome) => {
  let out = `"day";r=${q.remaining};t=${q.resetSeconds}`;
  for (const w of q.windows) out += `, "${w.window}";r=${w.remaining};t=${w.resetSeconds}`;
  return out;
};

/**
 * Every request a key authenticates spends one of its quota, whatever the policy then says, and
 * every key response carries the rate-limit fields. A counter store that does not answer throws
 * StoreUnavailableError, answered 503: the request fails closed.
 */
export function spendKeyQuota(
  quota: Pick<QuotaSpender, 'spend'>, clock: Clock,
  onCounted?: (who: UsageCounted, at: Date, refused: boolean) => void, onExhausted?: (who: Exhausted, at: Date) => void,
) {
  // What does not change between a key's requests, spelled once per stamp: the policy field and
  // the limit. Keyed by the stamped windows' array, which the verifier's cached record keeps.
  const spelled = new WeakMap<object, { limit: number; policy: string; limitText: string }>();
  const fixedFields = (q: QuotaOutcome, stamp: object) => {
    let f = spelled.get(stamp);
    if (!f || f.limit !== q.limit) {
      f = { limit: q.limit, policy: policyField(q), limitText: String(q.limit) };
      spelled.set(stamp, f);
    }
    return f;
  };
  function spend(ctx: GatewayContext, key: KeyCaller): Promise<void> | undefined {
    const now = clock();
    const metered = meteredOf(key);
    const outcome = quota.spend(metered.id, metered.requestQuota, now, metered.rateLimits);
    if (outcome instanceof Promise) return outcome.then((o) => answer(ctx, key, now, o));
    answer(ctx, key, now, outcome);
    return undefined;
  }
  function answer(ctx: GatewayContext, key: KeyCaller, now: Date, outcome: QuotaOutcome): void {
    // Usage history records what the quota counted: a request the counter store never answered is
    // not in it. A grant's usage is kept apart from keys'.
    const metered = meteredOf(key);
    onCounted?.({ subject: key.kind, id: metered.id }, now, !outcome.allowed);
    // Set before refusing, so the 429 carries them too: the problem writer keeps headers already set.
    const fixed = fixedFields(outcome, metered.rateLimits);
    const { res } = ctx;
    res.setHeader('RateLimit-Policy', fixed.policy);
    res.setHeader('RateLimit', stateField(outcome));
    res.setHeader('RateLimit-Limit', fixed.limitText);
    res.setHeader('RateLimit-Remaining', String(outcome.remaining));
    res.setHeader('RateLimit-Reset', String(outcome.resetSeconds));
    if (outcome.allowed) return;
    const burst = outcome.refusedBy === undefined ? undefined : outcome.windows.find((w) => w.window === outcome.refusedBy);
    if (burst) {
      // Transient, unlike an exhausted day: the same answer on /api/mcp (not its OAuth refusal).
      const detail = `This API key has sent its ${burst.limit} requests for this ${burst.window} window. `
        + `Try again in ${burst.resetSeconds} s.`;
      throw new AppError('RATE_LIMITED', detail, { window: burst.window }, { retryAfterSeconds: burst.resetSeconds });
    }
    const subject = key.kind === 'grant' ? { subject: 'grant' as const, id: key.grant.id } : { subject: 'key' as const, id: key.key.id };
    onExhausted?.({ ...subject, userId: key.user.id, limit: outcome.limit }, now);
    const detail = `This API key has used its ${outcome.limit} requests for today. The quota resets at 00:00 UTC.`;
    throw new AppError('QUOTA_EXCEEDED', detail, {}, { retryAfterSeconds: outcome.resetSeconds });
  }
  /** Nothing to wait for unless the caller is a key whose quota the counter store must count. */
  return function spendKeyQuotaStep(ctx: GatewayContext): Promise<void> | undefined {
    const caller = ctx.state.caller;
    return caller.kind === 'key' || caller.kind === 'grant' ? spend(ctx, caller) : undefined;
  };
}
