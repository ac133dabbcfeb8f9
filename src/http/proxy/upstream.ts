import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { Pool as UndiciPool } from 'undici';
import { AppError } from '../../errors.ts';
import type { GatewayContext } from '../state.ts';
import type { HeaderList } from './headers.ts';

export { forwardHeaders, identityHeaders, type HeaderList, type PermissionSpelling } from './headers.ts';

export interface UpstreamRequest {
  method: string;
  path: string;
  /** A list keeps the order it is given; an object is sent in its own key order. */
  headers: Record<string, string> | HeaderList;
  body?: Readable | string;
  /** Aborting it ends the exchange and closes its upstream connection; an AppError reason is thrown as is. */
  signal?: AbortSignal | Ending;
}

export interface UpstreamAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** A stream the caller must consume or destroy. */
  body: NodeJS.ReadableStream & { text(): Promise<string>; arrayBuffer(): Promise<ArrayBuffer> };
}

export interface Upstream {
  send(req: UpstreamRequest): Promise<UpstreamAnswer>;
  close(): Promise<void>;
}

export interface UpstreamOptions {
  /** How long the upstream has to send its answer's headers, and at most between two body chunks. */
  timeoutMs: number;
}

export const gatewayTimeout = () => new AppError('GATEWAY_TIMEOUT', 'The upstream service did not answer in time. Try again shortly.');

const badGateway = (cause: unknown) => {
  const err = new AppError('BAD_GATEWAY', 'The upstream service did not answer. Try again shortly.');
  (err as { cause?: unknown }).cause = cause;
  return err;
};

const codeOf = (e: unknown) => (typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined);

/** What an upstream failure means to the caller: too slow is 504, anything else (refused, reset, dropped) 502. */
export function upstreamFailure(e: unknown): AppError {
  if (e instanceof AppError) return e;
  const code = codeOf(e);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return gatewayTimeout();
  return badGateway(e);
}

const flat = (headers: UpstreamRequest['headers']): string[] | Record<string, string> => {
  if (!Array.isArray(headers)) return headers;
  const out = new Array<string>(headers.length * 2);
  for (let i = 0; i < headers.length; i++) {
    out[2 * i] = headers[i]![0];
    out[2 * i + 1] = headers[i]![1];
  }
  return out;
};

/**
 * An exchange's abort switch, as undici takes one (an emitter of 'abort' with `aborted` and
 * `reason`): what an AbortController does for one exchange, without the cost of making an
 * EventTarget on every forwarded request.
 */
export class Ending extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;
  end(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

export function createUpstream(url: string, opts: UpstreamOptions): Upstream {
  const base = new URL(url);
  const basePath = base.pathname.replace(/\/$/, '');
  // undici's own timers are the backstop for callers that bring no deadline of their own (MCP tools,
  // the content route); the forwarder's deadline also covers the time spent sending the body.
  const pool = new UndiciPool(base.origin, { connections: 128, keepAliveTimeout: 10_000, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
  return {
    async send({ method, path, headers, body, signal }) {
      try {
        const res = await pool.request({ method: method as 'GET', path: basePath + path, headers: flat(headers), body, signal });
        return { status: res.statusCode, headers: res.headers, body: res.body };
      } catch (e) {
        if (signal?.aborted && signal.reason instanceof AppError) throw signal.reason;
        throw upstreamFailure(e);
      }
    },
    close: () => pool.close(),
  };
}

// Hop-by-hop headers of the answer (RFC 9110 7.6.1) describe the upstream's connection only; Koa
// sets the length of what it sends itself.
const ANSWER_DROPPED = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-connection', 'te', 'trailer', 'trailers', 'transfer-encoding', 'upgrade',
  'host', 'content-length', 'x-api-key', 'x-content-api-key',
]);

// Answers up to this size are read whole and sent as one buffer: streaming one costs Koa a
// pipeline with its own AbortController per response, a measurable share of a small JSON answer.
const BUFFER_UP_TO = 64 * 1024;

/** Copies an upstream answer onto the Koa response, minus hop-by-hop headers. */
export async function relay(ctx: GatewayContext, res: UpstreamAnswer): Promise<void> {
  // A client that hangs up first makes Koa destroy this body, which undici reports as an 'error'
  // event; with no listener that would end the process. Koa still sees the stream end.
  res.body.on('error', () => {});
  const listed = new Set(String(res.headers.connection ?? '').split(',').map((t) => t.trim().toLowerCase()));
  const length = res.headers['content-length'] === undefined ? NaN : Number(res.headers['content-length']);
  if (ctx.method !== 'HEAD' && length <= BUFFER_UP_TO) {
    let whole: Buffer;
    try {
      whole = Buffer.from(await res.body.arrayBuffer());
    } catch (e) {
      throw upstreamFailure(e);
    }
    copyHeaders(ctx, res, listed);
    ctx.body = whole;
    return;
  }
  copyHeaders(ctx, res, listed);
  if (Number.isFinite(length)) ctx.length = length;
  ctx.body = res.body;
}

function copyHeaders(ctx: GatewayContext, res: UpstreamAnswer, listed: Set<string>): void {
  ctx.status = res.status;
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined || ANSWER_DROPPED.has(name) || listed.has(name)) continue;
    ctx.set(name, value);
  }
}
