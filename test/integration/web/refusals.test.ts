import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, screenshot, seriousViolations, type TestPage } from '../../support/browser.ts';
import { startTestGateway, type TestGatewayOptions, type TestGateway } from '../../support/gateway.ts';
import { createError, createKey, keyItem, revokeKey, signedUpUser, submitCreate } from './helpers.ts';

// A refused create is said as what happened and what to do, never as a status code.

describe('web: a refused create, in words', function () {
  this.timeout(60_000);
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => browser?.close());

  function withGateway(opts: TestGatewayOptions, body: (ctx: { gw: () => TestGateway; t: () => TestPage }) => void) {
    let gw: TestGateway;
    let t: TestPage;
    before(async () => {
      gw = await startTestGateway(opts);
    });
    after(async () => gw?.stop());
    beforeEach(async () => {
      const { cookie } = await signedUpUser(gw);
      t = await openContext(browser, gw.url, { sessionCookie: cookie });
      await t.page.goto('/settings/developers');
      await t.page.locator('#keys-message').getByText('You have no API keys yet').waitFor();
    });
    afterEach(async () => {
      if (!t) return;
      expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
      await t.close();
    });
    body({ gw: () => gw, t: () => t });
  }

  const noStatusCode = (text: string) => expect(text).to.not.match(/\b(400|429|503)\b|API_KEY|SERVICE_UNAVAILABLE/);

  describe('when the user already holds maxKeysPerUser keys (API_KEY_LIMIT)', () => {
    withGateway({ config: { apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 1 } } }, ({ t }) => {
      it('says they hold the most keys allowed and to revoke one first', async () => {
        const { page } = t();
        await createKey(page, 'first');
        await page.getByRole('button', { name: 'I have stored it safely' }).click();
        await submitCreate(page, 'second');
        await createError(page).getByText('You already have 1 key, the most one person may hold.').waitFor();
        const text = (await createError(page).textContent()) ?? '';
        expect(text).to.include('Revoke a key you no longer use');
        noStatusCode(text);
        expect(await page.locator('#new-key').isHidden()).to.equal(true);
        expect(await page.locator('#keys-list > li').count()).to.equal(1);
        await screenshot(page, 'refusal-key-limit-desktop');
        expect(describeViolations(await seriousViolations(page))).to.equal('');
      });
    });
  });

  describe('when the user has created maxCreatesPerDay keys today (API_KEY_DAILY_LIMIT)', () => {
    withGateway({ config: { apiKeys: { enabled: true, variant: 'A', maxCreatesPerDay: 1 } } }, ({ t }) => {
      it('says revoked keys count too and when they can create another', async () => {
        const { page } = t();
        await createKey(page, 'only one today');
        await revokeKey(page, 'only one today');
        expect(await page.locator('#new-key').isHidden(), 'a revoked key is no longer offered for copying').to.equal(true);
        await submitCreate(page, 'another');
        await createError(page).getByText('You have created 1 key today, the most allowed in one day (revoked keys count too).').waitFor();
        const text = (await createError(page).textContent()) ?? '';
        expect(text).to.match(/You can create another after midnight UTC \(.+ your time\)\./);
        noStatusCode(text);
        expect(await keyItem(page, 'another').count()).to.equal(0);
        await page.setViewportSize({ width: 375, height: 740 });
        await screenshot(page, 'refusal-daily-limit-phone');
      });
    });
  });

  describe('when the counter store does not answer (SERVICE_UNAVAILABLE)', () => {
    withGateway({ counters: 'redis', redisUrl: 'redis://127.0.0.1:1' }, ({ gw, t }) => {
      it('says nothing was created and to try again later', async () => {
        const { page } = t();
        await submitCreate(page, 'while redis is down');
        await createError(page).getByText('Keys cannot be created right now because part of the service is not answering. Nothing was created.').waitFor();
        noStatusCode((await createError(page).textContent()) ?? '');
        const { rows } = await gw().pool.query('SELECT count(*)::int AS n FROM apikeys');
        expect(rows[0].n).to.equal(0);
        await screenshot(page, 'refusal-unavailable-desktop');
      });
    });
  });
});
