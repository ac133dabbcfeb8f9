import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { describeViolations, launchBrowser, screenshot, seriousViolations, signedUpUser } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';

// A browser gets pages, whatever happens: the sign-in and sign-up forms work with JavaScript off
// (a 303 on to where the person was going, or the page again with the error), and a page route
// that fails (a refused form, a store that does not answer) answers an HTML page with the request
// id, never a JSON problem.

describe('web: pages without script, and errors as pages', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  before(async () => {
    [gw, browser] = await Promise.all([startTestGateway(), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
  });
  beforeEach(async () => {
    context = await browser.newContext({ baseURL: gw.url, javaScriptEnabled: false, viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
  });
  afterEach(async () => context.close());

  const signInRegion = () => page.getByRole('region', { name: 'Sign in', exact: true });
  const signUpRegion = () => page.getByRole('region', { name: 'Create an account', exact: true });

  it('a newcomer signs up with the form alone and lands on their keys page, signed in', async () => {
    await page.goto('/sign-in');
    await signUpRegion().getByLabel('Name').fill('Noscript Nell');
    await signUpRegion().getByLabel('E-mail').fill(`nell-${Date.now()}@example.com`);
    await signUpRegion().getByLabel('Password').fill('correct horse battery');
    await signUpRegion().getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL((u) => u.pathname === '/settings/developers');
    await page.getByText('Signed in as').waitFor();
    expect((await context.cookies()).map((c) => c.name)).to.include('keygate_session');
  });

  it('a wrong password shows the sign-in page again with the error in words and status 401, the e-mail kept', async () => {
    const u = await signedUpUser(gw);
    await page.goto('/sign-in');
    await signInRegion().getByLabel('E-mail').fill(u.user.email);
    await signInRegion().getByLabel('Password').fill('not the password');
    const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), signInRegion().getByRole('button', { name: 'Sign in' }).click()]);
    expect(res.status()).to.equal(401);
    expect(res.headers()['content-type']).to.match(/^text\/html/);
    expect(await page.locator('#sign-in-error').innerText()).to.equal('Wrong e-mail or password. Check both and try again.');
    expect(await signInRegion().getByLabel('E-mail').inputValue()).to.equal(u.user.email);
    expect(await signInRegion().getByLabel('Password').inputValue()).to.equal('');
    await screenshot(page, 'sign-in-refused-without-script');
  });

  it('a sign-up with a short password names the field, with status 400', async () => {
    await page.goto('/sign-in');
    await signUpRegion().getByLabel('Name').fill('Short Pw');
    await signUpRegion().getByLabel('E-mail').fill(`short-${Date.now()}@example.com`);
    await signUpRegion().getByLabel('Password').fill('short');
    const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), signUpRegion().getByRole('button', { name: 'Create account' }).click()]);
    expect(res.status()).to.equal(400);
    expect(await page.locator('#sign-up-password-error').innerText()).to.equal('Use a password of 8 to 128 characters.');
    expect(await signUpRegion().getByLabel('Password').getAttribute('aria-invalid')).to.equal('true');
  });

  it('a sign-in whose e-mail holds NUL is the page again with the field marked, 400, not a fault', async () => {
    const res = await fetch(`${gw.url}/sign-in`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: 'email=ann%00%40example.com&password=correct+horse+battery',
    });
    expect(res.status).to.equal(400);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    const text = await res.text();
    expect(text).to.contain('Check the fields marked below.');
    expect(text).to.contain('Enter your e-mail address, such as ann@example.com.');
  });

  it('signing in returns to the console page asked for; a next that leaves the site is ignored', async () => {
    const u = await signedUpUser(gw);
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [u.user.id]);
    await page.goto('/admin/users?q=a');
    expect(new URL(page.url()).pathname).to.equal('/sign-in');
    await signInRegion().getByLabel('E-mail').fill(u.user.email);
    await signInRegion().getByLabel('Password').fill(u.password);
    await signInRegion().getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/users' && url.search === '?q=a');

    // Forged forms: only same-origin console or consent paths are followed.
    // Dot segments are resolved by the browser, plain or encoded: they would leave the console.
    const forged = ['//evil.example/admin', 'https://evil.example/', '/admin\\@evil.example', '/admin/../../oauth/authorize?client_id=evil',
      '/admin/%2e%2e/api/openapi.json', '/admin/users/.%2E/../settings/developers?x'];
    for (const next of forged) {
      const res = await fetch(`${gw.url}/sign-in`, {
        method: 'POST', redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
        body: new URLSearchParams({ email: u.user.email, password: u.password, next }).toString(),
      });
      expect(res.status, next).to.equal(303);
      expect(res.headers.get('location'), next).to.equal('/settings/developers');
      // A visitor already signed in is sent on at once, by the same rule.
      const again = await u.client.get(`/sign-in?next=${encodeURIComponent(next)}`, { accept: 'text/html' });
      expect(again.headers.location, next).to.equal('/settings/developers');
    }
  });

  it('a sign-in form posted from another site is refused as a page, and signs nobody in', async () => {
    const u = await signedUpUser(gw);
    const res = await fetch(`${gw.url}/sign-in`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', origin: 'https://evil.example' },
      body: new URLSearchParams({ email: u.user.email, password: u.password }).toString(),
    });
    expect(res.status).to.equal(403);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('set-cookie')).to.equal(null);
  });

  describe('when a store does not answer a console page', () => {
    let locker: Pool;
    before(() => (locker = createPool(gw.database.url, 1)));
    after(async () => locker?.end());

    it('then the browser gets a 503 page with the request id, not a JSON problem', async () => {
      const admin = await signedUpUser(gw);
      await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
      // With script this time: axe runs in the page.
      await context.close();
      context = await browser.newContext({ baseURL: gw.url, viewport: { width: 1280, height: 860 } });
      page = await context.newPage();
      await context.addCookies([{ name: 'keygate_session', value: admin.cookie, url: gw.url }]);
      // A table held by another transaction: the page's query passes its deadline, an outage.
      const client = await locker.connect();
      try {
        await client.query('BEGIN');
        await client.query('LOCK TABLE audit_log IN ACCESS EXCLUSIVE MODE');
        const res = await page.goto('/admin/audit');
        expect(res?.status()).to.equal(503);
        expect(res?.headers()['content-type']).to.match(/^text\/html/);
        const id = res?.headers()['x-request-id'] ?? 'missing';
        expect(await page.locator('.request-id').innerText()).to.equal(id);
        await page.getByRole('heading', { name: 'keygate is unavailable for a moment' }).waitFor();
        const v = await seriousViolations(page);
        expect(v, describeViolations(v)).to.deep.equal([]);
        await screenshot(page, 'page-503');
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
      // An API client asking the same store still gets its problem document.
      const api = await admin.client.get('/api/admin/audit-log');
      expect(api.status).to.equal(200);
    });

    it('then a console form refused by validation is a page in words too', async () => {
      const admin = await signedUpUser(gw);
      await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
      const res = await fetch(`${gw.url}/admin/users/${admin.user.id}/plan?plan=nope`, {
        method: 'POST', headers: { cookie: `keygate_session=${admin.cookie}`, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' }, body: '',
      });
      expect(res.status).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
      expect(await res.text()).to.include('There is no plan');
    });
  });
});
