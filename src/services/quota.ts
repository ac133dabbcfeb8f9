import { type CounterStore, type LimitedCounter, type SpendAllResult, secondsUntilNextUtcDay, utcDayStart } from '../store/counters.ts';
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

/** The counters of one key's day and windows at `now`, the day first. */
function windowCounters(keyId: string, limit: number, rules: RateLimitRule[], now: Date): LimitedCounter[] {
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
function outcomeInGroup(limit: number, rules: RateLimitRule[], now: Date, { granted, values }: SpendAllResult, index: number): QuotaOutcome {
  const allowed = index < granted;
  const counted = (i: number) => (allowed ? values[i]! - granted + index + 1 : values[i]!);
  const windows = rules.map((r, i) => ({
    window: r.window, limit: r.limit, remaining: Math.max(0, r.limit - counted(i + 1)), resetSeconds: secondsToReset(now, RATE_WINDOWS[r.window]),
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

/**
 * Spends one request in the key's day and every window at once, in one call to the counter store,
 * all or nothing: a request refused by any of them counts in none, so a burst refused by `1s`
 * costs nothing of the minute or the day. Never leased: the counter store alone decides, so the
 * fleet is exact in every window.
 */
export async function spendWithWindows(counters: CounterStore, keyId: string, limit: number, rules: RateLimitRule[], now: Date): Promise<QuotaOutcome> {
  return outcomeInGroup(limit, rules, now, await counters.spendAll(windowCounters(keyId, limit, rules, now), 1), 0);
}

/** The same windows and limits (a key's cached record keeps one array; a grant is read anew each time). */
const sameRules = (a: RateLimitRule[], b: RateLimitRule[]) =>
  a === b || (a.length === b.length && a.every((r, i) => r.window === b[i]!.window && r.limit === b[i]!.limit));

/** At most this many requests of one key share one call. */
const MAX_GROUP = 1000;

interface Group {
  keyId: string;
  limit: number;
  rules: RateLimitRule[];
  /** Start of the shortest window, in ms: every longer window and the day divide into it. */
  slot: number;
  first: Date;
  waiting: { now: Date; resolve(o: QuotaOutcome): void; reject(e: unknown): void }[];
}

/**
 * spendWithWindows for a busy key: the requests of one key that arrive in one turn of the event
 * loop (a burst on many connections) are counted by one call to the counter store, the grant
 * covering the first of them in arrival order and refusing the rest. It is no lease: nothing is
 * counted for a request that is not in hand, every request waits for the store's answer, and the
 * store alone still decides, so the fleet stays exact in every window. A lone request is a group
 * of one.
 */
export function groupedWindowSpender(counters: CounterStore): (keyId: string, limit: number, rules: RateLimitRule[], now: Date) => Promise<QuotaOutcome> {
  const open = new Map<string, Group>();
  const send = (g: Group) => {
    if (open.get(g.keyId) === g) open.delete(g.keyId);
    const { waiting } = g;
    counters.spendAll(windowCounters(g.keyId, g.limit, g.rules, g.first), waiting.length).then(
      (result) => waiting.forEach((w, i) => w.resolve(outcomeInGroup(g.limit, g.rules, w.now, result, i))),
      (err: unknown) => waiting.forEach((w) => w.reject(err)),
    );
  };
  return (keyId, limit, rules, now) => {
    const seconds = RATE_WINDOWS[rules[0]!.window];
    const slot = Math.floor(now.getTime() / (seconds * 1000));
    let g = open.get(keyId);
    // Only requests that count in the very same windows under the very same stamp share a call.
    if (!g || g.slot !== slot || g.limit !== limit || !sameRules(g.rules, rules) || g.waiting.length >= MAX_GROUP) {
      g = { keyId, limit, rules, slot, first: now, waiting: [] };
      open.set(keyId, g);
      // After the I/O of this turn of the loop: the other connections' requests of the key join.
      setImmediate(send, g);
    }
    const group = g;
    return new Promise<QuotaOutcome>((resolve, reject) => group.waiting.push({ now, resolve, reject }));
  };
}
