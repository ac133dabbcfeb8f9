import { expect } from 'chai';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Client } from '../../support/http.ts';
import { startTestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { startHostile, type Hostile } from './support.ts';

// An upstream that does not answer within upstream.timeoutMs is 504, one that refuses
// or drops the connection is 502 at once; either way the caller is not left waiting.

describe('hostile: an upstream that stalls, drops or refuses', function () {
  this.timeout(30_000);
  let h: Hostile;
  let keyClient: Client;
  before(async () => {
    h = await startHostile({ upstream: { timeoutMs: 300 } });
    keyClient = new Client(h.gw.url).withKey(h.key);
  });
  after(async () => h?.stop());
  afterEach(() => h.echo.releaseHeld());

  describe('when the upstream never answers a GET', () => {
    it('then the caller gets 504 GATEWAY_TIMEOUT and the upstream connection is released', async () => {
      const res = await keyClient.get('/api/hold/report');
      expect(res.status).to.equal(504);
      expect(res.body.code).to.equal('GATEWAY_TIMEOUT');
      await h.echo.untilInFlightAtMost(0, 2_000);
    });
  });

  describe('when the upstream never answers a POST whose body arrived whole', () => {
    it('then the caller gets 504 GATEWAY_TIMEOUT, not a body timeout', async () => {
      const res = await keyClient.post('/api/hold/report', { name: 'x' });
      expect(res.status).to.equal(504);
      expect(res.body.code).to.equal('GATEWAY_TIMEOUT');
      await h.echo.untilInFlightAtMost(0, 2_000);
    });
  });

  describe('when the upstream closes the connection without answering', () => {
    it('then the caller gets 502 BAD_GATEWAY', async () => {
      const res = await keyClient.get('/api/drop/now');
      expect(res.status).to.equal(502);
      expect(res.body.code).to.equal('BAD_GATEWAY');
    });

    it('then the request still counts against the key\'s quota: the upstream may have acted on it', async () => {
      const before = Number((await keyClient.get('/api/projects')).headers['ratelimit-remaining']);
      const res = await keyClient.get('/api/drop/again');
      expect(res.status).to.equal(502);
      expect(Number(res.headers['ratelimit-remaining'])).to.equal(before - 1);
    });
  });

  describe('when nothing listens at the upstream address', () => {
    let closedPort: number;
    before(async () => {
      const probe: Server = createServer();
      await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', () => ok()));
      closedPort = (probe.address() as AddressInfo).port;
      await new Promise<void>((ok) => probe.close(() => ok()));
    });

    it('then the caller gets 502 BAD_GATEWAY before upstream.timeoutMs has passed', async () => {
      const gw = await startTestGateway({ config: { upstream: { url: `http://127.0.0.1:${closedPort}`, timeoutMs: 20_000 } } });
      try {
        const { client } = await signUp(gw.url);
        const started = Date.now();
        const res = await client.get('/api/projects');
        expect(res.status).to.equal(502);
        expect(res.body.code).to.equal('BAD_GATEWAY');
        expect(Date.now() - started).to.be.below(10_000);
      } finally {
        await gw.stop();
      }
    });
  });
});
