import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, pageSuite, screenshot, seriousViolations, type TestPage } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { createKey, keyItem, signedUpUser } from './helpers.ts';

const DAY = 86_400_000;

describe("web: a key's life on Settings → Developers", function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let t: TestPage;
  let session: Client;

  pageSuite({ signedIn: true, clipboard: true }, (s) => {
    gw = s.gw;
    t = s.t;
    session = s.person.client;
  });
  beforeEach(async () => {
    await t.page.goto('/settings/developers');
    await t.page.locator('#keys-message').getByText('You have no API keys yet').waitFor();
  });

  it('offers No expiry, 7, 30, 90 days and a date; a 7-day key is marked "Expires soon"', async () => {
    const { page } = t;
    const expires = page.getByRole('group', { name: 'Expires' });
    expect(await expires.getByRole('radio').evaluateAll((rs) => rs.map((r) => r.parentElement?.textContent?.trim()))).to.deep.equal(['No expiry', 'In 7 days', 'In 30 days', 'In 90 days', 'On a date']);
    await page.getByLabel('Name', { exact: true }).fill('short-lived');
    await expires.getByLabel('In 7 days').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#new-key-value').waitFor({ state: 'visible' });
    const item = keyItem(page, 'short-lived');
    await item.locator('.badge').getByText('Expires soon').waitFor();
    const listed = (await session.get('/api/api-keys')).body.keys[0];
    expect(new Date(listed.expiresAt).getTime() - Date.now()).to.be.within(7 * DAY - 60_000, 7 * DAY + 60_000);
    expect(listed.expiresSoon).to.equal(true);
  });

  it('the date field shows only while "On a date" is chosen, and a date is sent as the end of that day', async () => {
    const { page } = t;
    const day = new Date(Date.now() + 10 * DAY).toISOString().slice(0, 10);
    await page.getByLabel('Name', { exact: true }).fill('dated');
    // The date is asked for only once "On a date" is chosen.
    expect(await page.getByLabel('Date', { exact: true }).isVisible()).to.equal(false);
    await page.getByLabel('On a date').check();
    expect(await page.getByLabel('Date', { exact: true }).isVisible()).to.equal(true);
    await page.getByLabel('Date', { exact: true }).fill(day);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#new-key-value').waitFor({ state: 'visible' });
    const listed = (await session.get('/api/api-keys')).body.keys[0];
    expect(listed.expiresAt).to.not.equal(null);
    expect(listed.expiresSoon).to.equal(false);
  });

  it('draws 30 days of use as bars with the text "N requests in the last 30 days"', async () => {
    const { page } = t;
    const key = await createKey(page, 'busy');
    for (let i = 0; i < 3; i++) await new Client(gw.url).withKey(key).get('/api/auth/get-session');
    // The periodic flush makes them visible; reading usage never writes.
    await gw.runPeriodic();
    await page.reload();
    const item = keyItem(page, 'busy');
    await item.locator('figcaption').getByText('3 requests in the last 30 days').waitFor();
    const svg = item.locator('svg.usage-bars');
    expect(await svg.getAttribute('aria-hidden')).to.equal('true');
    expect(await svg.locator('rect.bar').count()).to.equal(30);
    // The dated axis: every seventh day back from today, each label inside the drawing.
    const today = new Date().toISOString().slice(0, 10);
    const ticks = await svg.locator('text.tick').allTextContents();
    expect(ticks).to.have.length(5);
    expect(ticks[4]).to.equal(`${Number(today.slice(8, 10))} ${new Date(`${today}T00:00:00Z`).toLocaleString('en', { month: 'short', timeZone: 'UTC' })}`);
    const outside = await svg.evaluate((el) => {
      const width = (el as SVGSVGElement).viewBox.baseVal.width;
      return Array.from(el.querySelectorAll<SVGTextElement>('text.tick')).map((x) => x.getBBox()).filter((b) => b.x < 0 || b.x + b.width > width + 0.5).map((b) => [b.x, b.width, width]);
    });
    expect(outside).to.deep.equal([]);
    expect(describeViolations(await seriousViolations(page))).to.equal('');
    await screenshot(page, 'developers-usage-chart-desktop');
  });

  it('rotates with a grace choice, reveals the new key once, and the old row says until when it works', async () => {
    const { page } = t;
    const oldKey = await createKey(page, 'deploy');
    await page.getByRole('button', { name: 'I have stored it safely' }).click();
    // Rotate and Revoke stand apart at 1280 px: a slip of the pointer must not hit the other.
    const [ro, rv] = await Promise.all([keyItem(page, 'deploy').getByRole('button', { name: /^Rotate/ }).boundingBox(), keyItem(page, 'deploy').getByRole('button', { name: /^Revoke/ }).boundingBox()]);
    const apart = ro!.x + ro!.width + 4 <= rv!.x || rv!.x + rv!.width + 4 <= ro!.x || ro!.y + ro!.height + 4 <= rv!.y || rv!.y + rv!.height + 4 <= ro!.y;
    expect(apart, JSON.stringify({ ro, rv })).to.equal(true);
    await keyItem(page, 'deploy').getByRole('button', { name: 'Rotate key “deploy”' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate “deploy”?' });
    await dialog.waitFor();
    expect(await dialog.getByLabel('In 1 day').isChecked()).to.equal(true);
    expect(describeViolations(await seriousViolations(page))).to.equal('');
    await screenshot(page, 'developers-rotate-dialog-desktop', false);
    await dialog.getByLabel('In 1 hour').check();
    await dialog.getByRole('button', { name: 'Rotate key' }).click();

    const value = page.locator('#new-key-value');
    await value.waitFor({ state: 'visible' });
    const fresh = (await value.textContent()) ?? '';
    expect(fresh).to.match(/^key_/).and.not.equal(oldKey);
    expect((await new Client(gw.url).withKey(fresh).get('/api/auth/get-session')).status).to.equal(200);
    expect((await new Client(gw.url).withKey(oldKey).get('/api/auth/get-session')).status).to.equal(200);

    const rows = page.locator('#keys-list > li');
    expect(await rows.count()).to.equal(2);
    const oldRow = page.locator('#keys-list > li', { hasText: 'Replaced, works until' });
    await oldRow.waitFor();
    expect(await oldRow.getByRole('button', { name: /^Rotate/ }).count()).to.equal(0);
    const until = await oldRow.locator('time').last().getAttribute('datetime');
    expect(new Date(until!).getTime() - Date.now()).to.be.within(3600_000 - 60_000, 3600_000 + 5000);
    expect(describeViolations(await seriousViolations(page))).to.equal('');

    // The two rows share the name; each names the other by the start of its key and links to it.
    const newRow = page.locator('#keys-list > li', { hasText: 'Replaces' });
    const [oldStart, newStart] = await Promise.all([oldRow, newRow].map((r) => r.locator('.key-start').innerText()));
    expect(oldKey.startsWith(oldStart!.replace('…', '')), oldStart).to.equal(true);
    expect(fresh.startsWith(newStart!.replace('…', '')), newStart).to.equal(true);
    expect(oldStart).to.not.equal(newStart);
    const replacedBy = oldRow.locator('dt', { hasText: 'Replaced by' }).locator('xpath=following-sibling::dd[1]').getByRole('link');
    const replaces = newRow.locator('dt', { hasText: 'Replaces' }).locator('xpath=following-sibling::dd[1]').getByRole('link');
    expect(await replacedBy.innerText()).to.equal(newStart);
    expect(await replaces.innerText()).to.equal(oldStart);
    expect(await oldRow.locator('dt', { hasText: /^Replaces$/ }).count()).to.equal(0);
    expect(await newRow.locator('dt', { hasText: 'Replaced by' }).count()).to.equal(0);
    // The new key links to its predecessor's row.
    await replaces.click();
    expect(new URL(page.url()).hash).to.equal(`#${await oldRow.getAttribute('id')}`);
    expect(await oldRow.evaluate((li) => li.matches(':target'))).to.equal(true);
    // Their buttons do not read alike either.
    expect(await newRow.getByRole('button', { name: `Revoke key “deploy” (${newStart})` }).count()).to.equal(1);
    expect(await oldRow.getByRole('button', { name: `Revoke key “deploy” (${oldStart})` }).count()).to.equal(1);
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 900 });
      expect(describeViolations(await seriousViolations(page)), `${width} px`).to.equal('');
      await screenshot(page, `developers-rotated-pair-${width}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});

describe('web: the expiry choice under apiKeys.maxLifetimeDays: 30', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let browser: Browser;
  before(async () => {
    [gw, browser] = await Promise.all([startTestGateway({ config: { apiKeys: { maxLifetimeDays: 30 } } }), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
  });

  it('offers no "No expiry" and nothing longer than 30 days', async () => {
    const { cookie } = await signedUpUser(gw);
    const t = await openContext(browser, gw.url, { sessionCookie: cookie });
    try {
      await t.page.goto('/settings/developers');
      const labels = await t.page.getByRole('group', { name: 'Expires' }).getByRole('radio').evaluateAll((rs) => rs.map((r) => r.parentElement?.textContent?.trim()));
      expect(labels).to.deep.equal(['In 7 days', 'In 30 days', 'On a date']);
      expect(await t.page.getByText('Keys on this server stop working within 30 days.').count()).to.equal(1);
    } finally {
      await t.close();
    }
  });
});
