import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, screenshot, seriousViolations, type TestPage } from '../../support/browser.ts';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { createKey, keyItem, signedUpUser } from './helpers.ts';

// What the page offers follows the server's configuration: a checkbox only while its feature is
// on, none under Variant B, and no form at all while API keys are off.

describe('web: the page follows the configuration', function () {
  this.timeout(60_000);
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => browser?.close());

  async function openDevelopers(gw: TestGateway): Promise<TestPage> {
    const { cookie } = await signedUpUser(gw);
    const t = await openContext(browser, gw.url, { sessionCookie: cookie });
    await t.page.goto('/settings/developers');
    await t.page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
    return t;
  }

  const cases: { what: string; config: Record<string, unknown>; ai: boolean; mcp: boolean }[] = [
    { what: 'Variant A by default (AI off, MCP server on)', config: {}, ai: false, mcp: true },
    { what: 'Variant A with AI on and the MCP server on', config: { ai: { enabled: true } }, ai: true, mcp: true },
    { what: 'Variant A with AI on and the MCP server off', config: { ai: { enabled: true }, mcpServer: { enabled: false } }, ai: true, mcp: false },
    { what: 'Variant A with AI off and the MCP server off', config: { mcpServer: { enabled: false } }, ai: false, mcp: false },
    { what: 'Variant B, even with AI and the MCP server on', config: { apiKeys: { enabled: true, variant: 'B' }, ai: { enabled: true } }, ai: false, mcp: false },
  ];

  for (const c of cases) {
    describe(`under ${c.what}`, () => {
      let gw: TestGateway;
      useGateway({ config: c.config }, (g) => (gw = g));

      it(`${c.ai ? 'offers' : 'does not offer'} "Allow AI access" and ${c.mcp ? 'offers' : 'does not offer'} "Allow MCP access"`, async () => {
        const t = await openDevelopers(gw);
        try {
          expect(await t.page.getByLabel('Allow AI access').count()).to.equal(c.ai ? 1 : 0);
          expect(await t.page.getByLabel('Allow MCP access').count()).to.equal(c.mcp ? 1 : 0);
          expect(await t.page.getByRole('group', { name: 'Access' }).count()).to.equal(c.ai || c.mcp ? 1 : 0);
          // The form still works with what it offers: a create with no scopes succeeds.
          const key = await createKey(t.page, 'plain');
          expect((await new Client(gw.url).withKey(key).get('/api/auth/get-session')).status).to.equal(200);
          expect(await keyItem(t.page, 'plain').locator('.badge').count()).to.equal(0);
          expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
        } finally {
          await t.close();
        }
      });
    });
  }

  describe('when API keys are turned off', () => {
    let gw: TestGateway;
    useGateway({ config: { apiKeys: { enabled: false } } }, (g) => (gw = g));

    it('says so instead of showing a form, asks the API nothing about keys, and still signs out', async () => {
      const t = await openDevelopers(gw);
      const asked: string[] = [];
      t.page.on('request', (r) => asked.push(new URL(r.url()).pathname));
      try {
        await t.page.reload();
        await t.page.getByRole('heading', { name: 'API keys are turned off' }).waitFor();
        await t.page.locator('#apps-message').getByText('No apps are connected').waitFor();
        // The MCP server is still on, so Connected apps (and its confirmation dialog) stay: an
        // OAuth client needs no key. Nothing else is asked of the API, and no form sends anything.
        expect(await t.page.locator('form:not([method="dialog"])').count()).to.equal(0);
        expect(asked.filter((p) => p.startsWith('/api/'))).to.deep.equal(['/api/oauth/grants']);
        expect(describeViolations(await seriousViolations(t.page))).to.equal('');
        await screenshot(t.page, 'keys-off-desktop');
        await t.page.getByRole('button', { name: 'Sign out' }).click();
        await t.page.waitForURL('**/sign-in');
        expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
      } finally {
        await t.close();
      }
    });
  });

  describe('when sign-up is closed (auth.signUp: false)', () => {
    let gw: TestGateway;
    useGateway({ config: { auth: { signUp: false } } }, (g) => (gw = g));

    it('shows only the sign-in form', async () => {
      const t = await openContext(browser, gw.url);
      try {
        await t.page.goto('/sign-in');
        await t.page.getByRole('heading', { name: 'Sign in', exact: true }).waitFor();
        expect(await t.page.getByRole('heading', { name: 'Create an account' }).count()).to.equal(0);
        expect(await t.page.locator('#sign-up-form').count()).to.equal(0);
        expect(await t.page.getByText('New accounts are made by an administrator').count()).to.equal(1);
      } finally {
        await t.close();
      }
    });
  });
});
