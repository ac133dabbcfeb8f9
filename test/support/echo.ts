import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
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
  body: unknown;
}

export interface Echo {
  url: string;
  seen: Seen[];
  /** The latest request; throws when there was none. */
  last(): Seen;
  /** Every request that carried this value in the trace header. */
  received(traceId: string): Seen[];
  close(): Promise<void>;
}

/** A test names one request end to end with this header, so the echo's log can be searched for it. */
export const TRACE = 'x-matrix-trace';

/**
 * Answers 200 `{ method, path, query, body }`; `/api/fail/<status>` answers that status with a
 * problem-like body, so a test can watch an upstream failure come back.
 */
export async function startEcho(): Promise<Echo> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
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
      const entry: Seen = { method: req.method ?? '', path: q >= 0 ? target.slice(0, q) : target, query, headers: req.headers, body };
      seen.push(entry);
      res.setHeader('content-type', 'application/json');
      const fail = /^\/api\/fail\/(\d{3})$/.exec(entry.path);
      if (fail) {
        res.statusCode = Number(fail[1]);
        res.end(JSON.stringify({ detail: 'the upstream says no' }));
        return;
      }
      res.statusCode = 200;
      res.end(JSON.stringify({ method: entry.method, path: entry.path, query, body: body ?? null }));
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
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
