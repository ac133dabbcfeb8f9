import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received { headers: IncomingHttpHeaders; body: string; at: number }

/**
 * A webhook receiver on loopback: it keeps every request and answers `status` (a test changes it
 * to play an endpoint that is down, slow or redirecting).
 */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  status: number;
  /** Extra answer headers (a redirect's location). */
  headers: Record<string, string>;
  /** Bytes of answer body to send (a huge answer). */
  answerBytes: number;
  events(type?: string): { id: string; type: string; timestamp: string; data: Record<string, unknown> }[];
  close(): Promise<void>;
}

/** On `port` when given: an endpoint that was down, back up on its address. */
export async function startReceiver(port = 0, path = '/hook'): Promise<Receiver> {
  const r: Receiver = {
    url: '', port: 0, received: [], status: 204, headers: {}, answerBytes: 0,
    events: (type) => r.received.map((x) => JSON.parse(x.body)).filter((e) => !type || e.type === type),
    close: () => new Promise((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      r.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      res.writeHead(r.status, r.headers);
      if (r.answerBytes > 0) {
        const chunk = Buffer.alloc(64 * 1024, 'x');
        let left = r.answerBytes;
        const pump = () => {
          while (left > 0) {
            left -= chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => {});
        pump();
      } else res.end('ok');
    });
  });
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', () => ok()));
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}${path}`;
  return r;
}
