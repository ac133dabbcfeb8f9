import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { describeViolations, launchBrowser, openContext, screenshot, seriousViolations } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { until } from '../../support/until.ts';

// /admin/webhooks with what an endpoint's registrant or its receiver may put there: markup, very
// long unbroken text, direction overrides, NUL and control bytes. Each is shown as text, where it
// belongs: nothing runs, the page never scrolls sideways (at 1280 px or 375 px), every endpoint's
// actions stay in view, and an override is shown for what it is instead of turning text around.

const MARKUP = '<img src=x onerror="window.__pwned=3"><script>window.__pwned=4</script><b>bold?</b>';
const OVERRIDE = '\u202Eevil.exe\u202C \u05E9\u05DC\u05D5\u05DD \u0645\u0631\u062D\u0628\u0627';
const ANSWERS: Record<string, { status: number; body: string }> = {
  '/markup': { status: 500, body: '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\nline2\nline3\nline4\nline5\nline6 not shown' },
  '/override': { status: 418, body: '\u202Egnp.exe\u202C and \u2067isolate\u2069' },
  '/bytes': { status: 502, body: 'before\u0000after\u0001\u001b[31mred' },
  '/one-line': { status: 503, body: `{"error":"${'A'.repeat(1000)}"}` },
};

describe('web: the webhooks console with hostile descriptions, URLs and answers', function () {
  this.timeout(120_000);
  let gw: TestGateway;
  let browser: Browser;
  let receiver: Server;
  let admin: Client;
  let cookie: string;
  const ids: string[] = [];

  before(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      const a = Object.entries(ANSWERS).find(([p]) => req.url!.startsWith(p))?.[1] ?? { status: 404, body: '' };
      req.on('end', () => res.writeHead(a.status, { 'content-type': 'text/html' }).end(a.body));
    });
    await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
    const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    [gw, browser] = await Promise.all([
      startTestGateway({ config: { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1h'] } }, webhookPollMs: 50 }),
      launchBrowser(),
    ]);
    const s = await signUpAdmin(gw);
    admin = s.client;
    cookie = admin.cookies.get('keygate_session')!;
    const endpoints = [
      { url: `${base}/markup?q=<script>"'&x=${MARKUP}`, description: MARKUP },
      { url: `${base}/override/\u202Egnp.exe`, description: OVERRIDE },
      { url: `${base}/bytes`, description: 'D'.repeat(500) },
      { url: `${base}/one-line/${'p'.repeat(1900)}`, description: 'a long address' },
    ];
    for (const e of endpoints) {
      const r = await admin.post('/api/admin/webhooks', e);
      expect(r.status, r.text).to.equal(201);
      ids.push(r.body.id);
      expect((await admin.post(`/api/admin/webhooks/${r.body.id}/test`)).status).to.equal(202);
    }
    await until('every endpoint answered once', async () =>
      (await gw.pool.query('SELECT count(DISTINCT endpoint_id)::int AS n FROM webhook_attempts')).rows[0].n === ids.length, 20_000);
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
    receiver?.close();
  });

  /** What a reader would find wrong: script that ran, elements from the text, and sideways scrolling. */
  const look = (page: Page) => page.evaluate(() => ({
    ran: (window as unknown as { __pwned?: number }).__pwned ?? null,
    injected: document.querySelectorAll('main img, main script, main b').length,
    pageOver: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    rawOverrides: /[\u202A-\u202E\u2066-\u2069]/.test(document.querySelector('main')!.textContent ?? ''),
  }));

  for (const viewport of ['desktop', 'phone'] as const) {
    const width = viewport === 'desktop' ? 1280 : 375;
    it(`at ${width} px the list shows each description as text, overrides named, and every endpoint's actions in view`, async () => {
      const t = await openContext(browser, gw.url, { sessionCookie: cookie, viewport });
      try {
        await t.page.goto('/admin/webhooks');
        expect(await look(t.page)).to.deep.equal({ ran: null, injected: 0, pageOver: 0, rawOverrides: false });
        const table = t.page.locator('.table-wrap');
        expect(await table.evaluate((e) => e.scrollWidth - e.clientWidth), 'the table scrolls sideways').to.be.at.most(0);
        for (const b of await t.page.getByRole('button', { name: 'Send test' }).all()) {
          const box = (await b.boundingBox())!;
          expect(box.x + box.width, 'a Send test button beyond the screen').to.be.at.most(width);
        }
        for (const link of await t.page.locator('tbody th a').all()) expect((await link.innerText()).length).to.be.at.most(120);
        const main = await t.page.locator('main').innerText();
        expect(main).to.include(MARKUP);
        expect(main).to.include('<U+202E>evil.exe<U+202C>');
        expect(main).to.include('\u05E9\u05DC\u05D5\u05DD');
        await screenshot(t.page, `console-webhooks-hostile-${width}`);
        expect(t.problems).to.deep.equal([]);
      } finally {
        await t.close();
      }
    });

    it(`at ${width} px each endpoint's page shows the answer's first lines as text, in a box, and the page never scrolls sideways`, async () => {
      const t = await openContext(browser, gw.url, { sessionCookie: cookie, viewport });
      try {
        for (const [i, id] of ids.entries()) {
          await t.page.goto(`/admin/webhooks/${id}`);
          await t.page.locator('pre.answer').or(t.page.getByText('HTTP 404')).first().waitFor();
          expect(await look(t.page), `endpoint ${i}`).to.deep.equal({ ran: null, injected: 0, pageOver: 0, rawOverrides: false });
          await screenshot(t.page, `console-webhook-hostile-${i}-${width}`);
        }
        await t.page.goto(`/admin/webhooks/${ids[0]}`);
        const answer = await t.page.locator('pre.answer').innerText();
        expect(answer).to.include('<script>window.__pwned=1</script>');
        expect(answer).to.include('line5').and.not.include('line6');
        await t.page.goto(`/admin/webhooks/${ids[1]}`);
        expect(await t.page.locator('pre.answer').innerText()).to.equal('<U+202E>gnp.exe<U+202C> and <U+2067>isolate<U+2069>');
        await t.page.goto(`/admin/webhooks/${ids[2]}`);
        expect(await t.page.locator('pre.answer').innerText()).to.match(/^before\ufffdafter/);
        // A 2,000-character address: a short heading, and the whole of it once, below.
        await t.page.goto(`/admin/webhooks/${ids[3]}`);
        const address = (await admin.get(`/api/admin/webhooks/${ids[3]}`)).body.url as string;
        expect((await t.page.locator('h1').innerText()).length).to.be.at.most(120);
        expect(await t.page.locator('main').innerText()).to.include(address);
        const actions = (await t.page.getByRole('button', { name: 'Send test' }).boundingBox())!;
        expect(actions.y, 'the actions are on the first screens').to.be.below(viewport === 'desktop' ? 400 : 1400);
        const v = await seriousViolations(t.page);
        expect(v, describeViolations(v)).to.deep.equal([]);
        expect(t.problems).to.deep.equal([]);
      } finally {
        await t.close();
      }
    });
  }

  describe('when the add form is sent a description the API would refuse', () => {
    const FORM = { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' };
    const count = async () => (await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n as number;
    for (const [what, description, says] of [
      ['with a NUL', 'a%00b', 'must not contain NUL'],
      ['of 501 characters', 'd'.repeat(501), 'at most 500 characters'],
    ] as const) {
      it(`${what}, it answers a page saying why (400) and adds nothing`, async () => {
        const before = await count();
        const r = await admin.request('POST', '/admin/webhooks', `url=http%3A%2F%2F127.0.0.1%3A9%2Fx&description=${description}`, FORM);
        expect(r.status).to.equal(400);
        expect(r.headers['content-type']).to.match(/^text\/html/);
        expect(r.text).to.include(says);
        expect(await count()).to.equal(before);
      });
    }
  });
});
