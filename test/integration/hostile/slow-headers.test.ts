import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { RawSocket } from './support.ts';

// Headers sent a line at a time, or stopped half-way, held a socket for about 66 s (Node's
// minute, checked every 30 s). Headers are whole within 10 s, or 408 and closed.
// Shortened to 500 ms here; the product's default is 10 s (HEADERS_TIMEOUT_MS in src/gateway/serve.ts).

const HEADERS_MS = 500;

describe('hostile: slow headers', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway({ headersTimeoutMs: HEADERS_MS })));
  after(async () => gw?.stop());

  describe('when a client sends half a request head and then nothing', () => {
    it('then it gets 408 and the connection is closed', async () => {
      const s = await RawSocket.open(gw.url);
      s.write(`POST /api/auth/sign-in/email HTTP/1.1\r\nHost: ${new URL(gw.url).host}\r\n`);
      await s.until(() => s.ended, 5_000);
      expect(s.received).to.match(/^HTTP\/1\.1 408 /);
    });
  });

  describe('when a client trickles header lines, each sooner than the limit but never ending the head', () => {
    it('then the limit is on the whole head: 408 and closed', async () => {
      const s = await RawSocket.open(gw.url);
      s.write('GET /healthz HTTP/1.1\r\n');
      const drip = setInterval(() => s.write(`X-Slow-${Date.now()}: x\r\n`), HEADERS_MS / 5);
      try {
        await s.until(() => s.ended, 5_000);
      } finally {
        clearInterval(drip);
      }
      expect(s.received).to.match(/^HTTP\/1\.1 408 /);
    });
  });

  describe('when a client connects and sends nothing at all', () => {
    it('then the connection is closed', async () => {
      const s = await RawSocket.open(gw.url);
      await s.until(() => s.ended, 5_000);
      expect(s.ended).to.equal(true);
    });
  });

  describe('when a head arrives whole', () => {
    it('then it is answered as usual', async () => {
      const s = await RawSocket.open(gw.url);
      s.write(`GET /healthz HTTP/1.1\r\nHost: ${new URL(gw.url).host}\r\n\r\n`);
      const res = await s.response(5_000);
      expect(res.status).to.equal(200);
      s.destroy();
    });
  });
});
