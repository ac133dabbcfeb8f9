import { expect } from 'chai';
import { head, RawSocket, startHostile, type Hostile } from './support.ts';

// `Expect: 100-continue` on a forwarded request answered 502 (undici refuses the
// header) and still spent quota. Node has already answered the 100, so the header is dropped.

describe('hostile: Expect: 100-continue on a forwarded request', function () {
  this.timeout(30_000);
  let h: Hostile;
  before(async () => (h = await startHostile()));
  after(async () => h?.stop());

  it('gets 100 Continue, then the body is forwarded whole without the Expect header, for one unit of quota', async () => {
    const body = JSON.stringify({ name: 'after continue' });
    const s = await RawSocket.open(h.gw.url);
    s.write(head('POST', '/api/projects', [['Host', h.host], ['x-api-key', h.key], ['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ['Expect', '100-continue']]));
    await s.until((t) => t.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 5_000);
    s.write(body);
    const res = await s.response(5_000);
    s.destroy();
    expect(res.status).to.equal(200);
    expect(res.body.body).to.deep.equal({ name: 'after continue' });
    expect(h.echo.last().headers).to.not.have.property('expect');
    expect(res.headers['ratelimit-remaining']).to.equal('99');
  });
});
