import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, screenshot, seriousViolations, signedUpUser } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';

// Settings → Developers after GitHub reported one of the owner's keys: the page says the key was
// revoked because it was found public, and where, on a desktop and on a phone. A report's URL is as
// long as the repository's path makes it; it must wrap, not push the page sideways.

describe('page: Settings → Developers shows a key revoked because it was found public', function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let browser: Browser;
  let keysServer: Server;
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  before(async () => {
    keysServer = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ public_keys: [{ key_identifier: 'k1', key: github.publicKey.export({ type: 'spki', format: 'pem' }), is_current: true }] }));
    });
    await new Promise<void>((ok) => keysServer.listen(0, '127.0.0.1', () => ok()));
    const keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/keys`;
    [gw, browser] = await Promise.all([startTestGateway({ config: { secretScanning: { github: { enabled: true, keysUrl } } } }), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await gw?.database.drop();
    keysServer?.close();
  });

  for (const viewport of ['desktop', 'phone'] as const) {
    it(`names the key, says why, and links where it was found, within the screen (${viewport})`, async () => {
      const person = await signedUpUser(gw);
      const key = (await person.client.post('/api/api-keys', { name: 'deploy bot' })).body;
      const url = `https://github.com/acme/infrastructure/blob/${'0123456789abcdef'.repeat(2)}01234567/${'services/payments/config/'.repeat(6)}.env.production`;
      const body = JSON.stringify([{ token: key.key, type: 'keygate_api_key', url, source: 'content' }]);
      const signature = sign('sha256', Buffer.from(body), { key: github.privateKey, dsaEncoding: 'der' }).toString('base64');
      const r = await new Client(gw.url).request('POST', '/api/secret-scanning/github', body, {
        'github-public-key-identifier': 'k1', 'github-public-key-signature': signature,
      });
      expect(r.status, r.text).to.equal(200);

      const t = await openContext(browser, gw.url, { viewport, sessionCookie: person.cookie });
      try {
        await t.page.goto('/settings/developers');
        const panel = t.page.getByRole('region', { name: 'Keys revoked because they were found public' });
        await panel.waitFor();
        const text = (await panel.textContent()) ?? '';
        expect(text).to.include('deploy bot').and.include(key.start).and.include('revoked');
        expect(await panel.getByRole('link', { name: url }).getAttribute('href')).to.equal(url);
        expect(text).to.not.include(key.key);
        expect(describeViolations(await seriousViolations(t.page))).to.equal('');
        const width = viewport === 'phone' ? 375 : 1280;
        expect(await t.page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(width);
        await screenshot(t.page, `developers-leaked-${viewport}`);
        expect(t.problems, t.problems.join('\n')).to.deep.equal([]);
      } finally {
        await t.close();
      }
    });
  }
});
