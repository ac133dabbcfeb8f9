// The one vocabulary of errors: typed, with a stable code. Services and stores throw them; only
// src/http/problem.ts turns them into responses (status, headers, body), so neither knows HTTP.
// A leaf: it imports nothing but a type, so every folder may use it.

import type { Refusal } from './policy/refusal.ts';

export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'API_KEYS_DISABLED'
  | 'FEATURE_DISABLED'
  | 'API_KEY_LIMIT'
  | 'UNAUTHENTICATED'
  | 'INVALID_API_KEY'
  | 'INVALID_CREDENTIALS'
  | 'FORBIDDEN'
  | 'USER_BANNED'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'EMAIL_TAKEN'
  | 'PAYLOAD_TOO_LARGE'
  | 'API_KEY_DAILY_LIMIT'
  | 'QUOTA_EXCEEDED'
  | 'RATE_LIMITED'
  | 'SERVICE_UNAVAILABLE'
  | 'BAD_GATEWAY'
  | 'REQUEST_TIMEOUT'
  | 'HEADERS_TOO_LARGE'
  | 'TOO_MANY_CONCURRENT'
  | 'GATEWAY_TIMEOUT'
  | 'TOO_MANY_ATTEMPTS'
  | 'GRANT_LIMIT'
  | 'TOO_MANY_REGISTRATIONS'
  | 'SECRET_ROTATION_PENDING';

export interface FieldError { path: string; message: string }

/** Facts about an error that the HTTP edge turns into headers; values, never header text. */
export interface ErrorData {
  /** When trying again can succeed. */
  retryAfterSeconds?: number;
  /** The methods a route does answer, for a method it does not. */
  allowedMethods?: string[];
  /** The connection cannot carry another request (an unread body is still on it). */
  closeConnection?: boolean;
}

const APP_ERROR = Symbol.for('keygate.AppError');

export class AppError extends Error {
  // The test runner can load this module twice in one process (once through its CommonJS hook, once
  // as ESM); a registered symbol keeps `instanceof` true across both copies, so no typed error is
  // ever mistaken for an unexpected one.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [APP_ERROR]?: boolean })[APP_ERROR] === true;
  }
  readonly [APP_ERROR] = true;
  override name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    /** Safe to show the caller. */
    readonly detail: string,
    /** Extra members of the problem body, e.g. `errors` or `requiredPermission`. */
    readonly extensions: Record<string, unknown> = {},
    readonly data: ErrorData = {},
    /**
     * For the operator's log, never the caller: what went wrong in the gateway's own words (an
     * upstream's socket error, a library's message). The error's `message` is this when given.
     */
    readonly internal?: string,
  ) {
    super(internal ?? detail);
  }
}

/** A policy refusal, as the error every entry point throws or reports. */
export const refusalError = (r: Refusal) =>
  new AppError(r.code, r.detail, r.requiredPermission ? { requiredPermission: r.requiredPermission } : {});

export const notFound = (what = 'resource') => new AppError('NOT_FOUND', `No such ${what}.`);

/**
 * Told of an error its caller lets go: a best-effort cleanup whose failure breaks no promise made to
 * anyone (the composition root counts it and logs the first of each kind, so it is never silent).
 */
export type Swallowed = (what: SwallowedKind, err: unknown) => void;
export type SwallowedKind = 'counter-sweep' | 'create-give-back' | 'block-hand-back' | 'block-claim';

const STORE_UNAVAILABLE = Symbol.for('keygate.StoreUnavailableError');

/**
 * The one outage: a store (PostgreSQL or Redis) that did not answer. Only the factories that make
 * the pools and the Redis client (src/store/db.ts, src/store/quota/redis-client.ts) translate driver errors into
 * it, so a caller that must tell an outage from a bug asks `instanceof` and nothing else; the
 * request fails closed with 503, naming the store, never guessing.
 */
export class StoreUnavailableError extends AppError {
  // Its own brand: the inherited check would take every AppError for an outage.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [STORE_UNAVAILABLE]?: boolean })[STORE_UNAVAILABLE] === true;
  }
  readonly [STORE_UNAVAILABLE] = true;
  override name = 'StoreUnavailableError';
  constructor(
    /** Which store, as a person reads it: "database", "counter store (Redis)". */
    readonly store: string,
    cause?: unknown,
  ) {
    // A store comes back by itself (a restart, a failover, a cluster that covers its slots again),
    // mostly within seconds: a client that honours Retry-After waits that long instead of at once.
    super('SERVICE_UNAVAILABLE', `The ${store} is unavailable; try again shortly.`, {}, { retryAfterSeconds: 1 });
    if (cause !== undefined) this.cause = cause;
  }
}
