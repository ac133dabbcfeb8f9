import { expect } from 'chai';
import { head, RawSocket, startHostile, type Hostile } from './support.ts';

// A client that opens a forwarded upload and then goes quiet, or trickles it in a byte at a time,
// would otherwise hold an upstream connection for as long as it likes. The idle time
// is shortened from 10 s to 300 ms here; the product's default is checked in docs/forwarding.md.

const IDLE_MS = 300;

describe('hostile: slow bodies on forwarded requests', function () {
  this.timeout(30_000);
  let h: Hostile;
  before(async () => (h = await startHostile({ bodyIdleMs: IDLE_MS, upstream: { timeoutMs: 2_000 } })));
  after(async () => h?.stop());

  const upload = (length: number) =>
    head('POST', '/api/projects/x', [['Host', h.host], ['x-api-key', h.key], ['Content-Type', 'application/octet-stream'], ['Content-Length', String(length)]]);

  describe('when a body sends 10 of 100 declared bytes and then nothing', () => {
    it('then it gets 408 REQUEST_TIMEOUT, the gateway closes the connection, and the upstream connection is released', async () => {
      const s = await RawSocket.open(h.gw.url);
      s.write(upload(100));
      s.write('0123456789');
      const res = await s.response(5_000);
      expect(res.status).to.equal(408);
      expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
      expect(res.body.code).to.equal('REQUEST_TIMEOUT');
      expect(res.headers.connection).to.equal('close');
      await s.until(() => s.ended, 2_000);
      await h.echo.untilInFlightAtMost(0, 2_000);
    });
  });

  describe('when a body keeps arriving, each chunk sooner than the idle time', () => {
    it('then it is forwarded whole', async () => {
      const s = await RawSocket.open(h.gw.url);
      s.write(upload(40));
      // Each pause inside the idle time.
      await s.trickle(Array(4).fill('abcdefghij'), IDLE_MS / 3);
      const res = await s.response(5_000);
      expect(res.status).to.equal(200);
      expect(res.body.body).to.equal('abcdefghij'.repeat(4));
    });
  });

  describe('when a body trickles in forever, never idle but never done', () => {
    it('then it gets 408 REQUEST_TIMEOUT once upstream.timeoutMs has passed, and the upstream connection is released', async () => {
      const s = await RawSocket.open(h.gw.url);
      s.write(upload(1_000));
      const drip = setInterval(() => s.write('x'), IDLE_MS / 3);
      try {
        const res = await s.response(10_000);
        expect(res.status).to.equal(408);
        expect(res.body.code).to.equal('REQUEST_TIMEOUT');
      } finally {
        clearInterval(drip);
      }
      await h.echo.untilInFlightAtMost(0, 2_000);
    });
  });
});
