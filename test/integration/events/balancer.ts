import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

// A load balancer without sticky sessions, reduced to what a test needs to be sure of: it picks
// the instance for each request by a rule the test gives (POSTs to one, GETs to the other), passes
// the request and its answer through unchanged, Host header included, and keeps what it saw.

export interface Passed { method: string; path: string; to: string; status: number; referer: string | undefined }

export interface Balancer { url: string; passed: Passed[]; close(): Promise<void> }

export async function startBalancer(pick: (req: IncomingMessage) => string): Promise<Balancer> {
  const passed: Passed[] = [];
  const server = createServer((req, res) => {
    const to = new URL(pick(req));
    const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      passed.push({ method: req.method!, path: req.url!, to: to.origin, status: answer.statusCode ?? 0, referer: req.headers.referer });
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => { res.statusCode = 502; res.end(); });
    req.pipe(up);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    passed,
    close: () => new Promise((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
}
