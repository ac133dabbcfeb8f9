import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { isPublicAddress } from '../../../src/services/events/address-guard.ts';
import { startReceiver, type Receiver } from './receiver.ts';
import { expectUrlRefused } from './refused-url.ts';

// Without allowPrivateAddresses, an endpoint must be https on a public address, and the address is
// judged when the attempt connects: a name that resolves to loopback is refused then.

describe('events: endpoint guards', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let admin: Client;
  let hook: Receiver;

  before(async () => {
    hook = await startReceiver();
    gw = await startTestGateway({ config: { webhooks: { retrySchedule: ['1s'] } }, webhookPollMs: 50 });
    const s = await signUpAdmin(gw, { name: 'Admin' });
    admin = s.client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  it('refuses http, credentials in the URL and literal private addresses at registration, changing nothing', async () => {
    for (const url of [hook.url, 'https://127.0.0.1/x', 'https://10.1.2.3/x', 'https://[::1]/x', 'https://169.254.169.254/latest', 'https://u:p@example.com/x', 'https://[::ffff:127.0.0.1]/x', 'not a url']) {
      const r = await admin.post('/api/admin/webhooks', { url });
      expect(r.status, url).to.equal(400);
      expect(r.body.code).to.equal('VALIDATION_FAILED');
    }
    const { rows } = await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints');
    expect(rows[0].n).to.equal(0);
  });

  // Port 0 is no port: nothing can listen on it, so every delivery would fail until the endpoint is disabled.
  it('refuses a URL naming port 0 at registration and on a change of URL, changing nothing', async () => {
    const zero = ['https://hooks.example.com:0/hook', 'https://hooks.example.com:00/hook', 'https://[2606:4700:4700::1111]:0/hook'];
    const id = await expectUrlRefused(gw, admin, zero, 'may not name port 0', 'https://hooks.example.com:8443/hook');
    expect((await admin.request('DELETE', `/api/admin/webhooks/${id}`)).status).to.be.oneOf([200, 204]);
  });

  it('a DNS name that resolves to loopback is refused when the attempt connects; nothing reaches the receiver', async () => {
    const r = await admin.post('/api/admin/webhooks', { url: `https://localhost:${hook.port}/hook` });
    expect(r.status, r.text).to.equal(201);
    await admin.post(`/api/admin/webhooks/${r.body.id}/test`);
    const deliveries = async () => (await admin.get(`/api/admin/webhooks/${r.body.id}/deliveries`)).body.deliveries;
    await until('an attempt', async () => (await deliveries())[0]?.attempts.length >= 1, 10_000);
    expect((await deliveries())[0].attempts[0].error).to.match(/not a public address/);
    expect(hook.received).to.have.length(0);
  });

  it('judges addresses: public ones pass, loopback, private, link-local, mapped and documentation ones do not', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(isPublicAddress(ip), ip).to.equal(true);
    for (const ip of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fc00::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '192.0.2.1', '224.0.0.1', 'x']) {
      expect(isPublicAddress(ip), ip).to.equal(false);
    }
  });
});
