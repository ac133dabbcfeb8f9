import type { Context } from 'koa';
import { AppError, isStoreUnavailable, type ErrorCode } from '../services/errors.ts';

// The one place that writes application/problem+json (RFC 9457).

const titles: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict',
  413: 'Content Too Large', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable',
};

export const problemType = (code: string) => `https://keygate.dev/problems/${code.toLowerCase().replace(/_/g, '-')}`;

export interface Problem {
  type: string; title: string; status: number; detail: string; code: string; instance?: string;
  [extension: string]: unknown;
}

export function toProblem(err: AppError, instance?: string): Problem {
  return {
    type: problemType(err.code),
    title: titles[err.status] ?? 'Error',
    status: err.status,
    detail: err.detail,
    code: err.code,
    ...(instance ? { instance } : {}),
    ...err.extensions,
  };
}

export function sendProblem(ctx: Context, err: AppError): void {
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  ctx.status = err.status;
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
  return new AppError(code, err.expose && err.message ? err.message : titles[err.status!] ?? 'Error');
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
 * stack or SQL; the full error goes to the log with the request id.
 */
export function handleError(ctx: Context, err: unknown, log: (err: unknown) => void): void {
  if (err instanceof AppError) return sendProblem(ctx, err);
  const http = typeof err === 'object' && err !== null ? fromHttpError(err as { status?: number }) : null;
  if (http) return sendProblem(ctx, http);
  log(err);
  if (isStoreUnavailable(err)) return sendProblem(ctx, new AppError('SERVICE_UNAVAILABLE', 'The database is unavailable; try again shortly. Nothing was changed.'));
  ctx.status = 500;
  ctx.type = 'application/problem+json';
  ctx.body = { ...internalError(), instance: ctx.path };
}
