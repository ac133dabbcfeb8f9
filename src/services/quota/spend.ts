import type { CounterStore } from '../../store/quota/engine.ts';
import { DAY_TTL_SECONDS, utcDayStart } from '../../store/quota/day.ts';
import { RATE_WINDOWS, type RateLimitRule } from '../../config.ts';
import { evaluateQuota, outcomeInGroup, quotaCounterName, windowCounters, type QuotaOutcome } from './decide.ts';

// A request spent in the counter engine, its one write: the day alone, or the day and the key's
// short windows together. The decision of what the count means is decide.ts.

/** Spends one request of the key's quota; the counter store's atomic increment is the only write. */
export async function spendQuota(counters: CounterStore, keyId: string, limit: number, now: Date): Promise<QuotaOutcome> {
  const count = await counters.increment(quotaCounterName(keyId), utcDayStart(now), DAY_TTL_SECONDS);
  return evaluateQuota(count, limit, now);
}

/**
 * Spends one request in the key's day and every window at once, in one call to the counter store,
 * all or nothing: a request refused by any of them counts in none, so a burst refused by `1s`
 * costs nothing of the minute or the day. Never leased: the counter store alone decides, so the
 * fleet is exact in every window.
 */
export async function spendWithWindows(
  counters: CounterStore, keyId: string, limit: number, rules: RateLimitRule[], now: Date,
): Promise<QuotaOutcome> {
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
export type WindowSpender = (keyId: string, limit: number, rules: RateLimitRule[], now: Date) => Promise<QuotaOutcome>;

export function groupedWindowSpender(counters: CounterStore): WindowSpender {
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
