// Typed errors with a stable code. Services throw them; only src/http/problem.ts turns them into
// responses, so no service knows about HTTP beyond the status its code maps to.

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
  | 'BAD_GATEWAY';

const statusOf: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  API_KEYS_DISABLED: 400,
  FEATURE_DISABLED: 400,
  API_KEY_LIMIT: 400,
  UNAUTHENTICATED: 401,
  INVALID_API_KEY: 401,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  USER_BANNED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  EMAIL_TAKEN: 409,
  PAYLOAD_TOO_LARGE: 413,
  API_KEY_DAILY_LIMIT: 429,
  QUOTA_EXCEEDED: 429,
  SERVICE_UNAVAILABLE: 503,
  BAD_GATEWAY: 502,
};

export interface FieldError { path: string; message: string }

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    /** Safe to show the caller. */
    readonly detail: string,
    /** Extra members of the problem body, e.g. `errors` or `requiredPermission`. */
    readonly extensions: Record<string, unknown> = {},
    /** Response headers, e.g. Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.status = statusOf[code];
  }
}

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
