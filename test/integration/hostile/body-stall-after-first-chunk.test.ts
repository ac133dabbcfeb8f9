import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { head, RawSocket } from './support.ts';

// A body idle for the idle time is answered 408: idle since its last byte. The watch used to note
// the bytes read when the request began and look again one idle time later; a first chunk sent a
// moment after the headers then bought the stalled connection a second full idle time. Headers and
// body go as two writes here, as a client that stalls mid-body sends them.

const IDLE_MS = 2_000;
const GAP_MS = 500;

describe('hostile: a body that stalls after its first chunk', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway({ bodyIdleMs: IDLE_MS })));
  after(async () => gw?.stop());

  it('is answered 408 one idle time after its last byte, not after a second one', async () => {
    const s = await RawSocket.open(gw.url);
    s.write(head('POST', '/api/auth/sign-in/email', [['Host', new URL(gw.url).host], ['Content-Type', 'application/json'], ['Content-Length', '60']]));
    // The first chunk of the body comes apart from the headers.
    await s.trickle(['{"email":"'], GAP_MS);
    const lastByte = performance.now();
    const res = await s.response(4 * IDLE_MS);
    const quiet = performance.now() - lastByte;
    expect(res.status, res.text).to.equal(408);
    expect(res.body.code).to.equal('REQUEST_TIMEOUT');
    expect(quiet, 'ms from the last byte to the 408').to.be.at.least(IDLE_MS - 50);
    // Within a quarter of the idle time past it; before, it came one idle time minus the gap later.
    expect(quiet, 'ms from the last byte to the 408').to.be.below(IDLE_MS * 1.25);
    s.destroy();
  });
});
