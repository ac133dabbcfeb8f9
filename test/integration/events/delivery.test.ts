import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// The sender against real receivers on loopback, on a retry schedule of seconds, with two
// instances on one database.

const headersOf = (r: Receiver['received'][number]) => ({
  'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']),
});

describe('events: delivery, retries and the delivery log', function () {
  this.timeout(60_000);
  let a: TestGateway;
  let b: TestGateway;
  let admin: Client;
  const receivers: Receiver[] = [];
  const config = { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s', '1s', '1s'], disableAfter: '2s' } };

  before(async () => {
    a = await startTestGateway({ config, webhookPollMs: 50 });
    b = await startTestGateway({ config, webhookPollMs: 50, database: a.database });
    const s = await signUpAdmin(a, { name: 'Admin' });
    admin = s.client;
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await a?.database.drop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  const endpoint = async (url: string, events = ['webhook.test']) => {
    const r = await admin.post('/api/admin/webhooks', { url, events });
    expect(r.status, r.text).to.equal(201);
    return r.body as { id: string; secret: string };
  };
  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  const deliveries = async (id: string) => (await admin.get(`/api/admin/webhooks/${id}/deliveries`)).body.deliveries;

  it('a failed delivery is retried with the same webhook-id, and the log shows each attempt', async () => {
    const hook = await receiver();
    hook.status = 500;
    const ep = await endpoint(hook.url);
    const { eventId } = (await admin.post(`/api/admin/webhooks/${ep.id}/test`)).body;
    await until('two failed attempts', () => hook.received.length >= 2, 10_000);
    hook.status = 204;
    await until('delivered', async () => (await deliveries(ep.id))[0]?.state === 'delivered', 10_000);
    expect(hook.received.map((r) => r.headers['webhook-id'])).to.deep.equal([eventId, eventId, eventId]);
    const wh = new Webhook(ep.secret);
    for (const r of hook.received) wh.verify(r.body, headersOf(r));
    const [d] = await deliveries(ep.id);
    expect(d).to.include({ eventId, type: 'webhook.test', state: 'delivered' });
    expect(d.attempts.map((x: { status: number }) => x.status)).to.deep.equal([500, 500, 204]);
    expect(d.attempts[0]).to.include({ error: 'answered 500', response: 'ok' });
    expect(new Date(d.attempts[1].at).getTime() - new Date(d.attempts[0].at).getTime()).to.be.at.least(900);
    // A redelivery starts over with the same id.
    expect((await admin.post(`/api/admin/webhooks/${ep.id}/deliveries/${eventId}/redeliver`)).status).to.equal(202);
    await until('redelivered', () => hook.received.length === 4, 10_000);
    expect(hook.received[3]!.headers['webhook-id']).to.equal(eventId);
    const metrics = await (await fetch(`${a.url}/metrics`)).text() + await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).to.match(/keygate_webhook_deliveries_total\{outcome="retrying"\} [1-9]/);
    expect(metrics).to.match(/keygate_webhook_oldest_undelivered_seconds \d/);
  });

  it('two instances: each attempt is made by one of them', async () => {
    const hook = await receiver();
    const ep = await endpoint(hook.url);
    const ids = [];
    for (let i = 0; i < 30; i++) ids.push((await admin.post(`/api/admin/webhooks/${ep.id}/test`)).body.eventId);
    await until('all delivered', () => hook.received.length >= 30, 15_000);
    await until('all settled', async () => (await a.pool.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND state = 'delivered'", [ep.id])).rows[0].n === 30, 5_000);
    expect(hook.received.map((r) => r.headers['webhook-id']).sort()).to.deep.equal([...ids].sort());
    const { rows } = await a.pool.query('SELECT count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = $1', [ep.id]);
    expect(rows[0].n).to.equal(30);
  });

  it('during a secret rotation each delivery carries two signatures, one per secret', async () => {
    const hook = await receiver();
    const ep = await endpoint(hook.url);
    const rotated = await admin.post(`/api/admin/webhooks/${ep.id}/rotate-secret`);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.secret).to.not.equal(ep.secret);
    await admin.post(`/api/admin/webhooks/${ep.id}/test`);
    await until('delivered', () => hook.received.length === 1, 10_000);
    const r = hook.received[0]!;
    expect(String(r.headers['webhook-signature']).split(' ')).to.have.length(2);
    new Webhook(ep.secret).verify(r.body, headersOf(r));
    new Webhook(rotated.body.secret).verify(r.body, headersOf(r));
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(r.body, headersOf(r))).to.throw();
  });

  it('a redirect is not followed, and a huge answer is read to its limit and logged to 1 KB', async () => {
    const target = await receiver();
    const hop = await receiver();
    hop.status = 307;
    hop.headers = { location: target.url };
    const ep = await endpoint(hop.url);
    await admin.post(`/api/admin/webhooks/${ep.id}/test`);
    await until('refused', async () => (await deliveries(ep.id))[0]?.attempts.length >= 1, 10_000);
    expect((await deliveries(ep.id))[0].attempts[0]).to.include({ status: 307, error: 'answered 307' });
    expect(target.received).to.have.length(0);
    await admin.request('PATCH', `/api/admin/webhooks/${ep.id}`, { enabled: false });

    const huge = await receiver();
    huge.status = 200;
    huge.answerBytes = 50 * 1024 * 1024;
    const big = await endpoint(huge.url);
    await admin.post(`/api/admin/webhooks/${big.id}/test`);
    await until('delivered', async () => (await deliveries(big.id))[0]?.state === 'delivered', 10_000);
    expect((await deliveries(big.id))[0].attempts[0].response).to.have.length(1024);
  });

  it('an endpoint whose deliveries all failed for the disable period is disabled, audited, and keeps its deliveries', async () => {
    const dead = await receiver();
    await dead.close();
    const ep = await endpoint(dead.url);
    await admin.post(`/api/admin/webhooks/${ep.id}/test`);
    await until('disabled', async () => (await admin.get(`/api/admin/webhooks/${ep.id}`)).body.enabled === false, 15_000);
    expect((await admin.get(`/api/admin/webhooks/${ep.id}`)).body.disabledReason).to.equal('failing');
    const [d] = await deliveries(ep.id);
    expect(d.attempts.length).to.be.at.least(3);
    expect(d.attempts[0].status).to.equal(null);
    expect(d.attempts[0].error).to.match(/ECONNREFUSED|connect/i);
    const { rows } = await a.pool.query("SELECT detail FROM audit_log WHERE type = 'WEBHOOK_UPDATED' AND detail->>'webhookId' = $1", [ep.id]);
    expect(rows.map((r) => r.detail.changes)).to.deep.equal([['enabled']]);
  });
});
