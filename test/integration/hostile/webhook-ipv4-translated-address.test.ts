import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { createSender } from '../../../src/services/events/send.ts';

// IPv4 hidden in IPv6 another way: the IPv4-translated form (::ffff:0:a.b.c.d, used by SIIT
// translators) rather than the IPv4-mapped one (::ffff:a.b.c.d). Behind such a translator it
// reaches the IPv4 address it carries, loopback and private ranges included.

describe('hostile: a webhook URL naming an IPv4-translated IPv6 address', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  const translated = ['[::ffff:0:7f00:1]', '[::ffff:0:127.0.0.1]', '[::ffff:0:a9fe:a9fe]', '[0:0:0:0:ffff:0:c0a8:101]'];

  before(async () => {
    gw = await startTestGateway({});
    const s = await signUpAdmin(gw, { name: 'Admin' });
    admin = s.client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
  });

  it('is refused at registration, and nothing is written', async () => {
    for (const host of translated) {
      const r = await admin.post('/api/admin/webhooks', { url: `https://${host}/hook` });
      expect(r.status, host).to.equal(400);
      expect(r.body.errors, host).to.deep.equal([{ path: 'url', message: 'must name a public address' }]);
    }
    expect((await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n).to.equal(0);
  });

  it('is refused by the sender without connecting', async () => {
    const sender = createSender({ allowPrivateAddresses: false, deadlineMs: 1000 });
    try {
      for (const host of translated) {
        const r = await sender.send(`https://${host}/hook`, {}, '{}');
        expect(r.ok, host).to.equal(false);
        expect(r.error, host).to.match(/is not a public address$/);
      }
    } finally {
      await sender.close();
    }
  });
});
