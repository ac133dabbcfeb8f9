import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { describeViolations, launchBrowser, openContext, screenshot, seriousViolations, signedUpUser } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { until } from '../../support/until.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// /admin/webhooks in Chromium, as a new admin would use it: add an endpoint, copy its secret,
// create and revoke a key, see both deliveries verified by a receiver, send a test, redeliver, disable.

describe('web: the webhooks console page', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let browser: Browser;
  let hook: Receiver;

  before(async () => {
    [gw, browser, hook] = await Promise.all([
      startTestGateway({ config: { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s'] } }, webhookPollMs: 50 }),
      launchBrowser(), startReceiver(),
    ]);
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  it('an admin adds an endpoint, key events arrive verified, and test, redeliver and disable work from the page', async () => {
    const admin = await signedUpUser(gw);
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
    const t = await openContext(browser, gw.url, { sessionCookie: admin.cookie });
    try {
      await t.page.goto('/admin');
      await t.page.getByRole('link', { name: 'Webhooks' }).click();
      await t.page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      await t.page.getByLabel('URL').fill(hook.url);
      await t.page.getByLabel('Description').fill('billing');
      await t.page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = (await t.page.locator('code.secret').innerText()).trim();
      expect(secret).to.match(/^whsec_/);

      const key = (await admin.client.post('/api/api-keys', { name: 'watched' })).body;
      expect((await admin.client.delete(`/api/api-keys/${key.id}`)).status).to.equal(204);
      await until('both key events', () => hook.events('key.created').length === 1 && hook.events('key.revoked').length === 1, 10_000);
      const wh = new Webhook(secret);
      for (const r of hook.received) wh.verify(r.body, { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) });

      await t.page.goto('/admin/webhooks');
      await t.page.getByRole('button', { name: 'Send test' }).click();
      await t.page.getByRole('heading', { name: hook.url }).waitFor();
      await until('test delivered', () => hook.events('webhook.test').length === 1, 10_000);
      await t.page.reload();
      await t.page.locator('.deliveries li').filter({ hasText: 'key.revoked' }).getByText('HTTP 204').first().waitFor();
      const v = await seriousViolations(t.page);
      expect(v, describeViolations(v)).to.deep.equal([]);
      await screenshot(t.page, 'console-webhooks-deliveries-1280');

      await t.page.locator('.deliveries > li').filter({ hasText: 'key.created' }).getByRole('button', { name: 'Redeliver' }).click();
      await until('redelivered', () => hook.events('key.created').length === 2, 10_000);
      expect(hook.events('key.created')[1]!.id).to.equal(hook.events('key.created')[0]!.id);

      await t.page.goto('/admin/webhooks');
      await screenshot(t.page, 'console-webhooks-1280');
      await t.page.getByRole('link', { name: 'Disable' }).click();
      await t.page.getByRole('dialog').getByRole('button', { name: 'Disable endpoint' }).click();
      await t.page.getByText('disabled', { exact: true }).waitFor();
      expect((await admin.client.get('/api/admin/webhooks')).body.webhooks[0].enabled).to.equal(false);
      expect(t.problems).to.deep.equal([]);
    } finally {
      await t.close();
    }

    const phone = await openContext(browser, gw.url, { sessionCookie: admin.cookie, viewport: 'phone' });
    try {
      await phone.page.goto('/admin/webhooks');
      await phone.page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow).to.be.at.most(0);
      await screenshot(phone.page, 'console-webhooks-375');
      const id = (await admin.client.get('/api/admin/webhooks')).body.webhooks[0].id;
      await phone.page.goto(`/admin/webhooks/${id}`);
      await screenshot(phone.page, 'console-webhooks-deliveries-375');
    } finally {
      await phone.close();
    }
  });
});
