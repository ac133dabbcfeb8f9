import { StoreUnavailableError } from '../errors.ts';

// Driver errors become the one outage error where the pools and the Redis client are made
// (src/store/db.ts, src/store/redis.ts), so no service or route ever reads a driver's error codes.

const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

/**
 * Makes each named method of `target` reject with StoreUnavailableError where the driver's promise
 * rejects with an error `isOutage` accepts; any other error is passed on as it is. A call given a
 * callback is left alone: that is the driver calling itself (pg's pool running a query on one of
 * its clients), and its error reaches the promise-form call that began it, translated there.
 */
export function rejectAsOutage(target: object, methods: Iterable<string>, store: string, isOutage: (err: unknown) => boolean): void {
  const methodsOf = target as Record<string, unknown>;
  const translate = (err: unknown) => {
    throw err instanceof StoreUnavailableError || !isOutage(err) ? err : new StoreUnavailableError(store, err);
  };
  for (const name of methods) {
    const original = methodsOf[name];
    if (typeof original !== 'function') continue;
    methodsOf[name] = function (this: unknown, ...args: unknown[]): unknown {
      const result: unknown = original.apply(this, args);
      if (typeof args[args.length - 1] === 'function' || !isThenable(result)) return result;
      return result.then(undefined, translate);
    };
  }
}
