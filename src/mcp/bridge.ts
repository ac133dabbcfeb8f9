import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Context } from 'koa';

// Koa to the SDK's web-standard handler and back. The body was already read and parsed by
// keygate (its size limit, its batch refusal) and goes to the SDK as a value, so the Request
// carries only the method, URL and headers.

export function webRequest(ctx: Context, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(ctx.req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  // The host only completes the URL; the SDK routes nothing on it (Host was checked before).
  return new Request(`http://${ctx.get('host') || 'localhost'}${ctx.url}`, { method: ctx.method, headers, signal });
}

/**
 * Writes the SDK's Response as is. Koa would turn a 202 without a body (a notification's answer)
 * into 204, so the response is written by hand; headers already set on ctx (rate limits) stay.
 */
export async function writeResponse(ctx: Context, response: Response): Promise<void> {
  ctx.respond = false;
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  ctx.res.writeHead(response.status, headers);
  if (!response.body) {
    ctx.res.end();
    return;
  }
  // A client that hangs up mid-stream ends the pipe; there is nobody left to answer.
  await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), ctx.res).catch(() => undefined);
}
