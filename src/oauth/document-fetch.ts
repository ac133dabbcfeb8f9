import { lookup as dnsLookup } from 'node:dns/promises';
import { request } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { isPublicAddress } from '../services/outbound-address.ts';

// How the authorization server fetches a client's metadata document (a client_id that is an https
// URL). Anyone may send such a client_id, anonymously, so each fetch is an outbound request on a
// stranger's word: SSRF and port scanning of the gateway's own networks, and a way to hold its
// connections open. The name is resolved here and every address checked before any connection;
// the connection goes to the checked address (TLS still verifies the name), so DNS cannot answer
// one address to the check and another to the connect. One try, one deadline for everything.

export interface DocumentFetchOptions {
  /** Loopback and private addresses allowed (tests, with their own authority). */
  allowPrivateAddresses: boolean;
  /** A certificate authority trusted beside the system's (tests only). */
  ca?: string | undefined;
  /** The whole fetch: lookup, connect, TLS, headers and body. */
  deadlineMs?: number;
  maxBytes?: number;
  /** How long a failed URL is answered from memory without connecting again. */
  failureMemoryMs?: number;
  /** Fetches under way at once; past it a fetch is refused at once. */
  maxConcurrent?: number;
  lookup?: (host: string) => Promise<{ address: string }[]>;
  now?: () => number;
}

export type DocumentFetch = (input: string | URL | Request) => Promise<Response>;

const KEPT_HEADERS = ['content-type', 'content-length', 'cache-control', 'expires'];
const MAX_REMEMBERED_FAILURES = 1000;

export class DocumentFetchRefused extends Error {}

export function createDocumentFetch(opts: DocumentFetchOptions): DocumentFetch {
  const deadlineMs = opts.deadlineMs ?? 3000;
  const maxBytes = opts.maxBytes ?? 5 * 1024;
  const failureMemoryMs = opts.failureMemoryMs ?? 30_000;
  const maxConcurrent = opts.maxConcurrent ?? 8;
  const lookup = opts.lookup ?? ((host: string) => dnsLookup(host, { all: true, verbatim: true }));
  const now = opts.now ?? Date.now;
  const ca = opts.ca ? [...rootCertificates, opts.ca] : undefined;
  const failures = new Map<string, { until: number; error: Error }>();
  let underWay = 0;

  const remember = (key: string, error: Error) => {
    if (failures.size >= MAX_REMEMBERED_FAILURES) {
      for (const [k, f] of failures) if (f.until <= now()) failures.delete(k);
      // Still full: the oldest goes (a Map iterates in insertion order).
      if (failures.size >= MAX_REMEMBERED_FAILURES) failures.delete(failures.keys().next().value!);
    }
    failures.set(key, { until: now() + failureMemoryMs, error });
  };

  async function once(url: URL, signal: AbortSignal): Promise<Response> {
    if (url.protocol !== 'https:') throw new DocumentFetchRefused('only https URLs are fetched');
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const addresses = isIP(host) ? [host] : (await abortable(lookup(host), signal)).map((a) => a.address);
    if (addresses.length === 0) throw new DocumentFetchRefused(`${host} has no address`);
    if (!opts.allowPrivateAddresses) {
      const refused = addresses.find((a) => !isPublicAddress(a));
      if (refused !== undefined) throw new DocumentFetchRefused(`${host} resolves to ${refused}, which is not a public address`);
    }
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({
        host: addresses[0], port: url.port || 443, path: `${url.pathname}${url.search}`, method: 'GET', signal, agent: false,
        // Certificate and SNI are the name's; the socket is the checked address's.
        ...(isIP(host) ? {} : { servername: host }),
        ...(ca ? { ca } : {}),
        headers: { host: url.host, accept: 'application/json' },
      }, resolve);
      req.on('error', reject);
      req.end();
    });
    try {
      // A redirect is an answer like any other: never followed.
      if (res.statusCode !== 200) throw new DocumentFetchRefused(`answered ${res.statusCode}`);
      if (Number(res.headers['content-length'] ?? 0) > maxBytes) throw new DocumentFetchRefused(`larger than ${maxBytes} bytes`);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > maxBytes) throw new DocumentFetchRefused(`larger than ${maxBytes} bytes`);
        chunks.push(chunk);
      }
      const headers = new Headers();
      for (const name of KEPT_HEADERS) {
        const value = res.headers[name];
        if (typeof value === 'string') headers.set(name, value);
      }
      return new Response(Buffer.concat(chunks), { status: 200, headers });
    } finally {
      res.destroy();
    }
  }

  return async (input) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const key = url.href;
    const failed = failures.get(key);
    if (failed && failed.until > now()) throw failed.error;
    if (underWay >= maxConcurrent) throw new DocumentFetchRefused('too many metadata documents are being fetched at once');
    underWay++;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DocumentFetchRefused(`no complete answer within ${deadlineMs} ms`)), deadlineMs);
    try {
      return await once(url, controller.signal);
    } catch (e) {
      const error = controller.signal.aborted ? (controller.signal.reason as Error) : e instanceof Error ? e : new Error(String(e));
      remember(key, error);
      throw error;
    } finally {
      clearTimeout(timer);
      underWay--;
    }
  };
}

/** `promise`, or the signal's reason when it aborts first (a DNS lookup cannot be cancelled). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
