import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { loadConfig } from '../../../src/config.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// `webhooks.retrySchedule` and `webhooks.disableAfter` are spans the database adds to and takes
// from now(). A span PostgreSQL cannot hold (999999999d overflows its interval) made every failed
// attempt's write fail: nothing logged, the delivery tried again each time its claim lapsed, for
// ever. Such a span is refused when the configuration is read, naming the key; the longest allowed
// (3650d, ten years) is written like any other.

describe('events: webhook retry and disable spans are bounded where the configuration is read', function () {
  this.timeout(60_000);
  let gw: TestGateway | undefined;
  let hook: Receiver;

  before(async () => {
    hook = await startReceiver();
    hook.status = 500;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  it('refuses a span longer than 3650d in either key, saying which', () => {
    for (const [webhooks, key] of [
      [{ retrySchedule: ['5s', '999999999d'] }, 'webhooks.retrySchedule.1'],
      [{ retrySchedule: ['87601h'] }, 'webhooks.retrySchedule.0'],
      [{ disableAfter: '999999999d' }, 'webhooks.disableAfter'],
      [{ disableAfter: '3651d' }, 'webhooks.disableAfter'],
    ] as const) {
      expect(() => loadConfig({ overrides: { webhooks }, env: {} }), key).to.throw(new RegExp(`${key.replaceAll('.', '\\.')}: at most 3650d`));
    }
  });

  it('with the longest spans allowed, a failed attempt is logged and its next attempt set ten years on', async () => {
    gw = await startTestGateway({
      config: { webhooks: { allowPrivateAddresses: true, retrySchedule: ['3650d'], disableAfter: '3650d' } }, webhookPollMs: 50,
    });
    const admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
    const ep = (await admin.post('/api/admin/webhooks', { url: hook.url, events: ['webhook.test'] })).body;
    await admin.post(`/api/admin/webhooks/${ep.id}/test`);
    const first = async () => (await admin.get(`/api/admin/webhooks/${ep.id}/deliveries`)).body.deliveries[0];
    await until('the failed attempt logged', async () => (await first())?.attempts.length === 1, 10_000);
    const d = await first();
    expect(d.state).to.equal('pending');
    expect(d.attempts[0]).to.include({ status: 500, error: 'answered 500' });
    const years = (Date.parse(d.nextAttemptAt) - Date.now()) / (365.25 * 86_400_000);
    expect(years).to.be.within(9.9, 10.1);
    expect((await admin.get(`/api/admin/webhooks/${ep.id}`)).body.enabled).to.equal(true);
  });
});
