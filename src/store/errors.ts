// Storage speaks no HTTP and knows no service error codes; the edge decides what an outage answers.

/** A store (Redis or PostgreSQL) that did not answer. Callers fail closed. */
const STORE_UNAVAILABLE = Symbol.for('keygate.StoreUnavailableError');

export class StoreUnavailableError extends Error {
  // As AppError: `instanceof` holds across the two copies a test runner may load.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [STORE_UNAVAILABLE]?: boolean })[STORE_UNAVAILABLE] === true;
  }
  readonly [STORE_UNAVAILABLE] = true;
  override name = 'StoreUnavailableError';
  constructor(
    /** Which store, as a person reads it: "counter store (Redis)". */
    readonly store: string,
    cause?: unknown,
  ) {
    super(`the ${store} did not answer`, cause === undefined ? undefined : { cause });
  }
}
