import { type CounterStore, secondsUntilNextUtcDay, utcDayStart } from '../store/counters.ts';
import { RATE_WINDOWS, type RateLimitRule, type RateWindow } from '../config.ts';

// The per-key request quota: a fixed window of one UTC day, and beside it, when the key was
// stamped with any, short fixed windows aligned to the epoch (a `1m` window is a UTC minute).

export const quotaCounterName = (keyId: string) => `quota:${keyId}`;
const DAY_TTL_SECONDS = 86_400 + 3600;

export interface WindowOutcome {
  window: RateWindow;
  limit: number;
  /** What is left in the window after this request (unchanged when refused). */
  remaining: number;
  /** Seconds until the window resets, at least 1. */
  resetSeconds: number;
}

export interface QuotaOutcome {
  allowed: boolean;
  limit: number;
  /** What is left after this request; 0 once refused. */
  remaining: number;
  /** Seconds until the window resets at 00:00 UTC. */
  resetSeconds: number;
  /** The key's short windows, shortest first; [] for a key without any. */
  windows: WindowOutcome[];
  /** The short window that refused the request (the day was not exhausted). */
  refusedBy?: RateWindow;
}

/** Pure: what a count means against a limit. */
export function evaluateQuota(count: number, limit: number, now: Date): QuotaOutcome {
  return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetSeconds: secondsUntilNextUtcDay(now), windows: [] };
}

/** Spends one request of the key's quota; the counter store's atomic increment is the only write. */
export async function spendQuota(counters: CounterStore, keyId: string, limit: number, now: Date): Promise<QuotaOutcome> {
  const count = await counters.increment(quotaCounterName(keyId), utcDayStart(now), DAY_TTL_SECONDS);
  return evaluateQuota(count, limit, now);
}

const windowStart = (now: Date, seconds: number) => new Date(Math.floor(now.getTime() / (seconds * 1000)) * seconds * 1000);
const secondsToReset = (now: Date, seconds: number) =>
  Math.max(1, Math.ceil((windowStart(now, seconds).getTime() + seconds * 1000 - now.getTime()) / 1000));

/**
 * Spends one request in the key's day and every window at once, in one call to the counter store,
 * all or nothing: a request refused by any of them counts in none, so a burst refused by `1s`
 * costs nothing of the minute or the day. Never leased: each request is a round trip, and the
 * counter store alone decides, so the fleet is exact in every window.
 */
export async function spendWithWindows(counters: CounterStore, keyId: string, limit: number, rules: RateLimitRule[], now: Date): Promise<QuotaOutcome> {
  const day = quotaCounterName(keyId);
  const { refusedBy, values } = await counters.spendAll([
    { name: day, windowStart: utcDayStart(now), limit, ttlSeconds: DAY_TTL_SECONDS },
    ...rules.map((r) => {
      const seconds = RATE_WINDOWS[r.window];
      // Kept a little past its end, so a clock a second or two apart between instances still reads it.
      return { name: `${day}:${r.window}`, windowStart: windowStart(now, seconds), limit: r.limit, ttlSeconds: seconds + 60 };
    }),
  ]);
  const windows = rules.map((r, i) => ({
    window: r.window, limit: r.limit, remaining: Math.max(0, r.limit - values[i + 1]!), resetSeconds: secondsToReset(now, RATE_WINDOWS[r.window]),
  }));
  return {
    allowed: refusedBy === -1,
    limit,
    remaining: Math.max(0, limit - values[0]!),
    resetSeconds: secondsUntilNextUtcDay(now),
    windows,
    ...(refusedBy > 0 ? { refusedBy: rules[refusedBy - 1]!.window } : {}),
  };
}
