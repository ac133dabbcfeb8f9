import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';

// The upstream every forwarding test talks to: a small real server that records what it was sent
// and answers with it. Outside the product, so a fake is right here.

/** What the upstream received of one request. */
export interface Seen {
  method: string;
  /** The request target's path exactly as sent (no normalisation by the echo). */
  path: string;
  query: Record<string, string | string[]>;
  headers: IncomingHttpHeaders;
  /** Header names in the order they arrived, as sent. */
  headerNames: string[];
  body: unknown;
}

export interface Echo {
  url: string;
  seen: Seen[];
  /** The latest request; throws when there was none. */
  last(): Seen;
  /** Every request that carried this value in the trace header. */
  received(traceId: string): Seen[];
  /**
   * Requests in progress: each holds one connection until its answer is sent or its connection
   * closes. (An idle keep-alive connection is free for the next request, so it is not counted.)
   */
  inFlight(): number;
  /** Resolves once at most `n` requests are in progress; rejects after `boundMs`. */
  untilInFlightAtMost(n: number, boundMs: number): Promise<void>;
  /** Resolves once at least `n` requests are in progress; rejects after `boundMs`. */
  untilInFlightAtLeast(n: number, boundMs: number): Promise<void>;
  /** Requests under /api/hold/ that are waiting for `releaseHeld()`. */
  held(): number;
  /** Resolves once `n` requests are held; rejects after `boundMs`. */
  untilHeld(n: number, boundMs: number): Promise<void>;
  /** Answers every held request. */
  releaseHeld(): void;
  close(): Promise<void>;
}

/** A test names one request end to end with this header, so the echo's log can be searched for it. */
export const TRACE = 'x-matrix-trace';

/** Waits for `ready()` to hold, re-checked whenever `emitter` says something changed. */
function until(emitter: EventEmitter, ready: () => boolean, boundMs: number, what: () => string): Promise<void> {
  return new Promise((ok, fail) => {
    const check = () => {
      if (!ready()) return;
      clearTimeout(timer);
      emitter.off('change', check);
      ok();
    };
    const timer = setTimeout(() => {
      emitter.off('change', check);
      fail(new Error(`the echo upstream: ${what()} did not happen within ${boundMs} ms`));
    }, boundMs);
    emitter.on('change', check);
    check();
  });
}

/**
 * Answers 200 `{ method, path, query, body }`; `/api/fail/<status>` answers that status with a
 * problem-like body, so a test can watch an upstream failure come back. `/api/hold/...` answers
 * only when the test calls `releaseHeld()`; `/api/drop/...` closes the connection without a word.
 */
export async function startEcho(): Promise<Echo> {
  const seen: Seen[] = [];
  const changes = new EventEmitter();
  let active = 0;
  let waiting: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    active++;
    changes.emit('change');
    res.on('close', () => {
      active--;
      changes.emit('change');
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = req.url ?? '/';
      const q = target.indexOf('?');
      const params = new URLSearchParams(q >= 0 ? target.slice(q + 1) : '');
      const query: Record<string, string | string[]> = {};
      for (const k of new Set(params.keys())) {
        const all = params.getAll(k);
        query[k] = all.length > 1 ? all : all[0]!;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text || undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // kept as text
      }
      const headerNames = req.rawHeaders.filter((_, i) => i % 2 === 0);
      const entry: Seen = { method: req.method ?? '', path: q >= 0 ? target.slice(0, q) : target, query, headers: req.headers, headerNames, body };
      seen.push(entry);
      if (entry.path.startsWith('/api/drop/')) {
        req.socket.destroy();
        return;
      }
      res.setHeader('content-type', 'application/json');
      const answer = () => res.end(JSON.stringify({ method: entry.method, path: entry.path, query, body: body ?? null }));
      if (entry.path.startsWith('/api/hold/')) {
        waiting.push(answer);
        // A held request whose client went away is no longer held.
        res.on('close', () => {
          waiting = waiting.filter((a) => a !== answer);
          changes.emit('change');
        });
        changes.emit('change');
        return;
      }
      const fail = /^\/api\/fail\/(\d{3})$/.exec(entry.path);
      if (fail) {
        res.statusCode = Number(fail[1]);
        res.end(JSON.stringify({ detail: 'the upstream says no' }));
        return;
      }
      res.statusCode = 200;
      answer();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    last: () => {
      const s = seen[seen.length - 1];
      if (!s) throw new Error('the upstream saw no request');
      return s;
    },
    received: (id) => seen.filter((s) => s.headers[TRACE] === id),
    inFlight: () => active,
    untilInFlightAtMost: (n, boundMs) => until(changes, () => active <= n, boundMs, () => `requests in progress falling to ${n} (${active} now)`),
    untilInFlightAtLeast: (n, boundMs) => until(changes, () => active >= n, boundMs, () => `${n} requests in progress (${active} now)`),
    held: () => waiting.length,
    untilHeld: (n, boundMs) => until(changes, () => waiting.length >= n, boundMs, () => `${n} requests held (${waiting.length} held)`),
    releaseHeld: () => {
      const all = waiting;
      waiting = [];
      for (const answer of all) answer();
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
