import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, screenshot, seriousViolations, signedUpUser } from '../../support/browser.ts';
import { until } from '../../support/until.ts';
import { twoInstances, type TwoInstances } from '../policy/support.ts';

// /admin/policy in Chromium: a rollback chosen from the history, confirmed in its dialog (which
// names the version's message and takes a reason), becomes live on both instances and is audited
// POLICY_ROLLED_BACK.

const CLOSE_PROJECTS = 'p, key, *, .*, /api/projects/**, deny, key.projects-closed';

describe('web: a policy rollback confirmed in its dialog', function () {
  this.timeout(90_000);
  let s: TwoInstances;
  let browser: Browser;
  before(async () => (browser = await launchBrowser()));
  after(async () => browser?.close());
  twoInstances('kg_console_page', (x) => (s = x));

  const readyVersion = async (url: string) => ((await (await fetch(`${url}/readyz`)).json()) as { policyVersion: number }).policyVersion;

  it('the admin picks version 1 in the history, confirms, and version 3 (its texts) is live everywhere', async () => {
    expect((await s.cli('apply', '--message', 'first texts')).code).to.equal(0);
    await s.files.append(CLOSE_PROJECTS);
    expect((await s.cli('apply', '--force', '--message', 'close projects')).code).to.equal(0);
    await until('version 2 on both', async () => (await readyVersion(s.a.url)) === 2 && (await readyVersion(s.b.url)) === 2, 5000);

    const admin = await signedUpUser(s.a);
    await s.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
    const t = await openContext(browser, s.a.url, { sessionCookie: admin.cookie });
    try {
      await t.page.goto('/admin/policy');
      await t.page.getByRole('heading', { name: 'Live version' }).waitFor();
      expect(await t.page.locator('#live-title + p').innerText()).to.match(/^Version 2: “close projects”/);
      await t.page.getByRole('link', { name: 'Roll back to version 1' }).click();
      const dialog = t.page.getByRole('dialog', { name: 'Roll back to version 1?' });
      await dialog.waitFor();
      expect(await dialog.innerText()).to.include('“first texts”');
      const v = await seriousViolations(t.page);
      expect(v, describeViolations(v)).to.deep.equal([]);
      await dialog.getByLabel(/^Why/).fill('projects reopened for the audit');
      await screenshot(t.page, 'console-rollback-dialog', false);
      await dialog.getByRole('button', { name: 'Roll back to version 1' }).click();
      await t.page.waitForURL((u) => u.pathname === '/admin/policy');
      await t.page.locator('#live-title + p', { hasText: 'Version 3: “projects reopened for the audit”' }).waitFor();

      await until('the rollback on both', async () => (await readyVersion(s.a.url)) === 3 && (await readyVersion(s.b.url)) === 3, 5000);
      const live = (await s.pool.query('SELECT version FROM policy_versions ORDER BY version DESC LIMIT 1')).rows[0];
      expect(live.version).to.equal(3);
      const rolled = (await s.pool.query("SELECT actor, actor_user_id, detail FROM audit_log WHERE type = 'POLICY_ROLLED_BACK'")).rows;
      expect(rolled).to.have.length(1);
      expect(rolled[0]).to.deep.include({ actor: null, actor_user_id: admin.user.id });
      expect(rolled[0].detail).to.include({ version: 3, rollbackTo: 1, message: 'projects reopened for the audit' });
      // Version 2 is newer than the live texts (version 1's): going back to it is a return, not a
      // roll back, and version 1 itself is marked as holding the live texts.
      await t.page.getByRole('link', { name: 'Return to version 2' }).waitFor();
      expect(await t.page.getByRole('link', { name: /Roll back to version (1|2)/ }).count()).to.equal(0);
      // Version 0, the texts seeded at the first start, is listed like any other.
      expect(await t.page.locator('.history > li', { hasText: 'Version 0: “seeded from files at first start”' }).count()).to.equal(1);
      await screenshot(t.page, 'console-policy-after-rollback');
      expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
    } finally {
      await t.close();
    }
  });
});
