import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { describeViolations, pageSuite, screenshot, seriousViolations, type TestPage } from '../../support/browser.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';

let n = 0;
const freshEmail = () => `page${Date.now()}${n++}@example.test`;

async function fillSignUp(page: Page, v: { name: string; email: string; password: string }) {
  const form = page.getByRole('region', { name: 'Create an account' });
  await form.getByLabel('Name').fill(v.name);
  await form.getByLabel('E-mail').fill(v.email);
  await form.getByLabel('Password').fill(v.password);
  await form.getByRole('button', { name: 'Create account' }).click();
}

async function fillSignIn(page: Page, email: string, password: string) {
  const form = page.getByRole('region', { name: 'Sign in', exact: true });
  await form.getByLabel('E-mail').fill(email);
  await form.getByLabel('Password').fill(password);
  await form.getByRole('button', { name: 'Sign in' }).click();
}

describe('web: sign in and sign up', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let t: TestPage;

  pageSuite({}, (s) => {
    gw = s.gw;
    t = s.t;
  });

  describe('when an anonymous visitor opens Settings → Developers', () => {
    it('sends them to the sign-in page', async () => {
      await t.page.goto('/settings/developers');
      expect(new URL(t.page.url()).pathname).to.equal('/sign-in');
      await t.page.getByRole('heading', { name: 'Sign in to keygate' }).waitFor();
    });
  });

  describe('when someone signs up', () => {
    it('takes them to Settings → Developers, signed in as the new account', async () => {
      const email = freshEmail();
      await t.page.goto('/sign-in');
      await fillSignUp(t.page, { name: 'Grace', email, password: 'a long password' });
      await t.page.waitForURL('**/settings/developers');
      expect(await t.page.locator('.who').textContent()).to.include(email);
    });

    it('shows field errors next to their fields, and focus goes to the first', async () => {
      await t.page.goto('/sign-in');
      await fillSignUp(t.page, { name: 'Grace', email: 'not-an-email', password: 'short' });
      const form = t.page.getByRole('region', { name: 'Create an account' });
      await form.locator('#sign-up-email-error').getByText('Enter your e-mail address').waitFor();
      expect(await form.locator('#sign-up-password-error').textContent()).to.equal('Use a password of 8 to 128 characters.');
      expect(await form.getByLabel('Password').getAttribute('aria-invalid')).to.equal('true');
      expect(await t.page.evaluate(() => document.activeElement?.id)).to.equal('sign-up-email');
      expect(new URL(t.page.url()).pathname).to.equal('/sign-in');
      await screenshot(t.page, 'sign-in-field-errors-desktop');
      expect(describeViolations(await seriousViolations(t.page))).to.equal('');
    });

    it('says in words when the e-mail already has an account', async () => {
      const { user } = await signUp(gw.url);
      await t.page.goto('/sign-in');
      await fillSignUp(t.page, { name: 'Again', email: user.email, password: 'a long password' });
      await t.page.locator('#sign-up-error').getByText('An account with this e-mail already exists.').waitFor();
      expect(await t.page.locator('#sign-up-error').getAttribute('role')).to.equal('alert');
    });
  });

  describe('when someone signs in', () => {
    it('with the right password, takes them to Settings → Developers', async () => {
      const { user, password } = await signUp(gw.url);
      await t.page.goto('/sign-in');
      await fillSignIn(t.page, user.email, password);
      await t.page.waitForURL('**/settings/developers');
      await t.page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
    });

    it('with a wrong password, says "Wrong e-mail or password" and stays', async () => {
      const { user } = await signUp(gw.url);
      await t.page.goto('/sign-in');
      await fillSignIn(t.page, user.email, 'not the password');
      await t.page.locator('#sign-in-error').getByText('Wrong e-mail or password.').waitFor();
      expect(new URL(t.page.url()).pathname).to.equal('/sign-in');
      expect(await t.page.content()).to.not.include('401');
      await screenshot(t.page, 'sign-in-wrong-password-desktop');
    });
  });

  describe('when a signed-in user opens /sign-in', () => {
    it('sends them on to Settings → Developers', async () => {
      const { client } = await signUp(gw.url);
      await t.context.addCookies([{ name: 'keygate_session', value: client.cookies.get('keygate_session')!, url: gw.url }]);
      await t.page.goto('/sign-in');
      expect(new URL(t.page.url()).pathname).to.equal('/settings/developers');
    });
  });

  describe('accessibility and layout', () => {
    for (const viewport of ['desktop', 'phone'] as const) {
      it(`has no serious or critical axe violations (${viewport})`, async () => {
        await t.page.setViewportSize(viewport === 'phone' ? { width: 375, height: 740 } : { width: 1280, height: 860 });
        await t.page.goto('/sign-in');
        expect(describeViolations(await seriousViolations(t.page))).to.equal('');
        expect(await t.page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(viewport === 'phone' ? 375 : 1280);
        await screenshot(t.page, `sign-in-${viewport}`);
      });
    }

    it('can be used with the keyboard alone', async () => {
      const { user, password } = await signUp(gw.url);
      await t.page.goto('/sign-in');
      await t.page.keyboard.press('Tab');
      expect(await t.page.evaluate(() => document.activeElement?.textContent)).to.equal('Skip to main content');
      await t.page.keyboard.press('Tab');
      await t.page.keyboard.press('Tab');
      expect(await t.page.evaluate(() => document.activeElement?.id)).to.equal('sign-in-email');
      await t.page.keyboard.type(user.email);
      await t.page.keyboard.press('Tab');
      await t.page.keyboard.type(password);
      await t.page.keyboard.press('Enter');
      await t.page.waitForURL('**/settings/developers');
    });
  });
});
