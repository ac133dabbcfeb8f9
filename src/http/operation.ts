import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import type { z } from 'zod';
import type { ErrorCode } from '../errors.ts';
import type { GatewayState } from './state.ts';

// A route as its file declares it, once: the method and path the router serves, and what the
// OpenAPI document (openapi.ts) says about it. Route files export their operations beside their
// handlers and register each with `serve`, so the document cannot list a route the router lacks.

export interface Operation {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** As the router matches it, relative to where the router is mounted: `:id` is one segment. */
  path: string;
  summary: string;
  tag: 'auth' | 'keys' | 'admin' | 'oauth' | 'mcp' | 'meta';
  body?: z.ZodType;
  /** The body must be sent (every body is optional otherwise). */
  bodyRequired?: boolean;
  /** The body's media type when it is not JSON (a form). */
  bodyContentType?: string;
  query?: z.ZodType;
  ok: { status: number; schema: z.ZodType | null; contentType?: string };
  /** Other answers that are not problems, e.g. readiness's 503 with its checks. */
  also?: { status: number; schema: z.ZodType; description: string };
  /** Answers given instead of the ones built from `ok` and the problems (the MCP endpoint's). */
  answers?: Record<number, { description: string; schema?: z.ZodType; contentType?: string; withProblems?: boolean }>;
  problems?: ErrorCode[];
  /** Who may call: `mcp` is a key or an OAuth token in x-api-key or Authorization: Bearer. */
  security?: 'public' | 'caller' | 'session' | 'admin' | 'mcp';
  operationId?: string;
}

/** What every key route can also answer: keys turned off (http/gate.ts), a key that is not yours. */
export const KEY_ROUTE: ErrorCode[] = ['API_KEYS_DISABLED', 'NOT_FOUND'];

/**
 * A page as its file declares it: the method and path its router serves and what it is for. Pages
 * answer HTML (or a redirect), so they carry no schemas; the OpenAPI document describes them from
 * the routes served.
 */
export interface PageOperation {
  method: 'get' | 'post';
  path: string;
  summary: string;
}

/** Registers `handler` at the operation's (or the page's) method and path. */
export function serve(router: Router<GatewayState>, op: Operation | PageOperation, handler: RouterMiddleware<GatewayState>): void {
  router.register(op.path, [op.method.toUpperCase()], handler);
}
