import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { createSender } from '../../../src/services/events/send.ts';
import { isPublicAddress } from '../../../src/services/outbound-address.ts';
import { expectUrlRefused } from '../events/refused-url.ts';

// RFC 9637 added a second IPv6 documentation prefix, 3fff::/20, beside 2001:db8::/32. Like the
// older one it is never routed on the public internet, so it is not a public address: a webhook
// URL naming it is refused at registration, and the sender will not connect to it.

describe('hostile: a webhook URL in the IPv6 documentation range 3fff::/20 (RFC 9637)', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  const inside = ['[3fff::1]', '[3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff]', '[3FFF:0abc::10]', '[3fff:0:0:0:0:0:0:1]'];

  before(async () => {
    gw = await startTestGateway({});
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
  });

  it('is refused at registration and on a change of URL, and nothing is written', async () => {
    await expectUrlRefused(gw, admin, inside.map((host) => `https://${host}/hook`), 'must name a public address', 'https://[2606:4700:4700::1111]/hook');
  });

  it('is refused by the sender without connecting', async () => {
    const sender = createSender({ allowPrivateAddresses: false, deadlineMs: 1000 });
    try {
      for (const host of inside) {
        const r = await sender.send(`https://${host}/hook`, {}, '{}');
        expect(r.ok, host).to.equal(false);
        expect(r.error, host).to.match(/is not a public address$/);
      }
    } finally {
      await sender.close();
    }
  });

  it('ends exactly at the prefix: the neighbours on either side stay public', () => {
    expect(isPublicAddress('3fff::1')).to.equal(false);
    expect(isPublicAddress('3fff:0fff:ffff::1')).to.equal(false);
    expect(isPublicAddress('3fff:1000::1')).to.equal(true);
    expect(isPublicAddress('3ffe:ffff::1')).to.equal(true);
  });
});
