import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// "A slow or dead endpoint never delays another endpoint": each endpoint may have a few attempts in
// flight, and an instance a few dozen. Ten endpoints that never answer, each with deliveries due,
// take every one of those slots for the attempt's whole deadline (10 s). A healthy endpoint's event
// must still go at once, not when the first of the slow attempts gives up.

describe('events: endpoints that never answer, enough to fill every slot, do not delay a healthy one', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let admin: Client;
  let hook: Receiver;
  const hanging: Server[] = [];
  let reached = 0;

  before(async () => {
    gw = await startTestGateway({ config: { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1m'] } }, webhookPollMs: 50 });
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
    hook = await startReceiver();
  });
  after(async () => {
    for (const s of hanging) {
      s.closeAllConnections();
      s.close();
    }
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  /** An endpoint that takes the request and never answers. */
  const silent = async (): Promise<string> => {
    const s = createServer((req) => {
      reached++;
      req.resume();
    });
    hanging.push(s);
    await new Promise<void>((ok) => s.listen(0, '127.0.0.1', () => ok()));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`;
  };
  const add = async (url: string) => {
    const r = await admin.post('/api/admin/webhooks', { url, events: ['webhook.test'] });
    expect(r.status, r.text).to.equal(201);
    return r.body.id as string;
  };

  it('the healthy endpoint is delivered to while every slow attempt is still waiting', async () => {
    const slow: string[] = [];
    for (let i = 0; i < 10; i++) slow.push(await add(await silent()));
    for (const id of slow) for (let i = 0; i < 5; i++) expect((await admin.post(`/api/admin/webhooks/${id}/test`)).status).to.equal(202);
    // The slots are full: 32 attempts (the instance's share) reached the silent endpoints.
    await until('every slot held by a silent endpoint', () => reached >= 32, 20_000);

    const healthy = await add(hook.url);
    const { eventId } = (await admin.post(`/api/admin/webhooks/${healthy}/test`)).body;
    await until('the healthy endpoint received its event', () => hook.received.length >= 1, 20_000);
    expect(hook.events().map((e) => e.id)).to.deep.equal([eventId]);

    // It went before any slow attempt ended: none of them is in the log yet.
    const settled = await gw.pool.query('SELECT count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = ANY ($1::uuid[])', [slow]);
    expect(settled.rows[0].n).to.equal(0);
    const state = async () => (await admin.get(`/api/admin/webhooks/${healthy}/deliveries`)).body.deliveries[0]?.state;
    await until('its delivery settled as delivered', async () => (await state()) === 'delivered', 5_000);
  });
});
