import type { IncomingHttpHeaders } from 'node:http';
import type { Next } from 'koa';
import { Transform } from 'node:stream';
import { Pool as UndiciPool } from 'undici';
import { MAX_BODY_BYTES, tooLarge } from '../body.ts';
import { AppError } from '../../services/errors.ts';
import { SESSION_COOKIE } from '../cookies.ts';
import type { Caller, GatewayContext } from '../state.ts';

// Forwards allowed requests that no local route answered. The upstream learns who is calling from
// the x-keygate-* headers alone: the key and the session cookie never leave the gateway, and
// incoming x-keygate-* headers are dropped so nobody can claim another identity.

const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'trailers',
  'transfer-encoding', 'upgrade', 'host', 'content-length', 'x-api-key', 'x-content-api-key',
]);

function stripSessionCookie(cookie: string | undefined): string | null {
  if (!cookie) return null;
  const kept = cookie.split(';').map((c) => c.trim()).filter((c) => c && !c.startsWith(`${SESSION_COOKIE}=`));
  return kept.length ? kept.join('; ') : null;
}

export function identityHeaders(caller: Caller): Record<string, string> {
  if (caller.kind === 'anonymous') return {};
  const h: Record<string, string> = { 'x-keygate-user-id': caller.user.id, 'x-keygate-subject': caller.kind };
  if (caller.kind === 'key') {
    h['x-keygate-key-id'] = caller.key.id;
    h['x-keygate-permissions'] = caller.key.scopes.join(',');
  }
  return h;
}

export function forwardHeaders(incoming: IncomingHttpHeaders, caller: Caller, extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming)) {
    // Names are compared with "_" read as "-": CGI-style upstreams read them as one, so
    // `x_keygate_user_id` could pass for the gateway's own header and `x_api_key` would leak a key.
    const folded = name.replace(/_/g, '-');
    if (value === undefined || HOP_BY_HOP.has(folded) || folded.startsWith('x-keygate-') || folded === 'cookie') continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const cookie = stripSessionCookie(incoming.cookie);
  if (cookie) out.cookie = cookie;
  if (incoming['content-length'] && !incoming['transfer-encoding']) out['content-length'] = incoming['content-length'];
  return { ...out, ...identityHeaders(caller), ...extra };
}

export interface Upstream {
  /** Sends one request upstream; the response body is a stream the caller must consume. */
  send(req: { method: string; path: string; headers: Record<string, string>; body?: NodeJS.ReadableStream | Transform | string }): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: NodeJS.ReadableStream & { text(): Promise<string>; arrayBuffer(): Promise<ArrayBuffer> } }>;
  close(): Promise<void>;
}

export function createUpstream(url: string): Upstream {
  const base = new URL(url);
  const basePath = base.pathname.replace(/\/$/, '');
  const pool = new UndiciPool(base.origin, { connections: 128, keepAliveTimeout: 10_000 });
  return {
    async send({ method, path, headers, body }) {
      try {
        const res = await pool.request({ method: method as 'GET', path: basePath + path, headers, body: body as string | undefined });
        return { status: res.statusCode, headers: res.headers, body: res.body };
      } catch (e) {
        const err = new AppError('BAD_GATEWAY', 'The upstream service did not answer. Try again shortly.');
        (err as { cause?: unknown }).cause = e;
        throw err;
      }
    },
    close: () => pool.close(),
  };
}

/** Copies an upstream answer onto the Koa response, minus hop-by-hop headers. */
// Answers up to this size are read whole and sent as one buffer: streaming one costs Koa a
// pipeline with its own AbortController per response, a measurable share of a small JSON answer.
const BUFFER_UP_TO = 64 * 1024;

export async function relay(ctx: GatewayContext, res: Awaited<ReturnType<Upstream['send']>>): Promise<void> {
  // A client that hangs up first makes Koa destroy this body, which undici reports as an 'error'
  // event; with no listener that would end the process. Koa still sees the stream end.
  res.body.on('error', () => {});
  ctx.status = res.status;
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    ctx.set(name, value);
  }
  const length = res.headers['content-length'] === undefined ? NaN : Number(res.headers['content-length']);
  if (ctx.method !== 'HEAD' && length <= BUFFER_UP_TO) {
    ctx.body = Buffer.from(await res.body.arrayBuffer());
    return;
  }
  if (Number.isFinite(length)) ctx.length = length;
  ctx.body = res.body;
}

/** Passes a body through, failing the stream once it passes MAX_BODY_BYTES. */
function limitBody(source: NodeJS.ReadableStream): { stream: Transform; exceeded(): boolean } {
  let size = 0;
  let over = false;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        over = true;
        return done(tooLarge());
      }
      done(null, chunk);
    },
  });
  source.pipe(stream);
  return { stream, exceeded: () => over };
}

const hasBody = (ctx: GatewayContext) => ctx.get('content-length') !== '' && ctx.get('content-length') !== '0' || ctx.get('transfer-encoding') !== '';

export function forwardUpstream(upstream: Upstream | null, apiPrefix: string, servedHere: (path: string) => boolean) {
  return async function forwardUpstreamMiddleware(ctx: GatewayContext, next: Next) {
    await next();
    if (ctx.body !== undefined || ctx.status !== 404) return;
    // A path served here with another method is not the upstream's business.
    if (ctx.matched?.length) {
      const allow = [...new Set(ctx.matched.flatMap((layer: { methods: string[] }) => layer.methods))].join(', ');
      throw new AppError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported on this route.`, {}, { Allow: allow });
    }
    const underPrefix = ctx.path.startsWith(apiPrefix + '/') || ctx.path === apiPrefix;
    if (!upstream || !underPrefix || servedHere(ctx.path)) throw new AppError('NOT_FOUND', 'No such route.');
    // The same 1 MiB limit as bodies read here: refused up front when declared, cut off when not.
    if (Number(ctx.get('content-length') || 0) > MAX_BODY_BYTES) throw tooLarge();
    const limited = hasBody(ctx) ? limitBody(ctx.req) : null;
    let res: Awaited<ReturnType<Upstream['send']>>;
    try {
      res = await upstream.send({
        method: ctx.method,
        path: ctx.path + ctx.search,
        headers: forwardHeaders(ctx.req.headers, ctx.state.caller, { 'x-forwarded-for': ctx.ip, 'x-forwarded-host': ctx.host, 'x-forwarded-proto': ctx.protocol }),
        body: limited?.stream,
      });
    } catch (e) {
      if (limited?.exceeded()) throw tooLarge();
      throw e;
    }
    await relay(ctx, res);
  };
}
