import type { Next } from 'koa';
import { AppError } from '../../errors.ts';
import { duration, MAX_BODY_BYTES, requestTimeout, tooLarge } from '../body.ts';
import type { GatewayContext } from '../state.ts';
import { boundedBody, type BoundedBody } from './body-stream.ts';
import { standDown } from '../body-deadline.ts';
import { callerSlots } from './concurrency.ts';
import { forwardHeaders, type PermissionSpelling } from './headers.ts';
import { Ending, gatewayTimeout, relay, type Upstream, type UpstreamAnswer } from './upstream.ts';
import type { CallerSlots } from './concurrency.ts';

// Forwards allowed requests that no local route answered, bounded in every direction:
// how many one caller holds, how long the body may go quiet or take, how long the upstream may
// take to answer, and a client that hangs up takes its upstream connection down with it.

export interface ForwardLimits {
  /**
   * For the whole body to arrive, and then again for the upstream to answer: its head, and the
   * whole of an answer of known length up to 64 KiB (gathered before it is sent on); a larger or
   * unsized answer streams, with undici's timer between two parts.
   */
  timeoutMs: number;
  maxConcurrentPerCaller: number;
  /** A body that sends nothing for this long gets 408. */
  bodyIdleMs: number;
  /** The callers' slots, shared with the MCP tools' forwards; default: this forwarder's own. */
  slots?: CallerSlots;
}

/** Why an exchange ended with nobody left to answer: the client hung up. */
class ClientGone extends Error {
  override name = 'ClientGone';
}

/** Nobody is left to answer; 499 ("client closed request") is what the request log shows for it. */
function goneBeforeAnswer(ctx: GatewayContext): void {
  ctx.status = 499;
  ctx.respond = false;
}

const hasBody = (ctx: GatewayContext) =>
  (ctx.get('content-length') !== '' && ctx.get('content-length') !== '0') || ctx.get('transfer-encoding') !== '';

export function forwardUpstream(
  upstream: Upstream | null,
  apiPrefix: string,
  servedHere: (path: string) => boolean,
  spell: PermissionSpelling,
  limits: ForwardLimits,
) {
  const slots = limits.slots ?? callerSlots(limits.maxConcurrentPerCaller);

  async function exchange(ctx: GatewayContext, up: Upstream): Promise<UpstreamAnswer> {
    const ended = new Ending();
    const end = (reason: Error) => ended.end(reason);
    let deadline: NodeJS.Timeout | undefined;
    const startDeadline = (onExpiry: () => Error) => {
      clearTimeout(deadline);
      deadline = setTimeout(() => end(onExpiry()), limits.timeoutMs);
    };
    let body: BoundedBody | null = null;
    if (hasBody(ctx)) {
      // Its own idle rule from here, which knows when the upstream is the one not reading.
      standDown(ctx.req);
      body = boundedBody(ctx.req, {
        idleMs: limits.bodyIdleMs,
        onBreach: end,
        // The upstream's time to answer starts once it has the whole request.
        onComplete: () => startDeadline(gatewayTimeout),
      });
    }
    // A body that trickles in without ever going quiet is bounded too; a stall while the upstream
    // is not reading what it was sent is the upstream's.
    const overdue = () => (body && !body.complete() && !body.waitingOnUpstream()
      ? requestTimeout(`The request body did not arrive within ${duration(limits.timeoutMs)}.`)
      : gatewayTimeout());
    startDeadline(overdue);
    const onClose = () => {
      if (!ctx.res.writableEnded) end(new ClientGone());
    };
    ctx.res.once('close', onClose);
    // The client may have gone while the caller was resolved; 'close' would not come again.
    if (ctx.res.destroyed) end(new ClientGone());
    try {
      return await up.send({
        method: ctx.method,
        path: ctx.path + ctx.search,
        headers: forwardHeaders(ctx.req.headers, ctx.state.caller, spell, {
          'x-forwarded-for': ctx.ip, 'x-forwarded-host': ctx.host, 'x-forwarded-proto': ctx.protocol,
        }),
        body: body?.stream,
        signal: ended,
      });
    } catch (e) {
      const reason: unknown = ended.aborted ? ended.reason : e;
      body?.stop();
      throw reason;
    } finally {
      clearTimeout(deadline);
      ctx.res.off('close', onClose);
    }
  }

  return async function forwardUpstreamMiddleware(ctx: GatewayContext, next: Next) {
    await next();
    if (ctx.body !== undefined || ctx.status !== 404) return;
    // A path served here with another method is not the upstream's business.
    if (ctx.matched?.length) {
      const allowedMethods = [...new Set<string>(ctx.matched.flatMap((layer: { methods: string[] }) => layer.methods))];
      throw new AppError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported on this route.`, {}, { allowedMethods });
    }
    const underPrefix = ctx.path.startsWith(apiPrefix + '/') || ctx.path === apiPrefix;
    if (!underPrefix || servedHere(ctx.path)) throw new AppError('NOT_FOUND', 'No such route.');
    // Said plainly, so an operator trying a route of their API learns why nothing answers it.
    if (!upstream) throw new AppError('NOT_FOUND', 'No such route here, and forwarding is not configured (upstream.url is not set).');
    // The same 1 MiB limit as bodies read here: refused up front when declared, cut off when not.
    if (Number(ctx.get('content-length') || 0) > MAX_BODY_BYTES) throw tooLarge();
    // Held until the answer has been sent or the client is gone, whichever comes first.
    if (ctx.res.destroyed) return goneBeforeAnswer(ctx);
    const release = slots.take(ctx.state.caller);
    ctx.res.once('close', release);
    let answer: UpstreamAnswer;
    try {
      answer = await exchange(ctx, upstream);
    } catch (e) {
      if (e instanceof ClientGone) return goneBeforeAnswer(ctx);
      throw e;
    }
    relay(ctx, answer);
  };
}
