import type { Context } from 'koa';
import { AppError, type ErrorCode } from '../errors.ts';
import { answeredAsOutage } from '../store/outage.ts';

// The one place that writes application/problem+json (RFC 9457), and the one place that knows
// which status and headers an error code means.

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
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  BAD_GATEWAY: 502,
  REQUEST_TIMEOUT: 408,
  HEADERS_TOO_LARGE: 431,
  TOO_MANY_CONCURRENT: 429,
  GATEWAY_TIMEOUT: 504,
  TOO_MANY_ATTEMPTS: 429,
  GRANT_LIMIT: 400,
  TOO_MANY_REGISTRATIONS: 429,
  SECRET_ROTATION_PENDING: 409,
};

export const statusOfError = (err: AppError): number => statusOf[err.code];
export const statusOfCode = (code: ErrorCode): number => statusOf[code];

/** The response headers an error's data calls for. */
export function errorHeaders(err: AppError): Record<string, string> {
  const { retryAfterSeconds, allowedMethods, closeConnection } = err.data;
  return {
    ...(retryAfterSeconds !== undefined ? { 'Retry-After': String(retryAfterSeconds) } : {}),
    ...(allowedMethods ? { Allow: allowedMethods.join(', ') } : {}),
    ...(closeConnection ? { Connection: 'close' } : {}),
  };
}

const titles: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout',
  409: 'Conflict', 413: 'Content Too Large', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large',
  500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

export const problemType = (code: string) => `https://keygate.dev/problems/${code.toLowerCase().replace(/_/g, '-')}`;

export interface Problem {
  type: string; title: string; status: number; detail: string; code: string; instance?: string;
  [extension: string]: unknown;
}

export function toProblem(err: AppError, instance?: string): Problem {
  return {
    type: problemType(err.code),
    title: titles[statusOf[err.code]] ?? 'Error',
    status: statusOf[err.code],
    detail: err.detail,
    code: err.code,
    ...(instance ? { instance } : {}),
    ...err.extensions,
  };
}

export function sendProblem(ctx: Context, err: AppError): void {
  ctx.set(errorHeaders(err));
  ctx.status = statusOf[err.code];
  ctx.type = 'application/problem+json';
  ctx.body = toProblem(err, ctx.path);
}

/** Koa and library errors that carry an HTTP status of their own, mapped to our codes. */
function fromHttpError(err: { status?: number; expose?: boolean; message?: string }): AppError | null {
  const byStatus: Partial<Record<number, ErrorCode>> = {
    400: 'VALIDATION_FAILED', 401: 'UNAUTHENTICATED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 413: 'PAYLOAD_TOO_LARGE',
  };
  const code = err.status ? byStatus[err.status] : undefined;
  if (!code) return null;
  // A message the library does not mark as exposable may name internals: the log has it, the caller the title.
  if (err.expose && err.message) return new AppError(code, err.message);
  return new AppError(code, titles[err.status!] ?? 'Error', {}, {}, err.message || undefined);
}

export const internalError = () => ({
  type: 'about:blank',
  title: 'Internal Server Error',
  status: 500,
  detail: 'Something went wrong on our side. The request id in the x-request-id header helps us find it.',
  code: 'INTERNAL',
});

/**
 * Turns whatever a handler threw into a problem. Unknown errors become a 500 that shows no
 * stack or SQL; the full error goes to the log with the request id. A typed error answers its
 * public detail, and its internal message, when it has one, goes to `explain` for the log.
 */
export function handleError(ctx: Context, err: unknown, log: (err: unknown) => void, explain: (err: AppError) => void = () => {}): void {
  const known = err instanceof AppError ? err : typeof err === 'object' && err !== null ? fromHttpError(err as { status?: number }) : null;
  // An outage is one of these too (StoreUnavailableError, 503 naming the store): fail closed.
  // A 503 for an outage is counted in it: the line that ends the outage says what clients saw.
  answeredAsOutage(err);
  if (known) {
    if (known.internal) explain(known);
    return sendProblem(ctx, known);
  }
  log(err);
  ctx.status = 500;
  ctx.type = 'application/problem+json';
  ctx.body = { ...internalError(), instance: ctx.path };
}
