import { StoreUnavailableError } from '../errors.ts';

// Driver errors become the one outage error where the pools and the Redis client are made
// (src/store/db.ts, src/store/redis.ts), so no service or route ever reads a driver's error codes.

/** An outage of one store began (with what caused it) or ended (how long it lasted, how many calls it refused). */
export type OutageEvent =
  | { state: 'began'; store: string; since: Date; cause: string }
  | { state: 'ended'; store: string; since: Date; lastedMs: number; refused: number };

/**
 * Whether one store (a pool and its clients, or a Redis client) is in an outage, told to whoever
 * listens once when it begins and once when it ends, however many calls it refuses meanwhile. An
 * outage ends at the first answer that comes `quietMs` after the last refusal, so a store that
 * answers some calls and refuses others (a Redis Cluster with a master down) is one outage, not a
 * line per alternation.
 */
export class OutageWatch {
  private since: Date | null = null;
  private lastFailure = 0;
  private refused = 0;
  private readonly listeners = new Set<(e: OutageEvent) => void>();
  constructor(readonly store: string, private readonly quietMs = 2_000) {}

  on(listener: (e: OutageEvent) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  failed(err: unknown): void {
    this.lastFailure = Date.now();
    this.refused += 1;
    if (this.since) return;
    this.since = new Date(this.lastFailure);
    this.refused = 1;
    const cause = err instanceof Error ? err.message || err.name : String(err);
    this.emit({ state: 'began', store: this.store, since: this.since, cause });
  }

  answered(): void {
    if (!this.since || Date.now() - this.lastFailure < this.quietMs) return;
    const since = this.since;
    this.since = null;
    this.emit({ state: 'ended', store: this.store, since, lastedMs: this.lastFailure - since.getTime(), refused: this.refused });
  }

  private emit(e: OutageEvent): void {
    for (const l of this.listeners) l(e);
  }
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
export function rejectAsOutage(target: object, methods: Iterable<string>, store: string, isOutage: (err: unknown) => boolean, watch = new OutageWatch(store)): OutageWatch {
  watches.set(target, watch);
  const methodsOf = target as Record<string, unknown>;
  const translate = (err: unknown) => {
    if (err instanceof StoreUnavailableError) throw err;
    if (!isOutage(err)) {
      watch.answered();
      throw err;
    }
    watch.failed(err);
    throw new StoreUnavailableError(store, err);
  };
  const answered = (v: unknown) => {
    watch.answered();
    return v;
  };
  translations.set(target, (call) => Promise.resolve(call).then(answered, translate));
  for (const name of methods) {
    const original = methodsOf[name];
    if (typeof original !== 'function') continue;
    methodsOf[name] = function (this: unknown, ...args: unknown[]): unknown {
      const result: unknown = original.apply(this, args);
      if (typeof args[args.length - 1] === 'function' || !isThenable(result)) return result;
      return result.then(answered, translate);
    };
  }
  return watch;
}
