import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { isPublicAddress } from '../../../src/services/outbound-address.ts';

// IANA's IPv6 special-purpose registry marks two more recent prefixes "not globally reachable":
// 5f00::/16 for segment routing (SRv6) SIDs (RFC 9602), which address functions inside one
// operator's network, and the dummy prefix 100:0:0:1::/64 (added to the registry in 2025). An endpoint URL naming
// either reaches, if anything, something that is not on the public internet: refused.

describe('hostile: a webhook URL in an IPv6 prefix that is not globally reachable (5f00::/16, 100:0:0:1::/64)', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;

  before(async () => {
    gw = await startTestGateway({});
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
  });

  it('is refused at registration with a problem naming the url, and nothing is written', async () => {
    for (const host of ['[5f00::1]', '[5f00:ffff::1]', '[100:0:0:1::1]', '[100::1:ffff:ffff:ffff:ffff]']) {
      const r = await admin.post('/api/admin/webhooks', { url: `https://${host}/hook` });
      expect(r.status, host).to.equal(400);
      expect(r.body.errors, host).to.deep.equal([{ path: 'url', message: 'must name a public address' }]);
    }
    expect((await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n).to.equal(0);
  });

  it('ends at the prefixes: their neighbours are public', () => {
    for (const a of ['5eff:ffff::1', '5f01::1', '100:0:0:2::1']) expect(isPublicAddress(a), a).to.equal(true);
  });
});
