import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { createSender } from '../../../src/services/events/send.ts';
import { startReceiver, type Receiver } from '../events/receiver.ts';

// An endpoint registered as http while `webhooks.allowPrivateAddresses` was on stays stored when the
// operator turns it off. The sender judged such a URL's address at each attempt but not its scheme,
// so events (user ids, e-mail addresses, signatures) kept going in plain text to any public http
// URL. With private addresses not allowed, an attempt to a URL that is not https is refused without
// connecting.

describe('hostile: an http endpoint left from when private addresses were allowed', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  let hook: Receiver;

  before(async () => {
    hook = await startReceiver();
    // Two instances would share the database; here the one that sends runs with the default, off.
    gw = await startTestGateway({ config: { webhooks: { retrySchedule: ['1s'] } }, webhookPollMs: 50 });
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  it('its attempts are refused as not https, through the server, and nothing reaches the receiver', async () => {
    // As stored back when http was allowed (the API now refuses to store it).
    const url = `http://localhost:${hook.port}/hook`;
    expect((await admin.post('/api/admin/webhooks', { url })).status).to.equal(400);
    const { rows } = await gw.pool.query(
      "INSERT INTO webhook_endpoints (url, events, description, secret) VALUES ($1, ARRAY['webhook.test'], '', $2) RETURNING id",
      [url, `whsec_${Buffer.alloc(32, 7).toString('base64')}`],
    );
    const id = rows[0].id as string;
    expect((await admin.post(`/api/admin/webhooks/${id}/test`)).status).to.equal(202);
    const attempts = async () => (await admin.get(`/api/admin/webhooks/${id}/deliveries`)).body.deliveries[0]?.attempts ?? [];
    await until('an attempt logged', async () => (await attempts()).length >= 1, 10_000);
    expect((await attempts())[0]).to.include({ status: null, error: 'http: is not https' });
    expect(hook.received).to.have.length(0);
  });

  it('the sender refuses http to a public address without connecting', async () => {
    const sender = createSender({ allowPrivateAddresses: false, deadlineMs: 2000 });
    try {
      for (const url of ['http://8.8.8.8/hook', 'http://[2606:4700:4700::1111]/hook', 'http://example.com/hook']) {
        const r = await sender.send(url, {}, '{}');
        expect(r, url).to.include({ ok: false, status: null, error: 'http: is not https' });
        expect(r.durationMs, url).to.be.below(50);
      }
    } finally {
      await sender.close();
    }
  });
});
