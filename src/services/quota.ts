import { type CounterStore, secondsUntilNextUtcDay, utcDayStart } from './counters.ts';

// The per-key request quota: a fixed window of one UTC day (CONTRACT section 7).

export const quotaCounterName = (keyId: string) => `quota:${keyId}`;

export interface QuotaOutcome {
  allowed: boolean;
  limit: number;
  /** What is left after this request; 0 once refused. */
  remaining: number;
  /** Seconds until the window resets at 00:00 UTC. */
  resetSeconds: number;
}

/** Pure: what a count means against a limit. */
export function evaluateQuota(count: number, limit: number, now: Date): QuotaOutcome {
  return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetSeconds: secondsUntilNextUtcDay(now) };
}

/** Spends one request of the key's quota; the counter store's atomic increment is the only write. */
export async function spendQuota(counters: CounterStore, keyId: string, limit: number, now: Date): Promise<QuotaOutcome> {
  const count = await counters.increment(quotaCounterName(keyId), utcDayStart(now), 86_400 + 3600);
  return evaluateQuota(count, limit, now);
}

/** The response fields of CONTRACT section 7: the IETF draft's and the older ones. */
export function rateLimitHeaders(q: QuotaOutcome): Record<string, string> {
  return {
    'RateLimit-Policy': `"day";q=${q.limit};w=86400`,
    RateLimit: `"day";r=${q.remaining};t=${q.resetSeconds}`,
    'RateLimit-Limit': String(q.limit),
    'RateLimit-Remaining': String(q.remaining),
    'RateLimit-Reset': String(q.resetSeconds),
  };
}
