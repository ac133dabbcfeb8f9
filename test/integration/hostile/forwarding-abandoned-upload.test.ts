import { expect } from 'chai';
import { Client } from '../../support/http.ts';
import { head, RawSocket, startHostile, type Hostile } from './support.ts';

// A forwarded POST declaring a 1 MB body, sending 10 bytes and hanging up. Before
// the fix, 130 of those held 126 upstream connections for over six minutes and every forwarded
// request of every user waited behind them.

const ATTACKERS = 130;

async function abandonUploads(h: Hostile, count: number, key: string): Promise<RawSocket[]> {
  const sockets = await Promise.all(Array.from({ length: count }, () => RawSocket.open(h.gw.url)));
  for (const s of sockets) {
    s.write(head('POST', '/api/projects/x', [['Host', h.host], ['x-api-key', key], ['Content-Type', 'application/octet-stream'], ['Content-Length', '1000000']]));
    s.write('0123456789');
  }
  return sockets;
}

describe('hostile: abandoned uploads on forwarded requests', function () {
  this.timeout(60_000);

  describe('when 130 clients send 10 bytes of a declared 1 MB body and hang up', () => {
    let h: Hostile;
    // The per-caller limit and the quota are lifted here so that what frees the upstream is the
    // hang-up itself.
    before(async () => (h = await startHostile({ upstream: { maxConcurrentPerCaller: 1000 }, config: { defaultApiRateLimit: 100_000 } })));
    after(async () => h?.stop());

    it('then every upstream connection they held is released at once, and the upstream serves others again', async () => {
      const sockets = await abandonUploads(h, ATTACKERS, h.key);
      // The uploads have taken all 128 connections the gateway keeps to its upstream, as in the issue.
      await h.echo.untilInFlightAtLeast(128, 15_000);
      for (const s of sockets) s.destroy();
      await h.echo.untilInFlightAtMost(0, 3_000);
      const res = await new Client(h.gw.url).withKey(h.otherKey).get('/api/projects');
      expect(res.status).to.equal(200);
    });
  });

  describe('when one key opens more abandoned uploads than its concurrency limit (default 32)', () => {
    let h: Hostile;
    before(async () => (h = await startHostile()));
    after(async () => h?.stop());

    it('then the uploads past the limit get 429 TOO_MANY_CONCURRENT, and after the hang-ups the key forwards again', async () => {
      const sockets = await abandonUploads(h, 40, h.key);
      await h.echo.untilInFlightAtLeast(32, 15_000);
      await answeredBy(sockets, 8, 10_000);
      const refused = sockets.map((s) => s.received).filter((t) => t !== '');
      expect(refused).to.have.length(8);
      expect(refused.every((t) => t.startsWith('HTTP/1.1 429') && t.includes('"code":"TOO_MANY_CONCURRENT"'))).to.equal(true);
      expect(h.echo.inFlight()).to.equal(32);
      for (const s of sockets) s.destroy();
      await h.echo.untilInFlightAtMost(0, 3_000);
      const res = await new Client(h.gw.url).withKey(h.key).get('/api/projects');
      expect(res.status).to.equal(200);
    });
  });
});

/** Resolves once `n` of the sockets have received an answer's head; rejects after `boundMs`. */
function answeredBy(sockets: RawSocket[], n: number, boundMs: number): Promise<void> {
  return new Promise((ok, fail) => {
    let answered = 0;
    const timer = setTimeout(() => fail(new Error(`only ${answered} of ${n} refusals arrived within ${boundMs} ms`)), boundMs);
    for (const s of sockets) {
      s.until((t) => t.includes('\r\n\r\n'), boundMs).then(() => {
        if (++answered === n) {
          clearTimeout(timer);
          ok();
        }
      }, () => {});
    }
  });
}
