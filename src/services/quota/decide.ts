import type { LimitedCounter, SpendAllResult } from '../../store/quota/engine.ts';
import { DAY_TTL_SECONDS, secondsUntilNextUtcDay, utcDayStart } from '../../store/quota/day.ts';
import { RATE_WINDOWS, type RateLimitRule, type RateWindow } from '../../config.ts';

// The per-key request quota, decided purely: a fixed window of one UTC day, and beside it, when the
// key was stamped with any, short fixed windows aligned to the epoch (a `1m` window is a UTC
// minute). What spends it: spend.ts (one call to the counter engine) and lease.ts (leased blocks).
// Where it is counted: src/store/quota/ (engine.ts names each file). Where it becomes rate-limit
// fields and a 429: src/http/quota.ts.

export const quotaCounterName = (keyId: string) => `quota:${keyId}`;

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

/** What a count means against a limit. */
export function evaluateQuota(count: number, limit: number, now: Date): QuotaOutcome {
  return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetSeconds: secondsUntilNextUtcDay(now), windows: [] };
}

const windowStart = (now: Date, seconds: number) => new Date(Math.floor(now.getTime() / (seconds * 1000)) * seconds * 1000);
const secondsToReset = (now: Date, seconds: number) =>
  Math.max(1, Math.ceil((windowStart(now, seconds).getTime() + seconds * 1000 - now.getTime()) / 1000));

/** The counters of one key's day and windows at `now`, the day first. */
export function windowCounters(keyId: string, limit: number, rules: RateLimitRule[], now: Date): LimitedCounter[] {
  const day = quotaCounterName(keyId);
  return [
    { name: day, windowStart: utcDayStart(now), limit, ttlSeconds: DAY_TTL_SECONDS },
    ...rules.map((r) => {
      const seconds = RATE_WINDOWS[r.window];
      // Kept a little past its end, so a clock a second or two apart between instances still reads it.
      return { name: `${day}:${r.window}`, windowStart: windowStart(now, seconds), limit: r.limit, ttlSeconds: seconds + 60 };
    }),
  ];
}

/**
 * What the `index`-th of a group of requests counted together sees: the first `granted` were
 * counted in that order, each seeing what was left after itself; the rest were refused, by the
 * day when it has nothing left (its answer wins), else by the first window with nothing left.
 */
export function outcomeInGroup(
  limit: number, rules: RateLimitRule[], now: Date, { granted, values }: SpendAllResult, index: number,
): QuotaOutcome {
  const allowed = index < granted;
  const counted = (i: number) => (allowed ? values[i]! - granted + index + 1 : values[i]!);
  const windows = rules.map((r, i) => ({
    window: r.window, limit: r.limit, remaining: Math.max(0, r.limit - counted(i + 1)),
    resetSeconds: secondsToReset(now, RATE_WINDOWS[r.window]),
  }));
  const refusedBy = allowed || values[0]! >= limit ? -1 : rules.findIndex((r, i) => values[i + 1]! >= r.limit);
  return {
    allowed,
    limit,
    remaining: Math.max(0, limit - counted(0)),
    resetSeconds: secondsUntilNextUtcDay(now),
    windows,
    ...(refusedBy >= 0 ? { refusedBy: rules[refusedBy]!.window } : {}),
  };
}
