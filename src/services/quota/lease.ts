import { randomUUID } from 'node:crypto';
import type { CounterStore, QuotaBlockStore } from '../../store/quota/engine.ts';
import { DAY_TTL_SECONDS, utcDayStartMs } from '../../store/quota/day.ts';
import type { Clock } from '../clock.ts';
import type { RateLimitRule } from '../../config.ts';
import type { Swallowed } from '../../errors.ts';
import { evaluateQuota, quotaCounterName, type QuotaOutcome } from './decide.ts';
import { groupedWindowSpender, spendQuota } from './spend.ts';

// While a key has more than `floor` requests left in the window, this instance spends
// from a block leased in one atomic call instead of a counter round trip per request. The last
// `floor` requests are never leased, so they are counted one by one, exactly as an unleased key
// (2, 1, 0, 429). Every block comes back within `blockTtlMs + sweepIntervalMs` (5 s by default):
// spent, or its unspent part handed back by the sweep. A key's first request (and the first after a
// quiet spell of a block's lifetime) is counted one by one; only a key that comes back leases.

export interface QuotaSpender {
  /**
   * `windows`: the key's short windows; a key with any is never leased (see groupedWindowSpender).
   * At once when a leased block pays; a promise when the counter store must be asked.
   */
  spend(keyId: string, limit: number, now: Date, windows?: RateLimitRule[]): QuotaOutcome | Promise<QuotaOutcome>;
  /** Hands back the unspent part of every block older than its lifetime. */
  sweep(): Promise<void>;
  /** Hands back every block (shutdown). */
  close(): Promise<void>;
}

export interface LeaseOptions {
  counters: CounterStore;
  /** Null: no leasing, every request is a counter round trip. */
  blocks: QuotaBlockStore | null;
  clock: Clock;
  floor?: number;
  blockSize?: number;
  blockTtlMs?: number;
  /**
   * How much of a block its holder takes at a time from the block's record in the counter store
   * (Redis or PostgreSQL); the next part is claimed in the background before this one runs out. A
   * holder that dies loses at most this much; the rest of its block returns when the record expires.
   */
  claimSize?: number;
  /** 0: no timer; whoever owns the spender calls sweep() (tests). */
  sweepIntervalMs?: number;
  /** Told of a hand-back or a claim that failed (see handBack and claimNext). */
  swallowed?: Swallowed;
}

interface Holding {
  window: number;
  limit: number;
  /** The record's id in the counter store. */
  id: string;
  /** Requests claimed from the block and not yet spent here. */
  left: number;
  /** What the block's record still holds, as far as this instance knows. */
  unclaimed: number;
  /** A claim of the next part, under way. */
  claiming: Promise<void> | null;
  /** The counter's value when the block was leased, the block included. */
  counted: number;
  leasedAt: number;
  /** The window has `floor` or less left: count one by one until it ends. */
  belowFloor: boolean;
}

/** Counts one by one: the shape a gateway without a block store uses. */
export const oneByOne = (counters: CounterStore): QuotaSpender => {
  const withWindows = groupedWindowSpender(counters);
  return {
    spend: (keyId, limit, now, windows = []) =>
      (windows.length ? withWindows(keyId, limit, windows, now) : spendQuota(counters, keyId, limit, now)),
    sweep: async () => {},
    close: async () => {},
  };
};

export function createQuotaSpender(opts: LeaseOptions): QuotaSpender {
  const { counters, blocks, clock } = opts;
  if (!blocks) return oneByOne(counters);
  const store = blocks;
  const withWindows = groupedWindowSpender(counters);
  const floor = opts.floor ?? 1000;
  const blockSize = opts.blockSize ?? 200;
  const blockTtlMs = opts.blockTtlMs ?? 4000;
  const claimSize = opts.claimSize ?? 25;
  const instance = randomUUID();
  let leases = 0;
  const holdings = new Map<string, Holding>();
  const leasing = new Map<string, Promise<void>>();
  // When each key last spent one by one for want of a block. A key leases only when it comes back
  // within a block's lifetime: a key used once (a hundred thousand keys each asked once, a cron job
  // a day) costs one counter call, as before, instead of a lease and a hand-back, and this
  // instance keeps a number for it rather than a block. Forgotten by the sweep.
  const lastSingle = new Map<string, number>();

  // A hand-back that fails leaves the block counted as spent: the key may lose those requests for
  // the day, but the fleet-wide limit still holds, which is the promise that matters.
  // The record keeps what was not claimed, so that part returns when it expires even then.
  const handBack = async (keyId: string, h: Holding) => {
    if (h.claiming) await h.claiming;
    const unspent = h.left;
    const recorded = h.unclaimed;
    h.left = 0;
    h.unclaimed = 0;
    if (unspent > 0 || recorded > 0) {
      await blocks.handBack(quotaCounterName(keyId), new Date(h.window), h.id, unspent)
        .catch((e) => opts.swallowed?.('block-hand-back', e));
    }
  };

  // A claim that fails or finds the record expired ends the block here: what it held is the
  // store's to return, and the next request leases anew. No request waits on a failed claim, so it
  // is let go, and reported.
  const claimNext = (keyId: string, h: Holding) => {
    h.claiming = blocks.claim(quotaCounterName(keyId), new Date(h.window), h.id, Math.min(claimSize, h.unclaimed), clock().getTime())
      .then((n) => {
        h.left += n;
        h.unclaimed = n > 0 ? h.unclaimed - n : 0;
      }, (e: unknown) => {
        h.unclaimed = 0;
        opts.swallowed?.('block-claim', e);
      })
      .finally(() => void (h.claiming = null));
  };

  const lease = async (keyId: string, limit: number, window: number) => {
    // A store that does not answer rejects with StoreUnavailableError: the request fails closed.
    const leasedAt = clock().getTime();
    const terms = { id: `${instance}:${++leases}`, claim: claimSize, leaseMs: blockTtlMs, nowMs: leasedAt };
    const grant = await blocks.lease(quotaCounterName(keyId), new Date(window), blockSize, limit, floor, DAY_TTL_SECONDS, terms);
    const old = holdings.get(keyId);
    if (old) await handBack(keyId, old);
    holdings.set(keyId, {
      window, limit, id: grant.id, left: grant.claimed, unclaimed: grant.granted - grant.claimed, claiming: null,
      counted: grant.counted, leasedAt, belowFloor: grant.granted === 0,
    });
  };

  /** One request from a live block this instance holds. */
  const fromBlock = (keyId: string, h: Holding, limit: number, now: Date): QuotaOutcome => {
    h.left--;
    if (h.left <= claimSize / 2 && h.unclaimed > 0 && !h.claiming) claimNext(keyId, h);
    // What this instance knew was left when it leased, less what it has spent since.
    return evaluateQuota(h.counted - h.left - h.unclaimed, limit, now);
  };

  function spend(keyId: string, limit: number, now: Date, windows: RateLimitRule[] = []): QuotaOutcome | Promise<QuotaOutcome> {
    // The usual request of a busy key: its block has some left, and nothing need be asked.
    if (!windows.length && limit > floor) {
      const h = holdings.get(keyId);
      const at = now.getTime();
      const live = h && h.left > 0 && !h.belowFloor && h.window === utcDayStartMs(at) && at - h.leasedAt < blockTtlMs;
      if (live) return fromBlock(keyId, h, limit, now);
    }
    return spendAsking(keyId, limit, now, windows);
  }

  async function spendAsking(keyId: string, limit: number, now: Date, windows: RateLimitRule[]): Promise<QuotaOutcome> {
    // A key with short windows is never leased. Its windows must be exact across the fleet, so
    // every request asks the counter store anyway (its requests arriving together in one call);
    // the same atomic call counts its day, exactly, at no extra cost. Leasing the day as well would
    // not save that call, and would let a request pass the day's block while a window refuses it
    // (spending from one and not the other).
    if (windows.length) return withWindows(keyId, limit, windows, now);
    if (limit <= floor) return spendQuota(counters, keyId, limit, now);
    // One by one for a key that may lease: the same call returns expired blocks' records first.
    const window = utcDayStartMs(now.getTime());
    const single = async () =>
      evaluateQuota(await store.spendOne(quotaCounterName(keyId), new Date(window), limit, DAY_TTL_SECONDS, now.getTime()), limit, now);
    for (;;) {
      const h = holdings.get(keyId);
      if (h && h.window === window) {
        if (h.belowFloor) return single();
        if (now.getTime() - h.leasedAt < blockTtlMs) {
          if (h.left > 0) return fromBlock(keyId, h, limit, now);
          if (h.claiming) {
            await h.claiming;
            continue;
          }
        }
      }
      let pending = leasing.get(keyId);
      if (!pending && !h) {
        const last = lastSingle.get(keyId);
        const at = now.getTime();
        if (last === undefined || at - last >= blockTtlMs) {
          lastSingle.set(keyId, at);
          return single();
        }
      }
      // One lease per key at a time; requests arriving meanwhile wait for it and try again.
      if (!pending) {
        lastSingle.delete(keyId);
        pending = lease(keyId, limit, window).finally(() => leasing.delete(keyId));
        leasing.set(keyId, pending);
      }
      await pending;
    }
  }

  async function sweep() {
    const now = clock().getTime();
    const window = utcDayStartMs(now);
    const returning: Promise<void>[] = [];
    for (const [keyId, at] of lastSingle) if (now - at >= blockTtlMs) lastSingle.delete(keyId);
    for (const [keyId, h] of holdings) {
      if (leasing.has(keyId)) continue;
      if (h.window !== window || now - h.leasedAt >= blockTtlMs) {
        holdings.delete(keyId);
        returning.push(handBack(keyId, h));
      }
    }
    await Promise.all(returning);
  }

  const timer = opts.sweepIntervalMs === 0 ? null : setInterval(() => void sweep(), opts.sweepIntervalMs ?? 1000);
  timer?.unref();

  return {
    spend,
    sweep,
    async close() {
      if (timer) clearInterval(timer);
      await Promise.all([...leasing.values()].map((p) => p.catch(() => {})));
      await Promise.all([...holdings].map(([keyId, h]) => handBack(keyId, h)));
      holdings.clear();
      lastSingle.clear();
    },
  };
}
