import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// "Every attempt is logged (...), kept 30 days." The hourly sweep drops what is older: an event
// whose attempts are all past 30 days goes with its deliveries and log. An attempt made within the
// 30 days is kept, also when its event is older (a delivery redelivered on its 29th day): the
// attempt, and so its delivery and event, stay until the attempt itself is 30 days old.

const DAY = 86_400_000;

describe('events: the attempt log is kept 30 days, counted from each attempt', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;
  let hook: Receiver;
  let endpoint: string;

  before(async () => {
    hook = await startReceiver();
    gw = await startTestGateway({ config: { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s'] } }, webhookPollMs: 50 });
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
    endpoint = (await admin.post('/api/admin/webhooks', { url: hook.url, events: ['webhook.test'] })).body.id;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  const deliveries = async () => (await admin.get(`/api/admin/webhooks/${endpoint}/deliveries`)).body.deliveries as
    { eventId: string; state: string; attempts: { at: string }[] }[];
  /** Sends a test event and waits until its one attempt is logged. */
  const delivered = async (): Promise<string> => {
    const { eventId } = (await admin.post(`/api/admin/webhooks/${endpoint}/test`)).body;
    await until(`${eventId} delivered`, async () => (await deliveries()).find((d) => d.eventId === eventId)?.state === 'delivered', 10_000);
    return eventId;
  };
  /** Moves an event, its delivery and its attempts `days` into the past. */
  const age = async (eventId: string, days: number, attemptsToo = true) => {
    const shift = `${days} days`;
    await gw.pool.query('UPDATE events SET created_at = created_at - $2::interval WHERE id = $1', [eventId, shift]);
    await gw.pool.query('UPDATE webhook_deliveries SET created_at = created_at - $2::interval WHERE event_id = $1', [eventId, shift]);
    if (attemptsToo) await gw.pool.query('UPDATE webhook_attempts SET at = at - $2::interval WHERE event_id = $1', [eventId, shift]);
  };

  it('drops attempts older than 30 days, keeps younger ones, and keeps a recent attempt of an older event', async () => {
    const old = await delivered();
    const young = await delivered();
    const redelivered = await delivered();
    await age(old, 31);
    await age(young, 29);
    // Made 31 days ago, redelivered today: its newest attempt is minutes old.
    await age(redelivered, 31);
    expect((await admin.post(`/api/admin/webhooks/${endpoint}/deliveries/${redelivered}/redeliver`)).status).to.equal(202);
    await until('the redelivery attempted', async () => (await deliveries()).find((d) => d.eventId === redelivered)?.attempts.length === 2, 10_000);
    await until('and settled', async () => (await deliveries()).find((d) => d.eventId === redelivered)?.state === 'delivered', 10_000);

    await gw.runPeriodic();

    const left = await deliveries();
    expect(left.map((d) => d.eventId).sort()).to.deep.equal([young, redelivered].sort());
    expect(left.find((d) => d.eventId === young)!.attempts).to.have.length(1);
    // Both of its attempts are still there to read: the one of 31 days ago and today's.
    expect(left.find((d) => d.eventId === redelivered)!.attempts).to.have.length(2);
    const { rows } = await gw.pool.query('SELECT count(*)::int AS n FROM webhook_attempts WHERE event_id = $1', [old]);
    expect(rows[0].n).to.equal(0);
    expect((await gw.pool.query('SELECT count(*)::int AS n FROM events WHERE id = $1', [old])).rows[0].n).to.equal(0);

    // Once today's attempt is 30 days old too, the sweep takes it.
    await gw.pool.query("UPDATE webhook_attempts SET at = at - interval '31 days' WHERE event_id = $1 AND at > now() - interval '1 day'", [redelivered]);
    await gw.runPeriodic();
    expect((await deliveries()).map((d) => d.eventId)).to.deep.equal([young]);
  });
});
