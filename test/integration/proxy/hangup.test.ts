import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { until } from '../../support/until.ts';

/** Where in the exchange the client leaves; each moment is reached by an event, not by a delay. */
type Moment = 'at once' | 'once the upstream has it' | 'on the head' | 'mid-body';
const MOMENTS: [Moment, string][] = [
  ['at once', '/api/projects'],
  // The upstream holds its head: the gateway is waiting on it when the client leaves.
  ['once the upstream has it', '/api/hold'],
  // The upstream sends its head and a first part, and holds the rest.
  ['on the head', '/api/slow'],
  ['mid-body', '/api/slow'],
];

describe('forwarding: a client that hangs up before the answer', () => {
  let upstream: Server;
  let gw: TestGateway;
  const arrivals = new EventEmitter();
  // Answers the upstream holds back until the test lets them go.
  const held = new Set<ServerResponse>();
  // Exchanges not finished yet, on either side of the gateway.
  const upstreamOpen = new Set<ServerResponse>();
  const gatewayOpen = new Set<ServerResponse>();
  const track = (open: Set<ServerResponse>, res: ServerResponse) => {
    open.add(res);
    res.once('close', () => open.delete(res));
  };
  const release = () => {
    for (const res of held) {
      if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/plain' }).write('first part\n');
      res.end('second part\n');
    }
    held.clear();
  };

  before(async () => {
    upstream = createServer((req, res) => {
      track(upstreamOpen, res);
      if (req.url === '/api/hold') {
        held.add(res);
        arrivals.emit('arrived');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (req.url !== '/api/slow') return res.end('first part\nsecond part\n');
      res.write('first part\n');
      held.add(res);
    });
    await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', () => ok()));
    const { port } = upstream.address() as AddressInfo;
    gw = await startTestGateway({ config: { upstream: { url: `http://127.0.0.1:${port}` }, defaultApiRateLimit: 10000 } });
    gw.server.on('request', (_req, res: ServerResponse) => track(gatewayOpen, res));
  });
  after(async () => {
    release();
    await gw?.stop();
    upstream?.closeAllConnections();
    await new Promise<void>((ok) => (upstream ? upstream.close(() => ok()) : ok()));
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
    const hangUp = (path: string, moment: Moment) =>
      new Promise<void>((resolve) => {
        const req = request({ host: url.hostname, port: url.port, path, headers: { 'x-api-key': key } }, (res) => {
          if (moment === 'mid-body') res.once('data', () => req.destroy());
          else req.destroy();
        });
        const leave = () => req.destroy();
        if (moment === 'once the upstream has it') arrivals.once('arrived', leave);
        req.on('error', () => {});
        req.on('close', () => {
          arrivals.off('arrived', leave);
          resolve();
        });
        req.end();
        if (moment === 'at once') req.destroy();
      });
    try {
      for (let i = 0; i < 300; i++) {
        const [moment, path] = MOMENTS[i % MOMENTS.length]!;
        await hangUp(path, moment);
        // What the upstream held is sent now, after the client left: the gateway has nowhere to put it.
        release();
      }
      // Every exchange, on both sides of the gateway, has ended: whatever a hang-up could break has run.
      await until('the gateway and the upstream finished every exchange', () => gatewayOpen.size === 0 && upstreamOpen.size === 0, 5_000);
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
