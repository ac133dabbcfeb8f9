import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, screenshot, seriousViolations, type TestPage } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { createKey, keyItem, revokeKey, signedUpUser, submitCreate } from './helpers.ts';

describe('web: Settings → Developers (Variant A, AI and MCP on)', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let browser: Browser;
  let t: TestPage;

  before(async () => {
    [gw, browser] = await Promise.all([startTestGateway({ config: { ai: { enabled: true } } }), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
  });
  beforeEach(async () => {
    const { cookie } = await signedUpUser(gw);
    t = await openContext(browser, gw.url, { sessionCookie: cookie, clipboard: true });
    await t.page.goto('/settings/developers');
    await t.page.locator('#keys-message').getByText('You have no API keys yet').waitFor();
  });
  afterEach(async function () {
    // A beforeEach that failed opened no page: its own failure says why.
    if (!t) return;
    // No CSP refusal, no script error, whatever the test did.
    expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
    await t.close();
  });

  describe('when a key is created without MCP access', () => {
    it('shows it once with the warning, copies it, and the copied key signs in to the API', async () => {
      const { page } = t;
      const key = await createKey(page, 'CI deploys');
      const reveal = page.getByRole('region', { name: 'Copy your new key now' });
      await expect(await reveal.textContent()).to.include('This key will not be shown again').and.include('cannot be recovered');
      expect(await page.evaluate(() => document.activeElement?.id)).to.equal('new-key-title');

      await page.getByRole('button', { name: 'Copy key' }).click();
      await page.locator('#copy-status').getByText('Copied').waitFor();
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      expect(copied).to.equal(key);

      const session = await new Client(gw.url).withKey(copied).get('/api/auth/get-session');
      expect(session.status).to.equal(200);
      expect(session.body.session.kind).to.equal('key');

      const item = keyItem(page, 'CI deploys');
      const text = (await item.textContent()) ?? '';
      expect(text).to.include(key.slice(0, 12)).and.include('Active').and.include('Never');
      expect(text).to.not.include(key);
      expect(await item.locator('.badge').count()).to.equal(0);
      await screenshot(page, 'developers-new-key-desktop');
    });
  });

  describe('when the browser will not let the page copy', () => {
    it('selects the key and says how to copy it by hand', async () => {
      const { page } = t;
      // As on plain http away from localhost, where navigator.clipboard does not exist. A string,
      // because tsx would wrap a function's inner arrow in a helper the page does not have.
      await page.addInitScript("Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined })");
      await page.reload();
      const key = await createKey(page, 'by hand');
      await page.getByRole('button', { name: 'Copy key' }).click();
      await page.locator('#copy-status').getByText('The key is selected: press Ctrl+C').waitFor();
      expect(await page.evaluate(() => getSelection()?.toString())).to.equal(key);
    });
  });

  describe('when a key is created with MCP access', () => {
    it('is marked MCP in the list, and the API stored the MCP permission', async () => {
      const { page } = t;
      const key = await createKey(page, 'agent', { mcp: true });
      const badge = keyItem(page, 'agent').locator('.badge');
      expect(await badge.allTextContents()).to.deep.equal(['MCP (MCP access)']);
      expect(await badge.first().evaluate((b) => b.firstChild?.textContent)).to.equal('MCP');
      const listed = await new Client(gw.url).withKey(key).get('/api/api-keys');
      expect(listed.body.keys[0]).to.include({ name: 'agent', mcp: true, ai: false });
      expect(await page.getByLabel('Allow MCP access').isChecked()).to.equal(false);
    });
  });

  describe('when the page is reloaded after a create', () => {
    it('the plaintext is gone for good: not on the page, in storage, or in the address', async () => {
      const { page } = t;
      const key = await createKey(page, 'one-time');
      expect(page.url()).to.equal(`${gw.url}/settings/developers`);
      const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
      expect(stored).to.not.include(key);
      await page.reload();
      await keyItem(page, 'one-time').waitFor();
      expect(await page.locator('#new-key').isHidden()).to.equal(true);
      expect(await page.content()).to.not.include(key);
      expect(await page.evaluate(() => ({ ...localStorage, ...sessionStorage }))).to.deep.equal({});
    });
  });

  describe('when a key is revoked', () => {
    it('asks first, reminds about automations, and the key stops working', async () => {
      const { page } = t;
      const key = await createKey(page, 'leaked');
      await page.getByRole('button', { name: 'I have stored it safely' }).click();
      expect(await page.locator('#new-key').isHidden()).to.equal(true);

      const trigger = keyItem(page, 'leaked').getByRole('button', { name: 'Revoke key “leaked”' });
      await trigger.click();
      const dialog = page.getByRole('dialog', { name: 'Revoke “leaked”?' });
      await dialog.waitFor();
      expect(await dialog.textContent()).to.include('Automations you created keep running').and.include('Review your automations');
      // The viewport only: a full-page capture leaves the modal backdrop short of the page.
      await screenshot(page, 'developers-revoke-dialog-desktop', false);
      expect(describeViolations(await seriousViolations(page))).to.equal('');

      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect(await dialog.isHidden()).to.equal(true);
      expect(await trigger.evaluate((b) => b === document.activeElement)).to.equal(true);
      expect((await new Client(gw.url).withKey(key).get('/api/auth/get-session')).status).to.equal(200);

      await revokeKey(page, 'leaked');
      expect(await page.locator('#page-status').textContent()).to.include('“leaked” was revoked');
      expect(await page.evaluate(() => document.activeElement?.id)).to.equal('keys-title');
      expect((await new Client(gw.url).withKey(key).get('/api/auth/get-session')).status).to.equal(401);
    });
  });

  describe('when the name is refused', () => {
    it('says so next to the name field and moves focus there', async () => {
      const { page } = t;
      await submitCreate(page, '   ');
      const name = page.getByLabel('Name', { exact: true });
      await page.locator('#create-name-error').getByText('Give the key a name of 1 to 64 characters.').waitFor();
      expect(await name.getAttribute('aria-invalid')).to.equal('true');
      expect(await name.evaluate((n) => n === document.activeElement)).to.equal(true);
    });
  });

  describe('when the revoke dialog is used with the keyboard', () => {
    it('opens on Enter with focus on Cancel, and Escape closes it with focus back on the button', async () => {
      const { page } = t;
      await createKey(page, 'keyboard');
      const trigger = keyItem(page, 'keyboard').getByRole('button', { name: 'Revoke key “keyboard”' });
      await trigger.focus();
      await page.keyboard.press('Enter');
      await page.getByRole('dialog').waitFor();
      expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal('Cancel');
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      expect(await trigger.evaluate((b) => b === document.activeElement)).to.equal(true);
      expect(await keyItem(page, 'keyboard').count()).to.equal(1);
    });
  });

  describe('when the session ends while the page is open', () => {
    it('a create sends the user to sign in again and creates nothing', async () => {
      const { page } = t;
      await gw.pool.query('DELETE FROM sessions');
      await submitCreate(page, 'too late');
      await page.waitForURL('**/sign-in');
      const { rows } = await gw.pool.query("SELECT count(*)::int AS n FROM apikeys WHERE name = 'too late'");
      expect(rows[0].n).to.equal(0);
    });
  });

  describe('signing out', () => {
    it('ends the session and returns to the sign-in page', async () => {
      const { page } = t;
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL('**/sign-in');
      await page.goto('/settings/developers');
      expect(new URL(page.url()).pathname).to.equal('/sign-in');
    });
  });

  describe('accessibility and layout', () => {
    for (const viewport of ['desktop', 'phone'] as const) {
      it(`has no serious or critical axe violations with keys listed and a new key shown (${viewport})`, async () => {
        const { page } = t;
        await page.setViewportSize(viewport === 'phone' ? { width: 375, height: 740 } : { width: 1280, height: 860 });
        await createKey(page, 'nightly backups');
        await page.getByRole('button', { name: 'I have stored it safely' }).click();
        await createKey(page, 'Claude Desktop (MCP)', { mcp: true, ai: true });
        expect(describeViolations(await seriousViolations(page))).to.equal('');
        // Nothing may be wider than the phone's screen.
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(viewport === 'phone' ? 375 : 1280);
        await screenshot(page, `developers-${viewport}`);
      });
    }
  });
});
