import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';

// Port 0 is no port: nothing can listen on it, so an endpoint naming it would fail every delivery
// until it is disabled. It is refused when the endpoint is registered or its URL changed.

describe('hostile: a webhook URL naming port 0', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  const zero = ['https://hooks.example.com:0/hook', 'https://hooks.example.com:00/hook', 'https://[2606:4700:4700::1111]:0/hook'];

  before(async () => {
    gw = await startTestGateway({});
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
  });

  it('is refused at registration and on a change of URL, and nothing is written', async () => {
    for (const url of zero) {
      const r = await admin.post('/api/admin/webhooks', { url });
      expect(r.status, url).to.equal(400);
      expect(r.headers['content-type'], url).to.match(/^application\/problem\+json/);
      expect(r.body.errors, url).to.deep.equal([{ path: 'url', message: 'may not name port 0' }]);
    }
    expect((await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n).to.equal(0);
    const made = await admin.post('/api/admin/webhooks', { url: 'https://hooks.example.com:8443/hook' });
    expect(made.status, made.text).to.equal(201);
    const patched = await admin.request('PATCH', `/api/admin/webhooks/${made.body.id}`, { url: zero[0] });
    expect(patched.status).to.equal(400);
    expect((await admin.get(`/api/admin/webhooks/${made.body.id}`)).body.url).to.equal('https://hooks.example.com:8443/hook');
  });
});
