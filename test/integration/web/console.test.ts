import { expect } from 'chai';
import { describeViolations, pageSuite, screenshot, seriousViolations, viewports, type SignedUp, type TestPage } from '../../support/browser.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { safeReturnPath } from '../../../src/web/return-path.ts';

// The operator console's pages in Chromium: who may open them, that each reads and passes axe, and
// the actions confirmed in their dialog.

describe('web: the operator console', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let t: TestPage;
  let person: SignedUp;
  pageSuite({}, (s) => {
    gw = s.gw;
    t = s.t;
    person = s.person;
  });

  const makeAdmin = async (id: string) => gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [id]);
  const signInBrowser = async (cookie: string) => t.context.addCookies([{ name: 'keygate_session', value: cookie, url: gw.url }]);
  const axeClean = async () => {
    const v = await seriousViolations(t.page);
    expect(v, describeViolations(v)).to.deep.equal([]);
  };

  it('only same-origin /admin and consent paths are returned to after sign-in', () => {
    for (const ok of ['/admin', '/admin/users', '/admin/audit?type=USER_BANNED&from=2025-01-01', '/oauth/consent/abc_1']) expect(safeReturnPath(ok), ok).to.equal(ok);
    for (const bad of ['//evil.example/admin', '/admin//evil.example', '/\\evil.example', '/admin\\..\\x', 'https://evil.example/admin', 'javascript:alert(1)', '/admins', '/admin\n', '/admin%2f%2fevil.example', '/admin\u0000', '/admin x', ' /admin', '/settings/developers', '']) {
      expect(safeReturnPath(bad), JSON.stringify(bad)).to.equal(null);
    }
  });

  it('an anonymous visitor is sent to sign in and comes back to the console page they asked for', async () => {
    await makeAdmin(person.user.id);
    await t.page.goto('/admin/users?q=ad');
    const url = new URL(t.page.url());
    expect(url.pathname).to.equal('/sign-in');
    expect(url.searchParams.get('next')).to.equal('/admin/users?q=ad');
    const form = t.page.getByRole('region', { name: 'Sign in', exact: true });
    await form.getByLabel('E-mail').fill(person.user.email);
    await form.getByLabel('Password').fill(person.password);
    await form.getByRole('button', { name: 'Sign in' }).click();
    await t.page.waitForURL((u) => u.pathname === '/admin/users');
    expect(new URL(t.page.url()).search).to.equal('?q=ad');
    // Already signed in: the server sends them on at once; a hostile next goes to the default page.
    await t.page.goto('/sign-in?next=/admin');
    expect(new URL(t.page.url()).pathname).to.equal('/admin');
    await t.page.goto('/sign-in?next=//evil.example/admin');
    expect(new URL(t.page.url()).pathname).to.equal('/settings/developers');
  });

  it('a signed-in non-admin gets a page saying the console is for admins, with status 403', async () => {
    await signInBrowser(person.cookie);
    const res = await t.page.goto('/admin');
    expect(res?.status()).to.equal(403);
    await t.page.getByRole('heading', { name: 'The operator console is for admins' }).waitFor();
    await axeClean();
    await screenshot(t.page, 'console-not-admin');
  });

  it('a key is refused every console page, and a cross-origin form POST with the cookie changes nothing', async () => {
    const key = (await person.client.post('/api/api-keys', { name: 'k' })).body.key as string;
    await makeAdmin(person.user.id);
    const target = await signUp(gw.url);
    const byKey = await fetch(`${gw.url}/admin`, { headers: { 'x-api-key': key } });
    expect(byKey.status).to.equal(403);
    const forged = await fetch(`${gw.url}/admin/users/${target.user.id}/ban`, { method: 'POST', headers: { cookie: `keygate_session=${person.cookie}`, origin: 'https://evil.example' }, redirect: 'manual' });
    expect(forged.status).to.equal(403);
    expect((await gw.pool.query('SELECT banned FROM users WHERE id = $1', [target.user.id])).rows[0].banned).to.equal(false);
  });

  it('the overview shows the live policy, counts and the dated 30-day chart with its table', async () => {
    await makeAdmin(person.user.id);
    await signInBrowser(person.cookie);
    await t.page.goto('/admin');
    await t.page.getByRole('heading', { name: 'Operator console' }).waitFor();
    await t.page.getByRole('heading', { name: 'Instances seen in the last 30 s' }).waitFor();
    expect(await t.page.locator('svg.console-chart text.tick').count()).to.be.greaterThan(4);
    expect(await t.page.locator('table.figures tbody tr').count()).to.equal(30);
    // Every date label lies inside the drawing (the last one was cut to "26 No").
    const overflow = await t.page.locator('svg.console-chart').evaluate((svg) => {
      const width = (svg as SVGSVGElement).viewBox.baseVal.width;
      return Array.from(svg.querySelectorAll<SVGTextElement>('text.tick')).map((x) => x.getBBox()).filter((b) => b.x < 0 || b.x + b.width > width + 0.5).map((b) => [b.x, b.width]);
    });
    expect(overflow).to.deep.equal([]);
    // On a wide screen the figures sit beside the chart, and the header is as wide as the page.
    const box = async (sel: string) => (await t.page.locator(sel).first().boundingBox())!;
    const [chart, figures] = [await box('svg.console-chart'), await box('.figures-wrap')];
    expect(figures.x).to.be.greaterThan(chart.x + chart.width - 1);
    const [header, main] = [await box('.site-header-inner'), await box('main')];
    expect(header.width).to.equal(main.width);
    await t.page.setViewportSize({ width: 375, height: 740 });
    const [chartN, figuresN] = [await box('svg.console-chart'), await box('.figures-wrap')];
    expect(figuresN.y).to.be.greaterThan(chartN.y + chartN.height - 1);
    await screenshot(t.page, 'console-overview-phone');
    await t.page.setViewportSize({ width: 1280, height: 860 });
    await axeClean();
    await screenshot(t.page, 'console-overview');
  });

  it('an admin bans a user with the keyboard alone, confirmed in the dialog, and the page says so', async () => {
    await makeAdmin(person.user.id);
    const target = await signUp(gw.url, { email: `ban-${Date.now()}@example.test` });
    await signInBrowser(person.cookie);
    await t.page.goto(`/admin/users?q=${encodeURIComponent(target.user.email)}`);
    await axeClean();
    const ban = t.page.getByRole('link', { name: 'Ban', exact: true });
    // Tab until the Ban link has focus, as a keyboard user would.
    for (let i = 0; i < 40 && !(await ban.evaluate((el) => el === document.activeElement)); i++) await t.page.keyboard.press('Tab');
    expect(await ban.evaluate((el) => el === document.activeElement)).to.equal(true);
    await t.page.keyboard.press('Enter');
    const dialog = t.page.getByRole('dialog', { name: `Ban ${target.user.email}?` });
    await dialog.waitFor();
    await screenshot(t.page, 'console-ban-dialog', false);
    await axeClean();
    await t.page.keyboard.press('Tab');
    expect(await t.page.evaluate(() => document.activeElement?.textContent)).to.equal('Ban');
    await t.page.keyboard.press('Enter');
    await t.page.getByText('banned', { exact: true }).waitFor();
    expect((await gw.pool.query('SELECT banned FROM users WHERE id = $1', [target.user.id])).rows[0].banned).to.equal(true);
    const audit = await gw.pool.query("SELECT actor_user_id FROM audit_log WHERE owner_user_id = $1 AND type = 'USER_BANNED'", [target.user.id]);
    expect(audit.rows).to.deep.equal([{ actor_user_id: person.user.id }]);
    await screenshot(t.page, 'console-users');
  });

  it('without JavaScript the action link leads to a confirmation page whose form does it', async () => {
    await makeAdmin(person.user.id);
    const target = await signUp(gw.url, { email: `nojs-${Date.now()}@example.test` });
    const ctx = await t.context.browser()!.newContext({ baseURL: gw.url, javaScriptEnabled: false });
    await ctx.addCookies([{ name: 'keygate_session', value: person.cookie, url: gw.url }]);
    const p = await ctx.newPage();
    await p.goto(`/admin/users?q=${encodeURIComponent(target.user.email)}`);
    await p.getByRole('link', { name: 'Make admin' }).click();
    await p.getByRole('heading', { name: `Make ${target.user.email} an admin?` }).waitFor();
    await p.getByRole('button', { name: 'Make admin' }).click();
    await p.getByRole('link', { name: 'Make user' }).waitFor();
    expect((await gw.pool.query('SELECT role FROM users WHERE id = $1', [target.user.id])).rows[0].role).to.equal('admin');
    await ctx.close();
  });
});

describe('web: the console pages that read', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let t: TestPage;
  let person: SignedUp;
  pageSuite({ signedIn: true }, (s) => {
    gw = s.gw;
    t = s.t;
    person = s.person;
  });
  const pages = [['/admin', 'Operator console'], ['/admin/users', 'Users'], ['/admin/keys', 'Keys'], ['/admin/audit', 'Audit log'], ['/admin/policy', 'Policy'], ['/settings/developers', 'Developers']] as const;
  for (const [path, heading] of pages) {
    it(`${path} renders with no script error and passes axe at 1280 and at 375 px, every table region reachable by keyboard`, async () => {
      await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [person.user.id]);
      const k = (await person.client.post('/api/api-keys', { name: 'console key' })).body as { id: string };
      await person.client.request('PATCH', `/api/admin/api-keys/${k.id}`, { enabled: false });
      for (const [name, size] of Object.entries(viewports)) {
        await t.page.setViewportSize(size);
        await t.page.goto(`${path}${path === '/admin/policy' ? '?method=GET&path=/api/admin/users&subject=session&role=user' : ''}`);
        await t.page.getByRole('heading', { name: heading, exact: true, level: 1 }).waitFor();
        const v = await seriousViolations(t.page);
        expect(v, `${name}: ${describeViolations(v)}`).to.deep.equal([]);
        for (const wrap of await t.page.locator('.table-wrap').all()) expect(await wrap.getAttribute('tabindex'), name).to.equal('0');
        await screenshot(t.page, `console-${path.slice(1).replace(/\//g, '-')}-${name}`);
      }
    });
  }
});

describe('web: /admin/keys filters and revoke', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let t: TestPage;
  let person: SignedUp;
  pageSuite({ signedIn: true, gateway: { config: { mcpServer: { enabled: true } } } }, (s) => {
    gw = s.gw;
    t = s.t;
    person = s.person;
  });

  const headings = async () => (await t.page.locator('ul.console-keys h2').allTextContents()).map((h) => h.replace(/\s+\S+…$/, '').trim()).sort();

  it('the owner, state and scope filters show only matching keys, and a revoke is confirmed in its dialog', async () => {
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [person.user.id]);
    const owner = await signUp(gw.url, { email: `keys-${Date.now()}@example.test` });
    const other = await signUp(gw.url);
    const make = async (who: typeof owner, body: Record<string, unknown>) => (await who.client.post('/api/api-keys', body)).body as { id: string };
    await make(other, { name: 'someone else' });
    const plain = await make(owner, { name: 'plain' });
    await make(owner, { name: 'agent', mcp: true });
    const old = await make(owner, { name: 'old' });
    const gone = await make(owner, { name: 'gone' });
    await gw.pool.query("UPDATE apikeys SET expires_at = now() - interval '1 hour' WHERE id = $1", [old.id]);
    await owner.client.delete(`/api/api-keys/${gone.id}`);

    await t.page.goto('/admin/keys');
    await t.page.getByLabel('Owner e-mail').fill(owner.user.email);
    await t.page.getByRole('button', { name: 'Filter' }).click();
    await t.page.waitForURL((u) => u.searchParams.get('owner') === owner.user.email);
    expect(await headings()).to.deep.equal(['agent', 'old', 'plain']);

    for (const [state, want] of [['revoked', ['gone']], ['active', ['agent', 'plain']], ['expired', ['old']]] as const) {
      await t.page.getByLabel('State').selectOption(state);
      await t.page.getByRole('button', { name: 'Filter' }).click();
      await t.page.waitForURL((u) => u.searchParams.get('state') === state);
      expect(await headings(), `${state} ${t.page.url()} ${await t.page.locator('main').innerText()}`).to.deep.equal([...want]);
    }
    await t.page.getByLabel('State').selectOption('');
    await t.page.getByLabel('Scope').fill('mcp');
    await t.page.getByRole('button', { name: 'Filter' }).click();
    await t.page.waitForURL((u) => u.searchParams.get('scope') === 'mcp');
    expect(await headings()).to.deep.equal(['agent']);

    // Revoke "plain" from the list, through the confirmation dialog.
    await t.page.goto(`/admin/keys?owner=${encodeURIComponent(owner.user.email)}&state=active`);
    const item = t.page.locator('ul.console-keys > li').filter({ has: t.page.getByRole('heading', { name: /^plain / }) });
    await item.getByRole('link', { name: 'Revoke' }).click();
    const dialog = t.page.getByRole('dialog', { name: 'Revoke “plain”?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    // Back to the same filter, saying what happened.
    await t.page.waitForURL((u) => u.pathname === '/admin/keys' && u.searchParams.get('owner') === owner.user.email && u.searchParams.get('state') === 'active');
    expect(await t.page.getByRole('status').innerText()).to.match(/^The key is revoked/);
    expect(await headings()).to.deep.equal(['agent']);

    // Disable "agent" and enable it again, each confirmed, each back on the same filter.
    const agent = t.page.locator('ul.console-keys > li').filter({ has: t.page.getByRole('heading', { name: /^agent / }) });
    await agent.getByRole('link', { name: 'Disable' }).click();
    await t.page.getByRole('dialog', { name: 'Disable “agent”?' }).getByRole('button', { name: 'Disable key' }).click();
    await t.page.getByRole('status').getByText(/^The key is disabled/).waitFor();
    expect(new URL(t.page.url()).searchParams.get('owner')).to.equal(owner.user.email);
    await t.page.goto(`/admin/keys?owner=${encodeURIComponent(owner.user.email)}&state=disabled`);
    expect(await headings()).to.deep.equal(['agent']);
    await agent.getByRole('link', { name: 'Enable' }).click();
    await t.page.getByRole('dialog', { name: 'Enable “agent”?' }).getByRole('button', { name: 'Enable key' }).click();
    await t.page.getByRole('status').getByText(/^The key is enabled again/).waitFor();
    const updates = await gw.pool.query("SELECT actor_user_id FROM audit_log WHERE type = 'API_KEY_UPDATED' ORDER BY id");
    expect(updates.rows).to.deep.equal([{ actor_user_id: person.user.id }, { actor_user_id: person.user.id }]);
    const revoked = await gw.pool.query('SELECT revoked_at FROM apikeys WHERE id = $1', [plain.id]);
    expect(revoked.rows[0].revoked_at).to.be.an.instanceOf(Date);
    const audit = await gw.pool.query("SELECT actor_user_id, owner_user_id FROM audit_log WHERE key_id = $1 AND type = 'API_KEY_REVOKED'", [plain.id]);
    expect(audit.rows).to.deep.equal([{ actor_user_id: person.user.id, owner_user_id: owner.user.id }]);
    await t.page.goto(`/admin/keys?owner=${encodeURIComponent(owner.user.email)}&state=revoked`);
    expect(await headings()).to.deep.equal(['gone', 'plain']);
    const v = await seriousViolations(t.page);
    expect(v, describeViolations(v)).to.deep.equal([]);
    await screenshot(t.page, 'console-keys-filtered');
  });

  it('an admin changes a key\'s expiry with its form, back on the same filter, audited; a bad date changes nothing', async () => {
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [person.user.id]);
    const owner = await signUp(gw.url, { email: `expiry-${Date.now()}@example.test` });
    const k = (await owner.client.post('/api/api-keys', { name: 'short-lived' })).body as { id: string };
    const expiryOf = async () => (await gw.pool.query('SELECT expires_at FROM apikeys WHERE id = $1', [k.id])).rows[0].expires_at as Date | null;
    const filter = `/admin/keys?owner=${encodeURIComponent(owner.user.email)}&state=active`;
    await t.page.goto(filter);
    const item = t.page.locator('ul.console-keys > li').filter({ has: t.page.getByRole('heading', { name: /^short-lived / }) });
    await item.getByLabel('New expiry of “short-lived” (UTC)').fill('2031-02-03T04:05');
    await item.getByRole('button', { name: 'Set expiry' }).click();
    await t.page.waitForURL((u) => u.pathname === '/admin/keys' && u.searchParams.get('owner') === owner.user.email && u.searchParams.get('state') === 'active');
    expect(await t.page.getByRole('status').innerText()).to.match(/^The key’s expiry is changed/);
    expect((await expiryOf())?.toISOString()).to.equal('2031-02-03T04:05:00.000Z');
    expect(await item.innerText()).to.contain('expires 2031-02-03 04:05 UTC');
    expect(await item.getByLabel('New expiry of “short-lived” (UTC)').inputValue()).to.equal('2031-02-03T04:05');

    await item.getByRole('button', { name: 'Never expires' }).click();
    await t.page.getByRole('status').waitFor();
    expect(await expiryOf()).to.equal(null);
    expect(await item.innerText()).to.contain('expires never');
    const updates = await gw.pool.query("SELECT actor_user_id, owner_user_id FROM audit_log WHERE type = 'API_KEY_UPDATED' AND key_id = $1", [k.id]);
    expect(updates.rows).to.deep.equal([{ actor_user_id: person.user.id, owner_user_id: owner.user.id }, { actor_user_id: person.user.id, owner_user_id: owner.user.id }]);
    for (const [name, size] of Object.entries(viewports)) {
      await t.page.setViewportSize(size);
      const v = await seriousViolations(t.page);
      expect(v, `${name}: ${describeViolations(v)}`).to.deep.equal([]);
      await screenshot(t.page, `console-key-expiry-${name}`);
    }
    await t.page.setViewportSize(viewports.desktop);

    // A value no datetime-local field sends (a hand-made POST) gets a 400 page and leaves the key as it was.
    for (const bad of ['next tuesday', '2031-02-30T10:00']) {
      const res = await t.page.request.post(`/admin/keys/${k.id}/expiry`, { form: { expiresAt: bad }, headers: { origin: gw.url, accept: 'text/html' }, maxRedirects: 0 });
      expect(res.status(), bad).to.equal(400);
      expect(res.headers()['content-type']).to.match(/^text\/html/);
      expect(await expiryOf(), bad).to.equal(null);
    }
  });

  it('a bad filter value is refused with 400 and changes nothing', async () => {
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [person.user.id]);
    const res = await t.page.goto('/admin/keys?state=gone');
    expect(res?.status()).to.equal(400);
  });
});
