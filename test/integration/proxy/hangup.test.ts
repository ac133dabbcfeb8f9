import { expect } from 'chai';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

describe('forwarding: a client that hangs up before the answer', () => {
  let upstream: Server;
  let gw: TestGateway;
  before(async () => {
    // Answers at once, or (on /api/slow) slowly and in pieces, so a client can leave at any point.
    upstream = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (req.url !== '/api/slow') return res.end('first part\nsecond part\n');
      res.write('first part\n');
      setTimeout(() => res.end('second part\n'), 60);
    });
    await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', () => ok()));
    const { port } = upstream.address() as AddressInfo;
    gw = await startTestGateway({ config: { upstream: { url: `http://127.0.0.1:${port}` }, defaultApiRateLimit: 10000 } });
  });
  after(async () => {
    await gw.stop();
    upstream.closeAllConnections();
    await new Promise<void>((ok) => upstream.close(() => ok()));
  });

  it('does not bring the gateway down: 300 hang-ups later it still answers', async function () {
    this.timeout(30_000);
    // In a real server an unhandled 'error' event ends the process; here it surfaces as an uncaught
    // exception, which this test counts.
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    const { client } = await signUp(gw.url);
    const key = (await client.post('/api/api-keys', { name: 'k' })).body.key as string;
    const url = new URL(gw.url);
    const hangUp = (path: string, afterMs: number) =>
      new Promise<void>((resolve) => {
        const req = request({ host: url.hostname, port: url.port, path, headers: { 'x-api-key': key } }, (res) => res.destroy());
        req.on('error', () => resolve());
        req.on('close', () => resolve());
        req.end();
        setTimeout(() => req.destroy(), afterMs);
      });
    try {
      // Leave at once, before the upstream's head, on its head, and mid-body.
      for (let i = 0; i < 300; i++) await hangUp(i % 2 ? '/api/slow' : '/api/projects', (i % 4) * 0.5);
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught.map(String)).to.deep.equal([]);
    expect((await new Client(gw.url).get('/healthz')).status).to.equal(200);
    const whole = await new Client(gw.url).withKey(key).get('/api/projects');
    expect(whole.status).to.equal(200);
    expect(whole.text).to.equal('first part\nsecond part\n');
  });
});
