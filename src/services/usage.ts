import type { Pool } from '../store/db.ts';
import * as keys from '../store/apikeys.ts';
import * as usage from '../store/usage.ts';
import { systemEvery, type Clock, type Every } from './clock.ts';
import { notFound } from './errors.ts';

// Daily usage per key (CONTRACT 14): each instance tallies in memory what the quota counted, and
// writes the tallies in one statement every few seconds and on close. A write per request would
// cost as much as the request itself (notes/performance-baselines.md), with either counter store.

export const RETENTION_DAYS = 90;
export const DEFAULT_FLUSH_MS = 5_000;

export interface UsageDeps {
  pool: Pool;
  clock: Clock;
  flushIntervalMs?: number;
  every?: Every;
  /** One call per statement written, for the metric that shows the batching works. */
  onWrite?: () => void;
  onError?: (err: unknown) => void;
}

export interface UsageDay { date: string; requests: number; refused: number }

const DAY_MS = 86_400_000;
const isoDay = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (d: Date, n: number) => new Date(d.getTime() + n * DAY_MS);

export type UsageService = ReturnType<typeof createUsageService>;

export function createUsageService({ pool, clock, flushIntervalMs = DEFAULT_FLUSH_MS, every = systemEvery, onWrite, onError }: UsageDeps) {
  // key id -> UTC day -> counts, since the last flush.
  let pending = new Map<string, Map<string, { requests: number; refused: number }>>();
  let lastPrunedDay = '';
  let flushing: Promise<void> = Promise.resolve();

  async function write(): Promise<void> {
    const batch = pending;
    pending = new Map();
    const deltas: usage.UsageDelta[] = [];
    for (const [keyId, days] of batch) for (const [day, c] of days) deltas.push({ keyId, day, ...c });
    if (deltas.length) {
      try {
        await usage.addUsage(pool, deltas);
        onWrite?.();
      } catch (err) {
        // The database is away: keep the counts for the next flush rather than lose them.
        for (const d of deltas) tally(d.keyId, d.day, d.requests, d.refused);
        onError?.(err);
        return;
      }
    }
    const today = isoDay(clock());
    if (today !== lastPrunedDay) {
      lastPrunedDay = today;
      await usage.deleteUsageBefore(pool, isoDay(addDays(new Date(`${today}T00:00:00Z`), -(RETENTION_DAYS - 1)))).catch(onError ?? (() => {}));
    }
  }

  function tally(keyId: string, day: string, requests: number, refused: number) {
    let days = pending.get(keyId);
    if (!days) pending.set(keyId, (days = new Map()));
    let c = days.get(day);
    if (!c) days.set(day, (c = { requests: 0, refused: 0 }));
    c.requests += requests;
    c.refused += refused;
  }

  // record runs on every key request: the day's name is formatted once a day, not once a request.
  let dayStart = 0;
  let dayName = '';
  const dayOf = (at: Date): string => {
    const t = at.getTime();
    if (dayName === '' || t < dayStart || t >= dayStart + DAY_MS) {
      dayStart = Math.floor(t / DAY_MS) * DAY_MS;
      dayName = isoDay(at);
    }
    return dayName;
  };

  /** Flushes run one after another, so two never write the same tallies. */
  const flush = (): Promise<void> => (flushing = flushing.then(write, write));
  const stopFlushing = every(flushIntervalMs, flush);

  return {
    /** A request the quota counted for this key; `refused` when it was answered 429. */
    record(keyId: string, at: Date, refused: boolean): void {
      tally(keyId, dayOf(at), 1, refused ? 1 : 0);
    },

    flush,

    /**
     * The last `days` UTC days of a key, oldest first, zeros for quiet days. `ownerId` null: any
     * owner's key (admins). A key the caller may not see answers exactly like an unknown one.
     */
    async read(ownerId: string | null, keyId: string, days: number): Promise<{ keyId: string; limit: number; days: UsageDay[] }> {
      const now = clock();
      const row = await keys.findLiveKey(pool, keyId, now);
      if (!row || (ownerId !== null && row.user_id !== ownerId)) throw notFound('API key');
      // This instance's own tallies first, so what it just served is in the answer.
      await flush();
      const to = isoDay(now);
      const from = isoDay(addDays(new Date(`${to}T00:00:00Z`), -(days - 1)));
      const byDay = new Map((await usage.readUsage(pool, keyId, from, to)).map((r) => [r.day, r]));
      const list: UsageDay[] = [];
      for (let i = days - 1; i >= 0; i--) {
        const date = isoDay(addDays(new Date(`${to}T00:00:00Z`), -i));
        const r = byDay.get(date);
        list.push({ date, requests: r?.requests ?? 0, refused: r?.refused ?? 0 });
      }
      return { keyId, limit: row.request_quota, days: list };
    },

    async close(): Promise<void> {
      stopFlushing();
      await flush();
    },
  };
}
