import type { IncomingMessage } from 'node:http';
import { duration, requestTimeout } from './body.ts';
import { toProblem } from './problem.ts';
import type { GatewayContext } from './state.ts';

// A body that sends nothing for 10 s is given up on, on every route (not only forwarded ones). Whoever reads the
// body (parseBody, the MCP transport, the OAuth library) or nobody at all (a request refused before
// its body was read, whose rest Node still waits for) the connection would otherwise stay open for
// Node's requestTimeout, five minutes: 300 such sockets cost an attacker nothing. So the watch is on
// the connection's bytes, not on a reader: one timer per request with a body, re-armed while bytes
// keep coming, standing down once the body is whole. Forwards have a watch of their own that also
// knows when the upstream, not the client, is the one not reading (src/http/proxy/body-stream.ts).

/** How many times within the idle time the socket's byte count is looked at. */
const TICKS = 10;
const watching = new WeakMap<IncomingMessage, NodeJS.Timeout>();
const timedOut = new WeakSet<IncomingMessage>();

const declaresBody = (req: IncomingMessage) => {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
};

/** The forwarder takes the body over, with its own idle rule. */
export function standDown(req: IncomingMessage): void {
  clearTimeout(watching.get(req));
  watching.delete(req);
}

/** This request's body was given up on here: what its reader throws next is no fault. */
export const bodyTimedOut = (req: IncomingMessage) => timedOut.has(req);

/**
 * The client went away before its request was whole (a reset, a close mid-body): the rule says
 * that is no error. A complete request whose client left while it ran is not counted here.
 */
export const clientGone = (req: IncomingMessage) => !req.complete && (req.destroyed || req.socket === null || req.socket.destroyed);

function giveUp(ctx: GatewayContext, idleMs: number): void {
  const { req, res } = ctx;
  timedOut.add(req);
  if (!res.headersSent && !res.writableEnded) {
    // Written here, not thrown: the reader (if any) is stuck in a read that will never finish.
    const body = JSON.stringify(toProblem(requestTimeout(`The request body sent nothing for ${duration(idleMs)}.`), ctx.path));
    res.writeHead(408, { 'Content-Type': 'application/problem+json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    // What is left of the body would be read as the next request: the connection goes.
    res.end(body, () => req.socket?.destroy());
  } else {
    // Answered already (a refusal before the body was read) and the rest never comes.
    req.socket?.destroy();
  }
}

/**
 * Arms the idle rule for a request that declares a body. The front door (app.ts) stands it down
 * when the request is over, the usual case being a body that came whole while the request ran.
 */
export function bodyDeadline(idleMs: number) {
  return function watchBody(ctx: GatewayContext): void {
    const { req } = ctx;
    if (declaresBody(req) && !req.complete && req.socket) {
      const socket = req.socket;
      // Idleness counts from the last byte, not from the request's start: a body whose first chunk
      // came a moment after its headers and then stalled would otherwise be given up to twice the
      // idle time. Node tells no moment of arrival, so the socket's count is looked at every tenth
      // of the idle time, and the quiet is cut within a tenth past it.
      const tick = Math.max(1, Math.ceil(idleMs / TICKS));
      let seen = socket.bytesRead;
      let lastByteAt = performance.now();
      const check = () => {
        if (!watching.has(req) || req.complete || socket.destroyed) return void watching.delete(req);
        const now = performance.now();
        // A full buffer means nobody here is reading yet: the quiet is ours, not the client's.
        if (socket.bytesRead !== seen || req.readableLength >= req.readableHighWaterMark) {
          seen = socket.bytesRead;
          lastByteAt = now;
        }
        const left = lastByteAt + idleMs - now;
        if (left > 0) return void watching.set(req, setTimeout(check, Math.min(tick, left)));
        watching.delete(req);
        giveUp(ctx, idleMs);
      };
      watching.set(req, setTimeout(check, tick));
    }
  };
}
