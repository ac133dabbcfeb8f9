import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { Pool as UndiciPool, type Dispatcher } from 'undici';
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
  /**
   * An answer of known length up to BUFFER_UP_TO bytes arrives whole; any other (no length, larger,
   * or the answer to a HEAD) as a stream the caller must consume or destroy.
   */
  body: Buffer | Readable;
}

export interface Upstream {
  send(req: UpstreamRequest): Promise<UpstreamAnswer>;
  close(): Promise<void>;
}

export interface UpstreamOptions {
  /** How long the upstream has to send its answer's headers, and at most between two body chunks. */
  timeoutMs: number;
}

export const gatewayTimeout = (internal?: string) =>
  new AppError('GATEWAY_TIMEOUT', 'The upstream service did not answer in time. Try again shortly.', {}, {}, internal);

const codeOf = (e: unknown) => (typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined);

// The caller learns only that the upstream failed; the socket's own words (ECONNREFUSED and the
// address, a reset) would map the operator's network for anyone, so they go to the log alone.
const badGateway = (cause: unknown) => {
  const why = [codeOf(cause), cause instanceof Error ? cause.message : String(cause)].filter(Boolean).join(' ');
  const err = new AppError('BAD_GATEWAY', 'The upstream service did not answer. Try again shortly.', {}, {}, `upstream failed: ${why}`);
  (err as { cause?: unknown }).cause = cause;
  return err;
};

/** What an upstream failure means to the caller: too slow is 504, anything else (refused, reset, dropped) 502. */
export function upstreamFailure(e: unknown): AppError {
  if (e instanceof AppError) return e;
  const code = codeOf(e);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return gatewayTimeout(`upstream timed out: ${code}`);
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

// Answers up to this size are read whole and sent as one buffer: streaming one costs Koa a
// pipeline with its own AbortController per response, a measurable share of a small JSON answer.
const BUFFER_UP_TO = 64 * 1024;

type AbortSwitch = NonNullable<UpstreamRequest['signal']>;

/** Calls `fn` once when `signal` aborts; returns what stops listening. */
function onAbort(signal: AbortSwitch, fn: () => void): () => void {
  if (signal instanceof Ending) {
    signal.once('abort', fn);
    return () => signal.off('abort', fn);
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}

const noop = () => {};

/**
 * One exchange with the upstream, as undici's dispatcher drives it. Written out rather than
 * undici's `request()`, which wraps every answer in a stream of its own behind an async resource:
 * a small answer of known length is gathered here and handed over whole, and only the others
 * become a stream, which pauses the upstream connection while its reader is behind.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private settled = false;
  private chunks: Buffer[] | null = null;
  private stream: Readable | null = null;
  private head: { status: number; headers: UpstreamAnswer['headers'] } | null = null;
  private stopListening = noop;
  private ended = false;

  constructor(
    private readonly headOnly: boolean,
    private readonly requestBody: UpstreamRequest['body'],
    private readonly resolve: (answer: UpstreamAnswer) => void,
    private readonly reject: (e: unknown) => void,
    private readonly signal: AbortSwitch | undefined,
  ) {
    if (signal) this.stopListening = onAbort(signal, () => this.abort(signal.reason));
  }

  private abort(reason: unknown): void {
    const err = reason instanceof Error ? reason : new Error('aborted');
    if (this.controller) this.controller.abort(err);
    else this.fail(err);
  }

  private answer(body: UpstreamAnswer['body']): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve({ status: this.head!.status, headers: this.head!.headers, body });
  }

  private fail(e: unknown): void {
    this.stopListening();
    if (this.requestBody && typeof this.requestBody !== 'string' && !this.requestBody.destroyed) this.requestBody.destroy();
    if (!this.settled) {
      this.settled = true;
      // The switch's own reason (a deadline's 504, a body's 413) is the answer, whatever undici made of it.
      this.reject(this.signal?.aborted && this.signal.reason instanceof AppError ? this.signal.reason : upstreamFailure(e));
    } else if (this.stream && !this.stream.destroyed) this.stream.destroy(upstreamFailure(e));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal?.aborted) this.abort(this.signal.reason);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamAnswer['headers']): void {
    // 1xx (100 Continue, 103 Early Hints) are the upstream's business: the answer is still to come.
    if (statusCode < 200) return;
    this.head = { status: statusCode, headers };
    const declared = headers['content-length'];
    const length = typeof declared === 'string' ? Number(declared) : NaN;
    if (!this.headOnly && length <= BUFFER_UP_TO) {
      this.chunks = [];
      return;
    }
    this.stream = new Readable({
      read: () => controller.resume(),
      destroy: (err, done) => {
        // The reader went away (a client that hung up): the upstream connection goes with it.
        if (!controller.aborted && !this.ended) controller.abort(err ?? new Error('the answer was not read to its end'));
        done(err);
      },
    });
    // An error (the upstream failing mid-answer) may come before the reader has attached: with no
    // listener it would end the process. Readers (Koa's pipeline, textOf) still see it.
    this.stream.on('error', noop);
    this.stopListening();
    this.answer(this.stream);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.chunks) this.chunks.push(chunk);
    else if (this.stream && !this.stream.push(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.ended = true;
    if (this.chunks) {
      this.stopListening();
      const whole = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      this.chunks = null;
      this.answer(whole);
    } else this.stream?.push(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }
}

export function createUpstream(url: string, opts: UpstreamOptions): Upstream {
  const base = new URL(url);
  const basePath = base.pathname.replace(/\/$/, '');
  // undici's own timers are the backstop for callers that bring no deadline of their own (MCP tools,
  // the content route); the forwarder's deadline also covers the time spent sending the body.
  const pool = new UndiciPool(base.origin, {
    connections: 128, keepAliveTimeout: 10_000, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs,
  });
  return {
    send({ method, path, headers, body, signal }) {
      return new Promise<UpstreamAnswer>((resolve, reject) => {
        // Already over (the client left, a deadline passed): nothing is sent, and no connection is
        // waited for only to be torn down.
        if (signal?.aborted) {
          reject(signal.reason instanceof AppError ? signal.reason : upstreamFailure(signal.reason));
          return;
        }
        const exchange = new Exchange(method === 'HEAD', body, resolve, reject, signal);
        pool.dispatch({ method: method as Dispatcher.HttpMethod, path: basePath + path, headers: flat(headers), body }, exchange);
      });
    },
    close: () => pool.close(),
  };
}

/** An answer's body as text, read whole. */
export async function textOf(body: UpstreamAnswer['body']): Promise<string> {
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  const parts: Buffer[] = [];
  for await (const part of body) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

// Hop-by-hop headers of the answer (RFC 9110 7.6.1) describe the upstream's connection only; Koa
// sets the length of what it sends itself.
const ANSWER_DROPPED = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-connection', 'te', 'trailer', 'trailers', 'transfer-encoding', 'upgrade',
  'host', 'content-length', 'x-api-key', 'x-content-api-key',
]);

/** Copies an upstream answer onto the Koa response, minus hop-by-hop headers. */
export function relay(ctx: GatewayContext, res: UpstreamAnswer): void {
  const listed = new Set(String(res.headers.connection ?? '').split(',').map((t) => t.trim().toLowerCase()));
  copyHeaders(ctx, res, listed);
  if (Buffer.isBuffer(res.body)) {
    ctx.body = res.body;
    return;
  }
  const length = res.headers['content-length'] === undefined ? NaN : Number(res.headers['content-length']);
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
