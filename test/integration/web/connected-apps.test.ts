import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, pageSuite, screenshot, seriousViolations, type SignedUp, type TestPage } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { initializeMessage, rpc } from '../mcp/support.ts';
import { authorizeCode, codeForm, connectApp, registerClient, tokenRequest } from '../oauth/support.ts';
import { signedUpUser } from './helpers.ts';

// Connected apps on Settings → Developers: the grants a person gave MCP clients,
// listed with when they were granted and last used, and revoked from the page.

const appItem = (page: Page, name: string) => page.locator('#apps-list > li', { has: page.getByRole('heading', { name, exact: true }) });
const mcpStatus = async (base: string, token: string) => (await rpc(new Client(base), initializeMessage, { authorization: `Bearer ${token}` })).status;

async function expectNoSeriousViolations(page: Page): Promise<void> {
  const violations = await seriousViolations(page);
  expect(violations, describeViolations(violations)).to.deep.equal([]);
}

describe('web: Connected apps on Settings → Developers', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let t: TestPage;
  let person: SignedUp;

  pageSuite({ signedIn: true }, (s) => {
    gw = s.gw;
    t = s.t;
    person = s.person;
  });

  const open = async () => {
    await t.page.goto('/settings/developers');
    await t.page.getByRole('heading', { name: 'Connected apps', level: 2 }).waitFor();
  };

  it('says no apps are connected when there are none, and passes axe', async () => {
    await open();
    await t.page.locator('#apps-message').getByText('No apps are connected').waitFor();
    expect(await t.page.locator('#apps-list > li').count()).to.equal(0);
    await expectNoSeriousViolations(t.page);
  });

  it('lists each app with when it was granted and last used; Revoke asks first, then stops that app\'s token on /api/mcp', async () => {
    // A client name is chosen by whoever registers the client: it must stay text.
    const hostileName = 'Desk <img src=x> assistant';
    const desk = await connectApp(gw.url, person.client, hostileName);
    const other = await connectApp(gw.url, person.client, 'Editor plugin');
    await open();
    const row = appItem(t.page, hostileName);
    await row.waitFor();
    expect(await t.page.locator('#apps-list > li').count()).to.equal(2);
    expect(await row.locator('img').count()).to.equal(0);
    expect(await row.locator('dt').allTextContents()).to.deep.equal(['Granted', 'Last used', 'Connection']);
    expect(await row.locator('dd').nth(1).textContent()).to.equal('Never');
    expect(await row.locator('dd time').first().getAttribute('datetime')).to.match(/^\d{4}-\d\d-\d\dT/);

    // Used once on the MCP endpoint: after a reload its row says when. The write of last use is
    // off the request's path, so the API is asked (bounded) before the page is.
    expect(await mcpStatus(gw.url, desk.accessToken)).to.equal(200);
    const deadline = Date.now() + 3000;
    let used: string | null = null;
    while (!used && Date.now() < deadline) {
      const grants = (await person.client.get('/api/oauth/grants')).body.grants as { clientName: string; lastUsedAt: string | null }[];
      used = grants.find((g) => g.clientName === hostileName)?.lastUsedAt ?? null;
    }
    expect(used, 'last use recorded').to.be.a('string');
    await t.page.reload();
    await row.waitFor();
    expect(await row.locator('dd').nth(1).locator('time').getAttribute('datetime')).to.equal(used);
    await expectNoSeriousViolations(t.page);
    await screenshot(t.page, 'developers-connected-apps');

    // Cancel keeps it, and focus goes back to the button that opened the dialog.
    const revoke = row.getByRole('button', { name: `Revoke access for “${hostileName}”` });
    await revoke.click();
    const dialog = t.page.getByRole('dialog', { name: `Revoke access for “${hostileName}”?` });
    await dialog.waitFor();
    expect(await dialog.textContent()).to.include('every token it holds stops working');
    await expectNoSeriousViolations(t.page);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await revoke.evaluate((b) => b === document.activeElement)).to.equal(true);
    expect(await mcpStatus(gw.url, desk.accessToken)).to.equal(200);

    await revoke.click();
    await dialog.getByRole('button', { name: 'Revoke access' }).click();
    await row.waitFor({ state: 'detached' });
    await t.page.locator('#apps-status').getByText(`“${hostileName}” was disconnected`).waitFor();
    expect(await t.page.evaluate(() => document.activeElement?.id)).to.equal('apps-title');
    expect(await mcpStatus(gw.url, desk.accessToken)).to.equal(401);

    // Only that app: the other is still listed and its token still works.
    expect(await appItem(t.page, 'Editor plugin').count()).to.equal(1);
    expect(await mcpStatus(gw.url, other.accessToken)).to.equal(200);
    const left = (await person.client.get('/api/oauth/grants')).body.grants as { clientId: string }[];
    expect(left.map((g) => g.clientId)).to.deep.equal([other.clientId]);

    await appItem(t.page, 'Editor plugin').getByRole('button', { name: /^Revoke/ }).click();
    await t.page.getByRole('dialog').getByRole('button', { name: 'Revoke access' }).click();
    await t.page.locator('#apps-message').getByText('No apps are connected').waitFor();
    expect(await mcpStatus(gw.url, other.accessToken)).to.equal(401);
  });

  it('an app revoked elsewhere while the page was open: the page says so and refreshes the list', async () => {
    await connectApp(gw.url, person.client, 'Gone already');
    await open();
    const row = appItem(t.page, 'Gone already');
    await row.waitFor();
    const [grant] = (await person.client.get('/api/oauth/grants')).body.grants as { id: string }[];
    expect((await person.client.request('DELETE', `/api/oauth/grants/${grant!.id}`)).status).to.equal(204);
    await row.getByRole('button', { name: /^Revoke/ }).click();
    await t.page.getByRole('dialog').getByRole('button', { name: 'Revoke access' }).click();
    await t.page.locator('#apps-status').getByText('That app was already disconnected').waitFor();
    await row.waitFor({ state: 'detached' });
    await t.page.locator('#apps-message').getByText('No apps are connected').waitFor();
  });

  it('one app allowed twice is two rows told apart by their connection, each revoked on its own', async () => {
    const { clientId } = await registerClient(gw.url, 'MCP CLI Proxy');
    const connect = async () => {
      const { code, verifier } = await authorizeCode(gw.url, person.client, clientId);
      const token = await tokenRequest(gw.url, codeForm(gw.url, clientId, code, verifier));
      expect(token.status, token.text).to.equal(200);
      return token.body.access_token as string;
    };
    const [first, second] = [await connect(), await connect()];
    const grants = (await person.client.get('/api/oauth/grants')).body.grants as { id: string }[];
    expect(grants).to.have.length(2);
    await open();
    const rows = appItem(t.page, 'MCP CLI Proxy');
    await rows.first().waitFor();
    expect(await rows.count()).to.equal(2);
    const shown = await rows.evaluateAll((rs) => rs.map((r) => r.querySelector('dd:last-of-type code')?.textContent));
    expect([...shown].sort()).to.deep.equal(grants.map((g) => `${g.id.slice(0, 8)}…`).sort());
    expect(await rows.first().innerText()).to.contain('Connected 2 times');
    await expectNoSeriousViolations(t.page);
    for (const width of [1280, 375]) {
      await t.page.setViewportSize({ width, height: 900 });
      await screenshot(t.page, `developers-connected-twice-${width}`);
    }
    await t.page.setViewportSize({ width: 1280, height: 900 });

    // The Revoke buttons read differently, and each ends only its own connection.
    const one = grants[0]!.id.slice(0, 8);
    await t.page.getByRole('button', { name: `Revoke access for “MCP CLI Proxy” (connection ${one}…)` }).click();
    await t.page.getByRole('dialog').getByRole('button', { name: 'Revoke access' }).click();
    await t.page.locator('#apps-status').getByText('was disconnected').waitFor();
    expect(await rows.count()).to.equal(1);
    expect(await rows.innerText()).to.not.contain('Connected 2 times');
    const statuses = [await mcpStatus(gw.url, first), await mcpStatus(gw.url, second)].sort();
    expect(statuses).to.deep.equal([200, 401]);
    await rows.getByRole('button', { name: /^Revoke/ }).click();
    await t.page.getByRole('dialog').getByRole('button', { name: 'Revoke access' }).click();
    await t.page.locator('#apps-message').getByText('No apps are connected').waitFor();
  });

  it('another person\'s apps are not listed', async () => {
    const stranger = await signedUpUser(gw);
    await connectApp(gw.url, stranger.client, 'Someone else\'s app');
    await open();
    await t.page.locator('#apps-message').getByText('No apps are connected').waitFor();
    expect(await t.page.getByText('Someone else\'s app').count()).to.equal(0);
  });
});

describe('web: Connected apps follow the configuration', function () {
  this.timeout(60_000);
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => browser?.close());

  const cases = [
    { what: 'with the MCP server off, the section is not drawn', config: { mcpServer: { enabled: false } }, shown: false, keys: true },
    { what: 'with API keys off and the MCP server on, the section is drawn under the keys notice', config: { apiKeys: { enabled: false } }, shown: true, keys: false },
  ];
  for (const c of cases) {
    it(c.what, async () => {
      const gw = await startTestGateway({ config: c.config });
      const { cookie } = await signedUpUser(gw);
      const t = await openContext(browser, gw.url, { sessionCookie: cookie });
      try {
        const asked: string[] = [];
        t.page.on('request', (r) => void (new URL(r.url()).pathname.startsWith('/api/oauth') && asked.push(r.url())));
        await t.page.goto('/settings/developers');
        await t.page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
        if (c.shown) await t.page.locator('#apps-message').getByText('No apps are connected').waitFor();
        // The script asks for the keys and the apps in one go: once the keys are drawn, a request
        // for the apps would already have been sent.
        else await t.page.locator('#keys-message').getByText('You have no API keys yet').waitFor();
        expect(await t.page.getByRole('heading', { name: 'Connected apps' }).count()).to.equal(c.shown ? 1 : 0);
        expect(asked.length > 0).to.equal(c.shown);
        expect(await t.page.getByRole('heading', { name: 'API keys are turned off' }).count()).to.equal(c.keys ? 0 : 1);
        if (c.shown) await expectNoSeriousViolations(t.page);
        expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
      } finally {
        await t.close();
        await gw.stop();
      }
    });
  }
});
