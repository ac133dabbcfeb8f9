import type { Logger } from 'pino';
import { StoreUnavailableError } from '../errors.ts';

// Driver errors become the one outage error where the pools and the Redis client are made
// (src/store/db.ts, src/store/quota/redis-client.ts), so no service or route ever reads a driver's error codes.

/**
 * An outage of one store began (with what caused it and, when only part of the store is out, which
 * part) or ended: how long it lasted, from the first call it refused to the first answer after it,
 * and how many requests were answered 503 for it meanwhile.
 */
export type OutageEvent =
  | { state: 'began'; store: string; since: Date; cause: string; part: string | null }
  | { state: 'ended'; store: string; since: Date; lastedMs: number; refused: number };

/**
 * Asks the store whether it answers: null when all of it does, a description of the part that does
 * not (a Cluster's masters that do not) otherwise; rejects when none of it answers.
 */
export type Probe = () => Promise<string | null>;

/** How often a store in an outage is probed: its end is told within this of it answering. */
export const PROBE_EVERY_MS = 500;

/**
 * Whether one store (a pool and its clients, or a Redis client) is in an outage, told to whoever
 * listens once when it begins and once when it ends, however many calls it refuses meanwhile.
 * While it lasts the store is probed on a timer of its own, and the first probe that finds all of it
 * answering ends it: the end is told when the store answers, not when the next request happens to
 * come (there may be none), and a store that answers some calls and refuses others (a Redis Cluster
 * with a master down) is one outage, told as partial, not a line per alternation. Without a probe
 * an outage ends at the first answer `quietMs` after the last refusal.
 */
export class OutageWatch {
  private since: Date | null = null;
  private cause = '';
  private told = false;
  private lastFailure = 0;
  private endedAt = -Infinity;
  private refused = 0;
  private timer: NodeJS.Timeout | null = null;
  private probing = false;
  private closed = false;
  private readonly listeners = new Set<(e: OutageEvent) => void>();
  constructor(readonly store: string, private readonly probe?: Probe, private readonly quietMs = 2_000) {}

  on(listener: (e: OutageEvent) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * A call made at `startedAt` failed. One made before the last outage ended that fails after it (a
   * query sent while the database was frozen, refused once it thawed) is that outage's tail, already
   * told; it does not begin another.
   */
  failed(err: unknown, startedAt = Date.now()): void {
    if (startedAt < this.endedAt) return;
    this.lastFailure = Date.now();
    if (this.since || this.closed) return;
    this.since = new Date(this.lastFailure);
    this.refused = 0;
    this.cause = err instanceof Error ? err.message || err.name : String(err);
    if (!this.probe) return this.begin(null);
    // The first probe says whether all of the store is out or part of it, for the line that begins it.
    void this.runProbe();
    this.timer = setInterval(() => void this.runProbe(), PROBE_EVERY_MS);
    this.timer.unref();
  }

  answered(): void {
    if (this.probe || !this.since || Date.now() - this.lastFailure < this.quietMs) return;
    this.end();
  }

  /** A request was answered 503 because of this outage: what the line that ends it counts. */
  refusedClient(): void {
    if (this.since) this.refused += 1;
  }

  /** No more probes (the store is being closed); an outage still open is not told as ended. */
  close(): void {
    this.closed = true;
    this.stopProbing();
  }

  private async runProbe(): Promise<void> {
    if (this.probing || !this.since) return;
    this.probing = true;
    let part: string | null = null;
    let none = false;
    try {
      part = await this.probe!();
    } catch {
      none = true;
    } finally {
      this.probing = false;
    }
    if (!this.since || this.closed) return;
    if (!this.told) this.begin(part);
    if (!none && part === null) this.end();
  }

  private begin(part: string | null): void {
    this.told = true;
    this.emit({ state: 'began', store: this.store, since: this.since!, cause: this.cause, part });
  }

  private end(): void {
    const since = this.since!;
    this.stopProbing();
    this.since = null;
    this.told = false;
    this.endedAt = Date.now();
    this.emit({ state: 'ended', store: this.store, since, lastedMs: Date.now() - since.getTime(), refused: this.refused });
  }

  private stopProbing(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private emit(e: OutageEvent): void {
    for (const l of this.listeners) l(e);
  }
}

/** The watch of the store each outage error came from, so the answer it became is counted there. */
const watchOfError = new WeakMap<object, OutageWatch>();

/** Ties an outage error made outside the translation (a counter failing fast) to `target`'s watch. */
export function fromStoreOf<E extends object>(target: object, err: E): E {
  const watch = watches.get(target);
  if (watch) watchOfError.set(err, watch);
  return err;
}

/** A request was answered 503 with `err`: counted in the outage of the store it came from. */
export function answeredAsOutage(err: unknown): void {
  if (typeof err === 'object' && err !== null) watchOfError.get(err)?.refusedClient();
}

const watches = new WeakMap<object, OutageWatch>();
const translations = new WeakMap<object, (call: PromiseLike<unknown>) => Promise<unknown>>();

/** The outage watch of a pool or Redis client made by this module's callers. */
export const outageWatchOf = (target: object): OutageWatch | undefined => watches.get(target);

/**
 * Passes a call made on `target` other than through its wrapped methods (a Redis pipeline, whose
 * commands are sent by the pipeline itself) through the same translation and outage watch, so its
 * failure is told as part of the one outage. Unchanged for a target rejectAsOutage did not wrap.
 */
export const throughOutageOf = <T>(target: object, call: PromiseLike<T>): Promise<T> =>
  (translations.get(target)?.(call) as Promise<T> | undefined) ?? Promise.resolve(call);

const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

/**
 * Makes each named method of `target` reject with StoreUnavailableError where the driver's promise
 * rejects with an error `isOutage` accepts; any other error is passed on as it is. A call given a
 * callback is left alone: that is the driver calling itself (pg's pool running a query on one of
 * its clients), and its error reaches the promise-form call that began it, translated there.
 */
export function rejectAsOutage(
  target: object, methods: Iterable<string>, store: string, isOutage: (err: unknown) => boolean, watch = new OutageWatch(store),
): OutageWatch {
  watches.set(target, watch);
  const methodsOf = target as Record<string, unknown>;
  const translate = (err: unknown, startedAt: number) => {
    if (err instanceof StoreUnavailableError) throw err;
    if (!isOutage(err)) {
      watch.answered();
      throw err;
    }
    watch.failed(err, startedAt);
    const outage = new StoreUnavailableError(store, err);
    watchOfError.set(outage, watch);
    throw outage;
  };
  const answered = (v: unknown) => {
    watch.answered();
    return v;
  };
  translations.set(target, (call) => {
    const startedAt = Date.now();
    return Promise.resolve(call).then(answered, (err: unknown) => translate(err, startedAt));
  });
  for (const name of methods) {
    const original = methodsOf[name];
    if (typeof original !== 'function') continue;
    methodsOf[name] = function (this: unknown, ...args: unknown[]): unknown {
      const startedAt = Date.now();
      const result: unknown = original.apply(this, args);
      if (typeof args[args.length - 1] === 'function' || !isThenable(result)) return result;
      return result.then(answered, (err: unknown) => translate(err, startedAt));
    };
  }
  return watch;
}

/**
 * One line when a store's outage begins (with its cause) and one when it ends, not one per refusal:
 * the listener every store's watch is given.
 */
export function logOutages(logger: Pick<Logger, 'error' | 'warn'>): (e: OutageEvent) => void {
  return (e) => {
    if (e.state === 'ended') {
      logger.warn({ store: e.store, since: e.since, lastedMs: e.lastedMs, refused: e.refused }, `${e.store} available again`);
    } else if (e.part) {
      logger.error({ store: e.store, since: e.since, cause: e.cause, part: e.part },
        `${e.store} partly unavailable (${e.part}): what needs that part answers 503 until it answers again`);
    } else {
      logger.error({ store: e.store, since: e.since, cause: e.cause },
        `${e.store} unavailable: what needs it answers 503 until it answers again`);
    }
  };
}

/**
 * Logs the failure of background work (a heartbeat, a flush, a sweep). An outage is told by its
 * store's watch once when it begins and once when it ends, so work that fails because of one says
 * so at debug level only, instead of a warning per task per round for as long as the outage lasts.
 */
export function logTaskFailure(
  logger: (Pick<Logger, 'warn'> & Partial<Pick<Logger, 'debug'>>) | undefined, err: unknown, msg: string,
): void {
  if (err instanceof StoreUnavailableError) logger?.debug?.({ err }, msg);
  else logger?.warn({ err }, msg);
}
