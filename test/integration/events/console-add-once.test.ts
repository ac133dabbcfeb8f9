import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, openContext, screenshot, signedUpUser, type SignedUp } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// The console's add-endpoint form in Chromium: the POST is answered with a redirect, so reloading
// the page that shows the new secret adds no second endpoint, and the secret is on that page once;
// a rotated secret likewise, and a second rotation inside the overlap is refused on the page.
// On a phone (375 px) the endpoints table reads as one card per row, and no page is wider than the screen.

describe('web: adding a webhook endpoint and rotating its secret from the console, reloaded, and on a phone', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let browser: Browser;
  let hook: Receiver;
  let admin: SignedUp;

  before(async () => {
    [gw, browser, hook] = await Promise.all([
      startTestGateway({ config: { webhooks: { allowPrivateAddresses: true } } }), launchBrowser(), startReceiver(),
    ]);
    admin = await signedUpUser(gw);
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  const endpoints = async () => (await admin.client.get('/api/admin/webhooks')).body.webhooks as { id: string }[];

  it('a reload after adding adds nothing, and the secret is shown on one page view only', async () => {
    const t = await openContext(browser, gw.url, { sessionCookie: admin.cookie });
    try {
      await t.page.goto('/admin/webhooks');
      await t.page.getByLabel('URL').fill(hook.url);
      await t.page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = (await t.page.locator('code.secret').innerText()).trim();
      expect(secret).to.match(/^whsec_/);
      expect(await endpoints()).to.have.length(1);

      await t.page.reload();
      await t.page.getByRole('heading', { name: hook.url, level: 1 }).waitFor();
      expect(await endpoints()).to.have.length(1);
      expect(await t.page.locator('code.secret').count()).to.equal(0);
      expect(await t.page.content()).to.not.include(secret);
      await t.page.getByText('is not shown again here').waitFor();

      // Back in history: the console's pages are not stored, and the token was used up.
      await t.page.goBack();
      expect(await t.page.content()).to.not.include(secret);
      expect(await endpoints()).to.have.length(1);
      expect(t.problems).to.deep.equal([]);
    } finally {
      await t.close();
    }
  });

  it('rotating from the console shows the new secret once, and a second rotation is refused saying until when', async () => {
    const [ep] = await endpoints();
    const t = await openContext(browser, gw.url, { sessionCookie: admin.cookie });
    try {
      await t.page.goto(`/admin/webhooks/${ep!.id}`);
      await t.page.getByRole('button', { name: 'Rotate secret' }).click();
      await t.page.getByRole('heading', { name: 'Secret rotated' }).waitFor();
      const secret = (await t.page.locator('code.secret').innerText()).trim();
      expect(secret).to.match(/^whsec_/);
      await t.page.reload();
      expect(await t.page.content()).to.not.include(secret);
      await t.page.getByText('is not shown again here').waitFor();

      await t.page.getByRole('link', { name: 'Continue to the endpoint' }).click();
      const refused = t.page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/rotate'));
      await t.page.getByRole('button', { name: 'Rotate secret' }).click();
      expect((await refused).status()).to.equal(409);
      const until = (await gw.pool.query('SELECT previous_secret_until FROM webhook_endpoints WHERE id = $1', [ep!.id])).rows[0];
      await t.page.getByText(`still signs until ${(until.previous_secret_until as Date).toISOString()}`).waitFor();
    } finally {
      await t.close();
    }
  });

  const widthOver = (page: Page) => page.evaluate(() => {
    // A box that scrolls sideways inside the page (the table's wrapper did); visually hidden text
    // (1 px, clipped) is no box a reader sees.
    const over = Array.from(document.querySelectorAll<HTMLElement>('body, body *'))
      .filter((e) => e.clientWidth > 1 && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible');
    const page = document.documentElement.scrollWidth - document.documentElement.clientWidth;
    return { page, scrollers: over.map((e) => `${e.tagName} ${e.className}`) };
  });

  it('at 375 px the endpoints table stacks, each value named, and no page scrolls sideways', async () => {
    const long = `${hook.url}/a-rather-long-path-for-a-receiver/that-goes/on-and-on?with=query&and=more`;
    const input = { url: long, description: 'billing and the audit mirror', events: ['key.created'] };
    const r = await admin.client.post('/api/admin/webhooks', input);
    expect(r.status, r.text).to.equal(201);
    const phone = await openContext(browser, gw.url, { sessionCookie: admin.cookie, viewport: 'phone' });
    try {
      await phone.page.goto('/admin/webhooks');
      await phone.page.getByLabel('URL').fill(`${long}&added=from-a-phone`);
      await phone.page.getByRole('button', { name: 'Add endpoint' }).click();
      await phone.page.getByRole('heading', { name: 'Endpoint added' }).waitFor();
      expect(await widthOver(phone.page), 'the secret\'s page').to.deep.equal({ page: 0, scrollers: [] });
      await screenshot(phone.page, 'console-webhook-secret-375');
      for (const path of ['/admin/webhooks', `/admin/webhooks/${r.body.id}`, `/admin/webhooks/${r.body.id}/disable`]) {
        await phone.page.goto(path);
        expect(await widthOver(phone.page), path).to.deep.equal({ page: 0, scrollers: [] });
      }
      await phone.page.goto('/admin/webhooks');
      const row = phone.page.locator('tbody tr').filter({ hasText: 'billing and the audit mirror' });
      const label = await row.locator('td').first().evaluate((td) => getComputedStyle(td, '::before').content);
      expect(label).to.equal('"Events: "');
      const box = await row.boundingBox();
      expect(box!.x + box!.width).to.be.at.most(375);
      await screenshot(phone.page, 'console-webhooks-stacked-375');
    } finally {
      await phone.close();
    }
  });
});
