import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { isPublicAddress, publicOnlyLookup } from './address-guard.ts';
import type { AttemptResult } from '../../store/webhook-claims.ts';

/** An answer is read to this much at most; the rest is not waited for. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** What the attempt log keeps of an answer. */
export const LOGGED_ANSWER_BYTES = 1024;
/** An attempt that has no 2xx answer within this is a failure. */
export const ATTEMPT_DEADLINE_MS = 10_000;

/** The log's text columns hold no NUL: an answer (or an error) carrying one is kept with U+FFFD in its place. */
const loggable = (text: string): string => text.replaceAll('\u0000', '\ufffd');

export interface Sender {
  send(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult>;
  close(): Promise<void>;
}

/**
 * Posts one event. No redirect is followed (a 3xx is a failure), so an endpoint cannot bounce the
 * request to an address the guard would refuse; the connection resolves names through the guard.
 */
export function createSender(opts: { allowPrivateAddresses: boolean; deadlineMs?: number }): Sender {
  const deadlineMs = opts.deadlineMs ?? ATTEMPT_DEADLINE_MS;
  const agent = new Agent({
    connect: { timeout: deadlineMs, ...(opts.allowPrivateAddresses ? {} : { lookup: publicOnlyLookup }) },
    headersTimeout: deadlineMs, bodyTimeout: deadlineMs, connections: 64,
  });
  return {
    async send(url, headers, body) {
      const started = performance.now();
      const took = () => Math.round(performance.now() - started);
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      // A literal address is connected to without a lookup, so it is judged here.
      if (!opts.allowPrivateAddresses && isIP(host) && !isPublicAddress(host)) {
        return { ok: false, status: null, durationMs: took(), error: `${host} is not a public address`, response: null };
      }
      try {
        const res = await request(url, {
          method: 'POST', dispatcher: agent, body, signal: AbortSignal.timeout(deadlineMs),
          headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'keygate-webhooks' },
        });
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= MAX_ANSWER_BYTES) break;
        }
        // Leaving the loop early (a huge answer) destroys the body; nothing more is read.
        const answer = loggable(Buffer.concat(chunks).subarray(0, LOGGED_ANSWER_BYTES).toString('utf8'));
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        return { ok, status: res.statusCode, durationMs: took(), error: ok ? null : `answered ${res.statusCode}`, response: answer };
      } catch (err) {
        const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
        const timedOut = e.name === 'TimeoutError' || e.name === 'AbortError';
        const why = timedOut ? `no answer within ${deadlineMs} ms` : (e.cause?.message ?? e.message);
        return { ok: false, status: null, durationMs: took(), error: loggable(why.slice(0, 500)), response: null };
      }
    },
    close: () => agent.close(),
  };
}
