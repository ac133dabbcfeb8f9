import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';

// A webhook URL under the 2048-character limit as sent can grow many times over once parsed:
// each character outside ASCII in its path becomes up to 12 (%F0%9D%95%8F). The limit holds for
// the URL as stored and sent, so such a URL is refused and nothing is written.

describe('hostile: a webhook URL that grows past the limit once normalized', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;

  before(async () => {
    gw = await startTestGateway({});
    const s = await signUpAdmin(gw, { name: 'Admin' });
    admin = s.client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
  });

  const grown = `https://example.com/${'\u{1D54F}'.repeat(1000)}`;

  it('on create: 400 naming the url, no endpoint written', async () => {
    expect(grown.length).to.be.below(2048);
    const r = await admin.post('/api/admin/webhooks', { url: grown });
    expect(r.status, r.text.slice(0, 300)).to.equal(400);
    expect(r.body.errors).to.deep.equal([{ path: 'url', message: 'is longer than 2048 characters once normalized' }]);
    expect((await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n).to.equal(0);
  });

  it('on update: 400, the endpoint keeps its URL', async () => {
    const ep = (await admin.post('/api/admin/webhooks', { url: 'https://example.com/hook' })).body;
    const r = await admin.request('PATCH', `/api/admin/webhooks/${ep.id}`, JSON.stringify({ url: grown }), { 'content-type': 'application/json' });
    expect(r.status, r.text.slice(0, 300)).to.equal(400);
    expect((await gw.pool.query('SELECT url FROM webhook_endpoints WHERE id = $1', [ep.id])).rows).to.deep.equal([{ url: 'https://example.com/hook' }]);
  });
});
