import { isConflict, type Pool } from '../store/db.ts';
import * as keys from '../store/apikeys.ts';
import * as usage from '../store/usage.ts';
import { systemEvery, type Clock, type Every } from './clock.ts';
import { notFound, StoreUnavailableError } from '../errors.ts';

// Daily usage per key and per OAuth grant: each instance tallies in memory what
// the quota counted, and writes the tallies in one statement per table every few seconds and on
// close. A write per request would cost as much as the request itself, with either counter store.
// Reading never writes: what this instance tallied shows once the next flush has run, within the flush interval.

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
  /** A tally the database refused for itself (not an outage): it is dropped, the others written. */
  onDropped?: (tally: { subject: usage.UsageSubject; id: string; day: string }, err: unknown) => void;
}

/** Who a request was counted for: an API key, or the OAuth grant behind an access token. */
export interface UsageCounted { subject: usage.UsageSubject; id: string }

export interface UsageDay { date: string; requests: number; refused: number }

const DAY_MS = 86_400_000;
const isoDay = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (d: Date, n: number) => new Date(d.getTime() + n * DAY_MS);

// What each table's id column can hold; anything else could only fail its whole statement.
const ID_SHAPE: Record<usage.UsageSubject, RegExp> = {
  key: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  grant: /^[A-Za-z0-9_-]{1,64}$/,
};
const SUBJECTS: usage.UsageSubject[] = ['key', 'grant'];

export type UsageService = ReturnType<typeof createUsageService>;

export function createUsageService({
  pool, clock, flushIntervalMs = DEFAULT_FLUSH_MS, every = systemEvery, onWrite, onError, onDropped,
}: UsageDeps) {
  // subject -> id -> UTC day -> counts, since the last flush.
  type Tallies = Record<usage.UsageSubject, Map<string, Map<string, { requests: number; refused: number }>>>;
  const empty = (): Tallies => ({ key: new Map(), grant: new Map() });
  let pending = empty();
  let lastPrunedDay = '';
  let flushing: Promise<void> = Promise.resolve();

  const drop = (d: usage.UsageDelta, err: unknown) => onDropped?.({ subject: d.subject, id: d.id, day: d.day }, err);
  const keep = (ds: usage.UsageDelta[]) => {
    for (const d of ds) tally(d.subject, d.id, d.day, d.requests, d.refused);
  };

  /**
   * One statement for the batch. When the database refuses it for a reason of its own (a value it
   * will not take), each tally is tried alone so that only the bad one is lost; an outage keeps
   * them all for the next flush. Returns false on an outage: what is left is then kept.
   */
  async function writeBatch(subject: usage.UsageSubject, deltas: usage.UsageDelta[]): Promise<boolean> {
    try {
      await usage.addUsage(pool, subject, deltas);
      onWrite?.();
      return true;
    } catch (err) {
      // An outage, or a conflict still unresolved after its retries: the tallies are sound, the
      // moment was not; they wait for the next flush instead of being dropped as bad values.
      if (err instanceof StoreUnavailableError || isConflict(err)) {
        keep(deltas);
        onError?.(err);
        return false;
      }
      if (deltas.length === 1) {
        drop(deltas[0]!, err);
        return true;
      }
    }
    for (let i = 0; i < deltas.length; i++) {
      if (!(await writeBatch(subject, [deltas[i]!]))) {
        keep(deltas.slice(i + 1));
        return false;
      }
    }
    return true;
  }

  async function write(): Promise<void> {
    const batch = pending;
    pending = empty();
    const bySubject = SUBJECTS.map((subject) => {
      const deltas: usage.UsageDelta[] = [];
      for (const [id, days] of batch[subject]) {
        for (const [day, c] of days) {
          const d = { subject, id, day, ...c };
          if (ID_SHAPE[subject].test(id)) deltas.push(d);
          else drop(d, new Error(`not a ${subject} id`));
        }
      }
      return [subject, deltas] as const;
    });
    for (let i = 0; i < bySubject.length; i++) {
      const [subject, deltas] = bySubject[i]!;
      if (deltas.length && !(await writeBatch(subject, deltas))) {
        // The database is away: keep the counts for the next flush rather than lose them.
        for (const [, later] of bySubject.slice(i + 1)) keep(later);
        return;
      }
    }
    const today = isoDay(clock());
    if (today !== lastPrunedDay) {
      lastPrunedDay = today;
      const oldestKept = addDays(new Date(`${today}T00:00:00Z`), -(RETENTION_DAYS - 1));
      await usage.deleteUsageBefore(pool, isoDay(oldestKept)).catch(onError ?? (() => {}));
    }
  }

  function tally(subject: usage.UsageSubject, id: string, day: string, requests: number, refused: number) {
    const table = pending[subject];
    let days = table.get(id);
    if (!days) table.set(id, (days = new Map()));
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
    /** A request the quota counted for this key or grant; `refused` when it was answered 429. */
    record(who: UsageCounted, at: Date, refused: boolean): void {
      tally(who.subject, who.id, dayOf(at), 1, refused ? 1 : 0);
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
