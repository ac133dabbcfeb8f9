import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { launchBrowser, openContext } from '../support/browser.ts';
import { createTestDatabase, serverUrl, type TestDatabase } from '../support/db.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { signUp, type Client } from '../support/http.ts';
import { startFreezableProxy, type FreezableProxy } from './freeze-proxy.ts';

// A signed-in person's page during a PostgreSQL outage: the page itself is the 503 error page, and
// the stylesheet and icon it links are served all the same, though the browser sends the session
// cookie with them: a page's assets need no caller, so resolving the session must not stand in the way.

const HTML = 'text/html,application/xhtml+xml';

describe('faults: the pages\' assets while PostgreSQL is frozen', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let proxy: FreezableProxy;
  let gw: TestGateway;
  let client: Client;
  let browser: Browser;
  before(async () => {
    db = await createTestDatabase('kg_assets503');
    const server = new URL(await serverUrl());
    proxy = await startFreezableProxy(server.hostname, Number(server.port || 5432));
    gw = await startTestGateway({ database: { url: proxy.urlFor(db.url), name: db.name, drop: async () => {} } });
    ({ client } = await signUp(gw.url));
    browser = await launchBrowser();
  });
  after(async () => {
    proxy?.thaw();
    await browser?.close();
    await gw?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  /** The stylesheet and icon a page links, by the markup that links them. */
  const linked = (text: string) => ({
    styles: /<link rel="stylesheet" href="(\/assets\/[^"]+\.css)">/.exec(text)?.[1],
    icon: /<link rel="icon" type="image\/svg\+xml" href="(\/assets\/[^"]+\.svg)">/.exec(text)?.[1],
  });

  it('answers the 503 page, and its stylesheet and icon with their types and cache, to a request with the session cookie', async () => {
    expect((await client.get('/settings/developers', { accept: HTML })).status, 'the page while the database answers').to.equal(200);
    proxy.freeze();
    try {
      const page = await client.get('/settings/developers', { accept: HTML });
      expect(page.status).to.equal(503);
      expect(page.headers['content-type']).to.equal('text/html; charset=utf-8');
      expect(page.text).to.include(page.headers['x-request-id']!);
      const { styles, icon } = linked(page.text);
      expect(styles, 'the stylesheet the 503 page links').to.be.a('string');
      expect(icon, 'the icon the 503 page links').to.be.a('string');
      expect(page.text, 'the brand icon in the header').to.include(`<img src="${icon}"`);
      for (const [path, type] of [[styles!, 'text/css; charset=utf-8'], [icon!, 'image/svg+xml']] as const) {
        const res = await client.get(path, { accept: '*/*' });
        expect(res.status, path).to.equal(200);
        expect(res.headers['content-type'], path).to.equal(type);
        expect(res.headers['cache-control'], path).to.equal('public, max-age=31536000, immutable');
        expect(res.headers['x-content-type-options'], path).to.equal('nosniff');
        expect(res.text.length, path).to.be.greaterThan(0);
      }
      expect((await client.request('HEAD', styles!)).status, 'HEAD of the stylesheet').to.equal(200);
      // An asset the bundle does not have is still a 404, not something else.
      expect((await client.get('/assets/nothing-here.css', { accept: '*/*' })).status).to.equal(404);
      // Only reading one asset goes without a caller: anything else under /assets/ still has its
      // session looked up, which the outage answers.
      expect((await client.post(styles!, {})).status, 'POST to an asset').to.equal(503);
      expect((await client.get(`${styles!}/more`, { accept: '*/*' })).status, 'a path below an asset').to.equal(503);
    } finally {
      proxy.thaw();
    }
  });

  it('renders the 503 page styled, with its icon, in a browser signed in', async () => {
    const t = await openContext(browser, gw.url, { sessionCookie: client.cookies.get('keygate_session') });
    try {
      proxy.freeze();
      const failed: string[] = [];
      t.page.on('response', (r) => { if (r.url().includes('/assets/') && r.status() !== 200) failed.push(`${r.status()} ${r.url()}`); });
      const res = await t.page.goto('/settings/developers');
      expect(res?.status()).to.equal(503);
      await t.page.waitForLoadState('load');
      expect(failed, 'asset requests answered otherwise than 200').to.deep.equal([]);
      const seen = await t.page.evaluate(() => ({
        rules: Array.from(document.styleSheets).reduce((n, s) => n + s.cssRules.length, 0),
        icon: (document.querySelector('.brand img') as HTMLImageElement | null)?.naturalWidth ?? 0,
        requestId: document.querySelector('.request-id')?.textContent ?? '',
      }));
      expect(seen.rules, 'style rules applied').to.be.greaterThan(0);
      expect(seen.icon, 'the icon drawn').to.be.greaterThan(0);
      expect(seen.requestId).to.equal(res?.headers()['x-request-id']);
    } finally {
      proxy.thaw();
      await t.close();
    }
  });
});
