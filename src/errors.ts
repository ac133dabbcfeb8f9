// Typed errors with a stable code. Services throw them; only src/http/problem.ts turns them into
// responses (status, headers, body), so no service knows about HTTP.

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
  | 'SERVICE_UNAVAILABLE'
  | 'BAD_GATEWAY'
  | 'REQUEST_TIMEOUT'
  | 'HEADERS_TOO_LARGE'
  | 'TOO_MANY_CONCURRENT'
  | 'GATEWAY_TIMEOUT'
  | 'TOO_MANY_ATTEMPTS'
  | 'GRANT_LIMIT'
  | 'TOO_MANY_REGISTRATIONS';

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
  ) {
    super(detail);
  }
}

/** A policy refusal, as the error every entry point throws or reports. */
export const refusalError = (r: Refusal) =>
  new AppError(r.code, r.detail, r.requiredPermission ? { requiredPermission: r.requiredPermission } : {});

export const notFound = (what = 'resource') => new AppError('NOT_FOUND', `No such ${what}.`);

/** A store (PostgreSQL or Redis) that did not answer: fail closed, never guess. */
export const unavailable = (what: string, cause?: unknown) => {
  const e = new AppError('SERVICE_UNAVAILABLE', `The ${what} is unavailable; try again shortly.`);
  if (cause) (e as { cause?: unknown }).cause = cause;
  return e;
};

/**
 * A database that cannot be reached (refused, dropped, shutting down, not accepting connections, or
 * the pool timing out) is an outage, not a bug: the request fails closed with 503.
 */
export function isStoreUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (/^(08|57P|53)/.test(code) || code === '55000' || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code))) return true;
  return typeof message === 'string' && /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(message);
}
