import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { describeViolations, pageSuite, screenshot, seriousViolations, viewports, type SignedUp, type TestPage } from '../../support/browser.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { keyItem } from './helpers.ts';

// What a walk through the console and Settings → Developers on a fresh install met, each as the
// behaviour it now has: a webhook is disabled only once confirmed, with or without script; every
// console page, confirmation pages included, passes axe and fits a phone; a rotated key says which
// key it replaces, and what its usage figure counts.

let hooks = 0;
/** A loopback URL no one listens on: deliveries fail in the background, which these tests ignore. */
const hookUrl = () => `http://127.0.0.1:9/keygate-hook-${++hooks}`;

describe('web: the console walk', function () {
  this.timeout(120_000);
  let gw: TestGateway;
  let t: TestPage;
  let person: SignedUp;
  pageSuite({ signedIn: true, gateway: { config: { webhooks: { allowPrivateAddresses: true } } } }, (s) => {
    gw = s.gw;
    t = s.t;
    person = s.person;
  });

  const makeAdmin = async () => gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [person.user.id]);
  const addHook = async (url: string) => {
    const res = await person.client.post('/api/admin/webhooks', { url, description: 'billing' });
    expect(res.status, res.text).to.equal(201);
    return res.body.id as string;
  };
  const hookEnabled = async (id: string) => (await gw.pool.query('SELECT enabled FROM webhook_endpoints WHERE id = $1', [id])).rows[0].enabled as boolean;
  const axeClean = async (page: Page, label: string) => {
    const v = await seriousViolations(page);
    expect(v, `${label}: ${describeViolations(v)}`).to.deep.equal([]);
  };

  describe('disabling a webhook endpoint', () => {
    it('asks first in a dialog: Cancel leaves it enabled, the dialog’s button disables it', async () => {
      await makeAdmin();
      const url = hookUrl();
      const id = await addHook(url);
      await t.page.goto('/admin/webhooks');
      const row = t.page.getByRole('row').filter({ hasText: url });
      const disable = row.getByRole('link', { name: 'Disable', exact: true });
      await disable.click();
      const dialog = t.page.getByRole('dialog', { name: `Disable ${url}?` });
      await dialog.waitFor();
      await axeClean(t.page, 'dialog');
      await screenshot(t.page, 'console-webhook-disable-dialog', false);
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      expect(await hookEnabled(id)).to.equal(true);

      await disable.click();
      await dialog.getByRole('button', { name: 'Disable endpoint' }).click();
      await row.locator('.badge.bad').getByText('disabled').waitFor();
      expect(await hookEnabled(id)).to.equal(false);
    });

    it('without JavaScript the link leads to a confirmation page whose form disables it', async () => {
      await makeAdmin();
      const url = hookUrl();
      const id = await addHook(url);
      const ctx = await t.context.browser()!.newContext({ baseURL: gw.url, javaScriptEnabled: false });
      try {
        await ctx.addCookies([{ name: 'keygate_session', value: person.cookie, url: gw.url }]);
        const p = await ctx.newPage();
        await p.goto('/admin/webhooks');
        const row = p.getByRole('row').filter({ hasText: url });
        await row.getByRole('link', { name: 'Disable', exact: true }).click();
        await p.getByRole('heading', { name: `Disable ${url}?`, level: 1 }).waitFor();
        expect(new URL(p.url()).pathname).to.equal(`/admin/webhooks/${id}/disable`);
        expect(await hookEnabled(id)).to.equal(true);
        await p.getByRole('button', { name: 'Disable endpoint' }).click();
        await p.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
        expect(await hookEnabled(id)).to.equal(false);
        // Enabling stops nothing, so it is one button, no question.
        await row.getByRole('button', { name: 'Enable' }).click();
        await row.getByRole('link', { name: 'Disable', exact: true }).waitFor();
        expect(await hookEnabled(id)).to.equal(true);
      } finally {
        await ctx.close();
      }
    });
  });

  it('every console page, its confirmation pages and Settings → Developers pass axe at 1280 and 375 px, only tables scroll sideways', async () => {
    await makeAdmin();
    const url = hookUrl();
    const hook = await addHook(url);
    const other = await signUp(gw.url, { email: `walk-${Date.now()}@example.test` });
    const key = (await other.client.post('/api/api-keys', { name: 'watched' })).body as { id: string };
    await other.client.post(`/api/api-keys/${key.id}/rotate`, { gracePeriodSeconds: 3600 });
    const pages: [string, string][] = [
      ['/admin', 'Operator console'], ['/admin/users', 'Users'], ['/admin/keys', 'Keys'], ['/admin/audit', 'Audit log'],
      ['/admin/policy', 'Policy'], ['/admin/webhooks', 'Webhooks'], [`/admin/webhooks/${hook}`, url],
      [`/admin/webhooks/${hook}/disable`, `Disable ${url}?`], [`/admin/users/${other.user.id}/ban`, `Ban ${other.user.email}?`],
      [`/admin/users/${other.user.id}/plan`, `Set the plan of ${other.user.email}`], [`/admin/keys/${key.id}/revoke`, 'Revoke this key?'],
      ['/admin/policy/rollback-0', 'Make version 0 live again?'], ['/settings/developers', 'Developers'],
    ];
    // Every page the gateway serves under /admin (and Settings → Developers) is walked: a new console
    // page without a line above fails here rather than going unchecked by axe.
    const pagePaths = gw.routes.filter((r) => r.methods.includes('GET') && /^\/(admin|settings)(\/|$)/.test(r.path)).map((r) => r.path);
    expect(pagePaths).to.include('/admin/policy/:action');
    for (const route of pagePaths) {
      const pattern = new RegExp(`^${route.replace(/:[A-Za-z]+/g, '[^/]+')}$`);
      expect(pages.some(([path]) => pattern.test(path.split('?')[0]!)), `${route} is served but not walked`).to.equal(true);
    }
    for (const [path, heading] of pages) {
      for (const [name, size] of Object.entries(viewports)) {
        await t.page.setViewportSize(size);
        const res = await t.page.goto(path);
        expect(res?.status(), path).to.equal(200);
        await t.page.getByRole('heading', { name: heading, exact: true, level: 1 }).waitFor();
        await axeClean(t.page, `${path} at ${name}`);
        const wider = await t.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect(wider, `${path} at ${name} is wider than the screen`).to.be.at.most(0);
        for (const wrap of await t.page.locator('.table-wrap').all()) expect(await wrap.getAttribute('tabindex'), `${path} ${name}`).to.equal('0');
        await screenshot(t.page, `walk${path.replace(/[/-]+/g, '-').replace(/-[0-9a-f]{8}-[0-9a-f-]{27}/g, '-id')}-${name}`);
      }
    }
  });

  it('at 375 px each user’s actions and each instance’s policy version are in view without scrolling sideways', async () => {
    await makeAdmin();
    const other = await signUp(gw.url, { email: `phone-${Date.now()}-with-a-long-name@example.test` });
    await t.page.setViewportSize(viewports.phone);
    await t.page.goto(`/admin/users?q=${encodeURIComponent(other.user.email)}`);
    const inView = async (name: string, selector: ReturnType<Page['locator']>) => {
      const box = (await selector.boundingBox())!;
      expect(box.x, name).to.be.at.least(0);
      expect(box.x + box.width, name).to.be.at.most(viewports.phone.width);
    };
    for (const action of ['Ban', 'Make admin', 'Set plan']) await inView(action, t.page.getByRole('link', { name: action, exact: true }));
    // Stacked on a phone, the table is still read as a table: a row per user, a header per column.
    expect(await t.page.getByRole('row').count()).to.equal(2);
    expect(await t.page.getByRole('columnheader').allTextContents()).to.include('Actions');
    expect(await t.page.getByRole('row').nth(1).getByRole('cell').count()).to.equal(7);
    await screenshot(t.page, 'walk-users-phone');

    await t.page.goto('/admin');
    const fleet = t.page.getByRole('region', { name: 'Instances', exact: true });
    const instance = fleet.getByRole('row').nth(1);
    await inView('policy version', instance.getByRole('cell').first());
    await inView('seen', instance.getByRole('cell').last());
    // The instance is named by the start of its id, as `keygate policy status` prints it.
    expect(await instance.getByRole('rowheader').innerText()).to.match(/^[0-9a-f]{8}$/);
    // Each value is announced with its column's name where the table stacks.
    expect(await instance.getByRole('cell', { name: /^Policy version: \d+$/ }).count()).to.equal(1);
    await screenshot(t.page, 'walk-overview-phone');
  });

  it('the console names the key a rotated one replaces, on the keys page and in the audit log', async () => {
    await makeAdmin();
    const owner = await signUp(gw.url, { email: `rot-${Date.now()}@example.test` });
    const old = (await owner.client.post('/api/api-keys', { name: 'deploy' })).body as { id: string; start: string };
    const fresh = (await owner.client.post(`/api/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 3600 })).body as { id: string; start: string };
    await t.page.goto(`/admin/keys?owner=${encodeURIComponent(owner.user.email)}`);
    const item = (start: string) => t.page.locator('ul.console-keys > li').filter({ has: t.page.getByRole('heading', { name: `deploy ${start}…` }) });
    expect(await item(fresh.start).innerText()).to.contain(`replaces ${old.start}…`);
    expect(await item(old.start).innerText()).to.contain(`replaced by ${fresh.start}…`);
    await item(fresh.start).getByRole('link', { name: `${old.start}…` }).click();
    await t.page.waitForURL((u) => u.searchParams.get('q') === old.id.slice(0, 8));
    expect(await t.page.locator('ul.console-keys > li').count()).to.equal(1);
    await item(old.start).waitFor();

    await t.page.goto('/admin/audit?type=API_KEY_ROTATED');
    const row = t.page.getByRole('row').filter({ hasText: 'API_KEY_ROTATED' });
    await row.getByText(`replaces ${old.id.slice(0, 8)}`).waitFor();
    expect(await row.getByRole('link', { name: old.id.slice(0, 8) }).getAttribute('href')).to.equal(`/admin/keys?q=${old.id.slice(0, 8)}`);
    await axeClean(t.page, 'audit');
  });

  it('on Settings → Developers a rotated key’s usage says it counts that key’s own requests only', async () => {
    const old = (await person.client.post('/api/api-keys', { name: 'deploy' })).body as { id: string; key: string; start: string };
    for (let i = 0; i < 2; i++) await new Client(gw.url).withKey(old.key).get('/api/auth/get-session');
    await gw.runPeriodic();
    await person.client.post(`/api/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 3600 });
    await t.page.goto('/settings/developers');
    const rows = keyItem(t.page, 'deploy');
    const newRow = rows.filter({ hasText: 'Replaces' });
    const oldRow = rows.filter({ hasText: 'Replaced by' });
    await newRow.locator('figcaption').getByText('0 requests in the last 30 days').waitFor();
    expect(await newRow.locator('figcaption').innerText()).to.contain(
      'Counts only requests made with this key, which has a daily quota of its own: those made with the key it replaces are on that key’s row.');
    await oldRow.locator('figcaption').getByText('2 requests in the last 30 days').waitFor();
    expect(await oldRow.locator('.usage-note').count()).to.equal(0);
    for (const [name, size] of Object.entries(viewports)) {
      await t.page.setViewportSize(size);
      await axeClean(t.page, name);
      await screenshot(t.page, `walk-developers-rotated-${name}`);
    }
    // Once the old key has left the list, the note no longer points at a row that is not there. (A
    // day back: the gateway's clock, not the database's, decides when a grace period has ended.)
    await gw.pool.query("UPDATE apikeys SET expires_at = now() - interval '1 day' WHERE id = $1", [old.id]);
    await t.page.reload();
    await keyItem(t.page, 'deploy').locator('.usage-note').getByText(/those made with the key it replaced are not counted here/).waitFor();
  });
});
