import { type CounterStore, secondsUntilNextUtcDay, utcDayStart } from '../store/counters.ts';

// The per-key request quota: a fixed window of one UTC day.

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
