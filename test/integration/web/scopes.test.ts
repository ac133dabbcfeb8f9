import { appendFileSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { launchBrowser, openContext, screenshot, type TestPage } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { applyPolicy, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { operatorPolicySet } from '../policy/scopes-support.ts';
import { createKey, keyItem, signedUpUser } from './helpers.ts';
import { until } from '../../support/until.ts';

// Declared scopes on Settings → Developers: the create form's checkboxes and the list's badges come
// from scopes.yaml, so an operator's scope appears on the page with no code change.

describe('web: the page offers the declared scopes', function () {
  this.timeout(90_000);
  let browser: Browser;
  let gw: TestGateway;
  let t: TestPage;

  before(async () => {
    browser = await launchBrowser();
    gw = await startTestGateway({ config: { ai: { enabled: true } } });
    const { cookie } = await signedUpUser(gw);
    t = await openContext(browser, gw.url, { sessionCookie: cookie });
  });
  after(async () => {
    await t?.close();
    await browser?.close();
    await gw?.stop();
  });

  const open = async () => {
    await t.page.goto('/settings/developers');
    await t.page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
  };

  it('before the operator applies reports and exports: only the shipped two', async () => {
    await open();
    const access = t.page.getByRole('group', { name: 'Access' });
    expect(await access.getByRole('checkbox').count()).to.equal(2);
    expect(await t.page.getByLabel('Reports: read').count()).to.equal(0);
  });

  it('after policy apply, a reloaded page has one checkbox per action of reports and one for exports, labelled and described from the file', async () => {
    const set = operatorPolicySet();
    await applyPolicy(gw.pool, await readPolicyFiles({ model: set.model, file: set.file, scopes: set.scopes }), { by: 'test', message: '' });
    await until('the applied scopes are served', async () => (await t.page.request.get(`${gw.url}/api/scopes`).then((r) => r.text())).includes('reports'), 1000);
    await open();
    const access = t.page.getByRole('group', { name: 'Access' });
    expect(await access.getByRole('checkbox').count()).to.equal(5);
    for (const label of ['Allow AI access', 'Allow MCP access', 'Reports: read', 'Reports: write', 'Exports']) {
      expect(await t.page.getByLabel(label, { exact: true }).count(), label).to.equal(1);
    }
    expect(await t.page.getByText('The reporting API.').count()).to.equal(1);
    expect(await t.page.getByText('Bulk data exports.').count()).to.equal(1);
  });

  it('a key created with Reports: read, Exports and MCP holds exactly those, and the list shows a badge per held scope (MCP stays)', async () => {
    await open();
    await t.page.getByLabel('Reports: read', { exact: true }).check();
    await t.page.getByLabel('Exports', { exact: true }).check();
    const key = await createKey(t.page, 'reporting', { mcp: true });
    const listed = await new Client(gw.url).withKey(key).get('/api/api-keys');
    expect(listed.body.keys[0].permissions).to.deep.equal({ mcp: ['access'], reports: ['read'], exports: ['access'] });
    const badges = keyItem(t.page, 'reporting').locator('.badge');
    expect(await badges.evaluateAll((bs) => bs.map((b) => b.firstChild?.textContent))).to.deep.equal(['MCP', 'reports: read', 'EXPORTS']);
    expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
  });

  it('a scope declared without a description (as policy scope add writes it) is explained by its name and actions', async () => {
    const set = operatorPolicySet();
    // What `policy scope add billing --actions read,write` writes when given no --label or --description.
    appendFileSync(set.scopes, '  billing:\n    label: Billing\n    actions: [read, write]\n  ledger:\n    label: Ledger\n');
    await applyPolicy(gw.pool, await readPolicyFiles({ model: set.model, file: set.file, scopes: set.scopes }), { by: 'test', message: '' });
    await until('the billing scope is served', async () => (await t.page.request.get(`${gw.url}/api/scopes`).then((r) => r.text())).includes('ledger'), 1000);
    await open();
    const read = t.page.getByLabel('Billing: read', { exact: true });
    expect(await read.getAttribute('aria-describedby')).to.equal('create-scope-billing-read-hint');
    expect(await t.page.locator('#create-scope-billing-read-hint').innerText()).to.equal('billing: read, write');
    expect(await t.page.locator('#create-scope-ledger-hint').innerText()).to.equal('ledger: access');
    // A scope with its own description keeps it.
    expect(await t.page.locator('#create-scope-reports-read-hint').innerText()).to.equal('The reporting API.');
    await screenshot(t.page, 'developers-scope-without-description');
  });
});
