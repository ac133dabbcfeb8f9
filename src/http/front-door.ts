import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { bodyDeadline, bodyTimedOut, clientGone, standDown } from './body-deadline.ts';
import { handleError } from './problem.ts';
import { requestMetrics } from './request-metrics.ts';
import type { Caller, GatewayContext } from './state.ts';

// The front door, around everything else: request id, the body's idle rule, errors answered as
// problems (or in the form an answerer above http/ claims), then metrics and the log line once the
// answer is known.

const ANONYMOUS: Caller = Object.freeze({ kind: 'anonymous' });

// Read through a function: TypeScript would otherwise keep the narrowing of the initial assignment.
const callerOf = (ctx: GatewayContext): Caller => ctx.state.caller;

/** Answers an error in a form of its own (a page, the MCP endpoint's OAuth refusal); false: not mine. */
export type ErrorAnswerer = (ctx: GatewayContext, err: unknown) => boolean | Promise<boolean>;

export interface FrontDoorDeps {
  logger: Logger;
  registry: Registry;
  bodyIdleMs: number;
  /** Asked in order before an error becomes a problem document. */
  answerers: ErrorAnswerer[];
}

const errorOf = (err: unknown) => ({ name: (err as Error)?.name, message: (err as Error)?.message });

export function frontDoor({ logger, registry, bodyIdleMs, answerers }: FrontDoorDeps) {
  const metrics = requestMetrics(registry);
  const watchBody = bodyDeadline(bodyIdleMs);

  /** Request id and the caller until one is resolved; the header is set before anything can refuse. */
  function begin(ctx: GatewayContext) {
    const requestId = randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.caller = ANONYMOUS;
    ctx.res.setHeader('x-request-id', requestId);
  }

  /** One log line per request (never a header value), metrics. */
  function record(ctx: GatewayContext, started: number) {
    const seconds = (performance.now() - started) / 1000;
    const caller = callerOf(ctx);
    // A client that left mid-request got no answer, whatever a reader of its body made of that
    // (a library may have set 500): 499, as the forwarder records it too, never a 5xx.
    const left = clientGone(ctx.req) && !bodyTimedOut(ctx.req) && !ctx.res.writableFinished;
    const status = ctx.status === 499 || left ? 499 : ctx.status;
    if (status === 499) metrics.abort();
    metrics.observe(ctx.method, status, caller.kind, seconds);
    if (logger.isLevelEnabled('debug') || status >= 500) {
      // A 503 is a store's outage (logged once, when it begins and ends) or a stop: not a warning per request.
      const line = {
        reqId: ctx.state.requestId, method: ctx.method, path: ctx.path, status, ms: Math.round(seconds * 1e4) / 10,
        caller: caller.kind, userId: caller.kind === 'anonymous' ? undefined : caller.user.id,
      };
      logger[status >= 500 && status !== 503 ? 'warn' : 'debug'](line, 'request');
    }
  }

  async function answerError(ctx: GatewayContext, err: unknown) {
    // The client hung up mid-body, or its body went quiet and was answered 408 already: what the
    // reader threw (ECONNRESET, "aborted") is the connection's end, not a store fault.
    if (clientGone(ctx.req) || bodyTimedOut(ctx.req)) {
      const why = bodyTimedOut(ctx.req) ? 'request body went quiet; answered 408' : 'client closed the connection mid-request';
      logger.debug({ reqId: ctx.state.requestId, err: errorOf(err) }, why);
      if (!ctx.res.headersSent) ctx.status = 499;
      ctx.respond = false;
      return;
    }
    for (const answer of answerers) if (await answer(ctx, err)) return;
    handleError(ctx, err, (e) => logger.error({ reqId: ctx.state.requestId, err: e }, 'unexpected error'),
      (e) => logger.warn({ reqId: ctx.state.requestId, code: e.code, err: e.cause }, e.internal));
  }

  return async function frontDoor(ctx: GatewayContext, next: Next) {
    const started = performance.now();
    begin(ctx);
    try {
      watchBody(ctx);
      await next();
    } catch (err) {
      await answerError(ctx, err);
    } finally {
      if (ctx.req.complete) standDown(ctx.req);
      record(ctx, started);
    }
  };
}
