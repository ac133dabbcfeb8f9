import { expect } from 'chai';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { until } from '../../support/until.ts';

// How a forwarded answer comes back: a small one of known length is gathered whole and sent as one
// buffer, any other (larger, no length, HEAD) streams through with the upstream held back while the
// client is not reading. Both must carry the upstream's bytes and headers exactly.

const pattern = (n: number) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + (i >> 8)) & 0xff;
  return b;
};
const BIG = pattern(300 * 1024);
const EDGE = pattern(64 * 1024);
const BIG_STREAM = 64 * 1024 * 1024;

/** A gateway forwarding to `upstream` (listening already), and a key of a new user on it. */
async function gatewayTo(upstream: Server, limits: { timeoutMs?: number } = {}): Promise<{ gw: TestGateway; key: string }> {
  const { port } = upstream.address() as AddressInfo;
  const gw = await startTestGateway({ config: { upstream: { url: `http://127.0.0.1:${port}`, ...limits }, defaultApiRateLimit: 10000 } });
  const { client } = await signUp(gw.url);
  return { gw, key: (await client.post('/api/api-keys', { name: 'k' })).body.key as string };
}

async function stopBoth(gw: TestGateway, upstream: Server): Promise<void> {
  await gw.stop();
  upstream.closeAllConnections();
  await new Promise<void>((ok) => upstream.close(() => ok()));
}

describe('forwarding: answers of every shape come back as the upstream sent them', () => {
  let upstream: Server;
  let gw: TestGateway;
  let key: string;
  // The last exchange of /api/endless, seen from the upstream's side.
  interface Endless { written: number; closed: boolean; finished: boolean }
  let endless: Endless | null = null;

  before(async () => {
    upstream = createServer((req, res) => {
      const path = req.url ?? '';
      if (path === '/api/small') {
        res.writeHead(201, { 'content-type': 'application/json', 'content-length': '11', 'x-custom': 'kept', connection: 'x-hop', 'x-hop': 'dropped' });
        return res.end('{"ok":true}');
      }
      if (path === '/api/edge') return res.writeHead(200, { 'content-length': String(EDGE.length) }).end(EDGE);
      if (path === '/api/big') return res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG.length) }).end(BIG);
      if (path === '/api/chunked') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(BIG.subarray(0, 1000));
        setImmediate(() => res.end(BIG.subarray(1000)));
        return;
      }
      if (path === '/api/head') return res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '12345' }).end();
      if (path === '/api/breaks-small') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('only ten b');
        return void setTimeout(() => res.socket?.destroy(), 20);
      }
      if (path === '/api/breaks-big') {
        res.writeHead(200, { 'content-length': String(BIG.length) });
        res.write(BIG.subarray(0, 100 * 1024));
        return void setTimeout(() => res.socket?.destroy(), 50);
      }
      if (path === '/api/endless') return writeEndless(res);
      res.writeHead(404).end();
    });
    const writeEndless = (res: ServerResponse) => {
      const seen: Endless = { written: 0, closed: false, finished: false };
      endless = seen;
      res.once('close', () => (seen.closed = true));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG_STREAM) });
      const chunk = Buffer.alloc(64 * 1024, 7);
      const pump = () => {
        while (seen.written < BIG_STREAM && !seen.closed) {
          seen.written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (seen.written >= BIG_STREAM) {
          seen.finished = true;
          res.end();
        }
      };
      pump();
    };
    await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', () => ok()));
    ({ gw, key } = await gatewayTo(upstream));
  });
  after(() => stopBoth(gw, upstream));

  /** One request through the gateway, the answer read whole (or as far as it came). */
  const fetchRaw = (path: string, method = 'GET') =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer; complete: boolean }>((resolve, reject) => {
      const url = new URL(gw.url);
      const req = request({ host: url.hostname, port: url.port, path, method, headers: { 'x-api-key': key } }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (p: Buffer) => parts.push(p));
        const done = () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts), complete: res.complete });
        res.on('end', done);
        res.on('error', done);
        res.on('aborted', done);
      });
      req.on('error', reject);
      req.end();
    });

  it('a small answer of known length: status, body, the upstream\'s headers, not its hop-by-hop ones', async () => {
    const res = await fetchRaw('/api/small');
    expect(res.status).to.equal(201);
    expect(res.body.toString()).to.equal('{"ok":true}');
    expect(res.headers['content-length']).to.equal('11');
    expect(res.headers['content-type']).to.equal('application/json');
    expect(res.headers['x-custom']).to.equal('kept');
    expect(res.headers['x-hop']).to.equal(undefined);
    expect(res.headers['x-request-id']).to.be.a('string');
  });

  it('an answer of exactly 64 KiB (the largest gathered whole) and one of 300 KiB (streamed) arrive byte for byte', async () => {
    const edge = await fetchRaw('/api/edge');
    expect(edge.status).to.equal(200);
    expect(edge.body.equals(EDGE)).to.equal(true);
    const big = await fetchRaw('/api/big');
    expect(big.status).to.equal(200);
    expect(big.headers['content-length']).to.equal(String(BIG.length));
    expect(big.body.equals(BIG)).to.equal(true);
  });

  it('an answer with no length (chunked) arrives whole', async () => {
    const res = await fetchRaw('/api/chunked');
    expect(res.status).to.equal(200);
    expect(res.body.equals(BIG)).to.equal(true);
  });

  it('HEAD keeps the upstream\'s Content-Length and carries no body', async () => {
    const res = await fetchRaw('/api/head', 'HEAD');
    expect(res.status).to.equal(200);
    expect(res.headers['content-length']).to.equal('12345');
    expect(res.body.length).to.equal(0);
  });

  it('an upstream that breaks off a small answer: 502 BAD_GATEWAY, never the part it sent', async () => {
    const res = await fetchRaw('/api/breaks-small');
    expect(res.status).to.equal(502);
    expect(JSON.parse(res.body.toString()).code).to.equal('BAD_GATEWAY');
    expect(res.body.toString()).not.to.include('only ten');
  });

  it('an upstream that breaks off a streamed answer: the client\'s answer ends short, and the gateway still serves', async () => {
    const res = await fetchRaw('/api/breaks-big');
    expect(res.status).to.equal(200);
    expect(res.complete).to.equal(false);
    expect(res.body.length).to.be.below(BIG.length);
    const after = await fetchRaw('/api/small');
    expect(after.status).to.equal(201);
  });

  it('a client that stops reading holds the upstream back, and hanging up closes the upstream exchange', async function () {
    this.timeout(20_000);
    const url = new URL(gw.url);
    let got = 0;
    const req = request({ host: url.hostname, port: url.port, path: '/api/endless', headers: { 'x-api-key': key } }, (res) => {
      res.once('data', (p: Buffer) => {
        got += p.length;
        res.pause();
      });
    });
    req.on('error', () => {});
    req.end();
    await until('the upstream has started writing', () => (endless?.written ?? 0) > 0, 5_000);
    // Held back, the upstream stands still: its count unchanged over ten questions in a row, with the
    // event loop free between them (an unbounded relay would take the 64 MiB from it meanwhile).
    let last = -1;
    let still = 0;
    await until('the upstream stands still or finished', () => {
      still = endless!.written === last ? still + 1 : 0;
      last = endless!.written;
      return endless!.finished || still >= 10;
    }, 10_000, 20);
    expect(got).to.be.above(0);
    expect(endless!.finished, 'the upstream was never held back').to.equal(false);
    expect(endless!.written).to.be.below(BIG_STREAM);
    req.destroy();
    await until('the upstream exchange is closed', () => endless!.closed, 5_000);
    expect(endless!.finished).to.equal(false);
  });

  describe('a small answer whose body stalls (gathered whole before it is sent on)', () => {
    let slow: Server;
    let sgw: TestGateway;
    let skey: string;
    // Exchanges the upstream has begun and not yet seen closed, and a signal for each beginning.
    const open = new Set<ServerResponse>();
    let began: (() => void) | null = null;
    before(async () => {
      slow = createServer((_req, res) => {
        open.add(res);
        res.once('close', () => open.delete(res));
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '20' });
        res.write('first');
        began?.();
      });
      await new Promise<void>((ok) => slow.listen(0, '127.0.0.1', () => ok()));
      ({ gw: sgw, key: skey } = await gatewayTo(slow, { timeoutMs: 800 }));
    });
    after(() => stopBoth(sgw, slow));

    it('is 504 GATEWAY_TIMEOUT once upstream.timeoutMs has passed, never the part that came, and the upstream exchange is closed', async () => {
      const started = Date.now();
      const res = await fetch(`${sgw.url}/api/stalls`, { headers: { 'x-api-key': skey } });
      const text = await res.text();
      expect(res.status).to.equal(504);
      expect(JSON.parse(text).code).to.equal('GATEWAY_TIMEOUT');
      expect(text).not.to.include('first');
      // Not at once: undici's own body timer (coarse, up to half a second early) or the forwarder's deadline.
      expect(Date.now() - started).to.be.at.least(250);
      await until('the upstream exchange is closed', () => open.size === 0, 5_000);
    });

    it('a client that hangs up meanwhile closes the upstream exchange at once, not at the deadline', async () => {
      const url = new URL(sgw.url);
      const arrived = new Promise<void>((ok) => (began = ok));
      const req = request({ host: url.hostname, port: url.port, path: '/api/stalls', headers: { 'x-api-key': skey } });
      req.on('error', () => {});
      req.end();
      await arrived;
      began = null;
      const left = Date.now();
      req.destroy();
      await until('the upstream exchange is closed', () => open.size === 0, 5_000);
      expect(Date.now() - left).to.be.below(600);
    });
  });
});
