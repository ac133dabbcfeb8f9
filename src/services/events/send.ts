import { isIP } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
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

/** Why an attempt had no answer: its deadline passed, or the connection failed (the reason, shortened). */
function failure(err: unknown, deadlineMs: number): string {
  const e = err as Error & { cause?: { message?: string } };
  const timedOut = e.name === 'TimeoutError' || e.name === 'AbortError';
  return loggable((timedOut ? `no answer within ${deadlineMs} ms` : (e.cause?.message ?? e.message)).slice(0, 500));
}

/**
 * Reads an answer to MAX_ANSWER_BYTES at most, and only until the attempt's deadline (the request's
 * signal ends the body too); leaving early destroys the body, so nothing more is read or waited for.
 */
async function readAnswer(body: Dispatcher.ResponseData['body']): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= MAX_ANSWER_BYTES) break;
    }
  } catch {
    // The deadline passed, or the connection broke, mid-answer: what arrived is kept.
  }
  return Buffer.concat(chunks);
}

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
      const target = new URL(url);
      const host = target.hostname.replace(/^\[|\]$/g, '');
      const refused = (error: string) => ({ ok: false, status: null, durationMs: took(), error, response: null });
      // Judged at each attempt, not only when the URL was stored: an endpoint registered while
      // private addresses were allowed is held to the rule once they are not.
      if (!opts.allowPrivateAddresses && target.protocol !== 'https:') return refused(`${target.protocol} is not https`);
      // A literal address is connected to without a lookup, so it is judged here.
      if (!opts.allowPrivateAddresses && isIP(host) && !isPublicAddress(host)) return refused(`${host} is not a public address`);
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          method: 'POST', dispatcher: agent, body, signal: AbortSignal.timeout(deadlineMs),
          headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'keygate-webhooks' },
        });
      } catch (err) {
        return { ok: false, status: null, durationMs: took(), error: failure(err, deadlineMs), response: null };
      }
      // The status decides: a 2xx that arrived within the deadline is delivered, even when the rest
      // of its answer is slow or cut off; what arrived of the answer by then is what is logged.
      const answer = loggable((await readAnswer(res.body)).subarray(0, LOGGED_ANSWER_BYTES).toString('utf8'));
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return { ok, status: res.statusCode, durationMs: took(), error: ok ? null : `answered ${res.statusCode}`, response: answer };
    },
    close: () => agent.close(),
  };
}
