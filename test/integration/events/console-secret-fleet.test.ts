import { createHash } from 'node:crypto';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { launchBrowser, openContext, screenshot } from '../../support/browser.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUpAdmin } from '../../support/http.ts';
import { startBalancer, type Balancer } from './balancer.ts';

// The console shows a new or rotated webhook secret once, on the page the form's POST redirects
// to. Behind a load balancer without sticky sessions that page is served by another instance than
// the POST: two real gateways on one database here, the POST sent to one and the page asked of the
// other, over HTTP and in Chromium. The page is for the admin who made the change, within a
// minute, once; the secret is in no address, cookie or log line.

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const ADDRESS = /^\/admin\/webhooks\/([0-9a-f-]{36})\?secret=([A-Za-z0-9_-]{43})$/;
const shownSecret = (page: string) => /<code class="secret">([^<]+)<\/code>/.exec(page)?.[1] ?? null;
const NOT_SHOWN = 'is not shown again here';

describe('web: a webhook secret added or rotated on one instance is shown once on another', function () {
  this.timeout(120_000);
  let a: TestGateway;
  let b: TestGateway;
  let admin: Client;
  let otherAdmin: Client;
  /** Every secret and token the tests saw, to look for in the logs at the end. */
  const seen: string[] = [];

  before(async () => {
    const config = { webhooks: { allowPrivateAddresses: true } };
    a = await startTestGateway({ config });
    b = await startTestGateway({ config, database: a.database });
    admin = (await signUpAdmin(a)).client;
    otherAdmin = (await signUpAdmin(a)).client;
  });
  after(async () => {
    await b?.close();
    await a?.stop();
  });

  /** The same person (their session cookie) talking to the other instance. */
  const onB = (c: Client) => Object.assign(new Client(b.url), { cookies: c.cookies });
  const stored = async (id: string) =>
    (await a.pool.query('SELECT secret, reveal_token_hash FROM webhook_endpoints WHERE id = $1', [id])).rows[0] as
      { secret: string; reveal_token_hash: Buffer | null };

  async function redirected(r: { status: number; headers: Record<string, string>; text: string }) {
    expect(r.status, r.text).to.equal(303);
    const m = ADDRESS.exec(r.headers.location ?? '');
    expect(m, r.headers.location).to.not.equal(null);
    seen.push(m![2]!);
    return { address: m![0], id: m![1]!, token: m![2]! };
  }
  const addOnA = async (by = admin) =>
    redirected(await by.request('POST', '/admin/webhooks', 'url=http%3A%2F%2F127.0.0.1%3A9%2Fhook&description=fleet', FORM));
  const rotateOnA = async (id: string) => redirected(await admin.request('POST', `/admin/webhooks/${id}/rotate`, '', FORM));

  async function expectShown(c: Client, address: string, id: string) {
    const r = await c.get(address, { accept: 'text/html' });
    expect(r.status).to.equal(200);
    const secret = shownSecret(r.text);
    expect(secret, 'the secret on the page').to.match(/^whsec_/);
    expect(secret).to.equal((await stored(id)).secret);
    seen.push(secret!);
    return { secret: secret!, page: r };
  }
  async function expectNotShown(c: Client, address: string) {
    const r = await c.get(address, { accept: 'text/html' });
    expect(r.status, r.text).to.equal(200);
    expect(r.text).to.include(NOT_SHOWN);
    expect(r.text).to.not.include('whsec_');
    expect(r.headers['referrer-policy']).to.equal('no-referrer');
  }

  describe('when the form is posted to one instance and its redirect is opened on the other', () => {
    it('the other shows the endpoint\'s signing secret, on a page no cache keeps and whose address no link learns', async () => {
      const { address, id, token } = await addOnA();
      // Only the token's hash waits in the row; the token itself is nowhere in it.
      const row = (await a.pool.query('SELECT to_jsonb(w)::text AS text FROM webhook_endpoints w WHERE id = $1', [id])).rows[0].text;
      expect((await stored(id)).reveal_token_hash).to.deep.equal(createHash('sha256').update(token).digest());
      expect(row).to.not.include(token);
      const { secret, page } = await expectShown(onB(admin), address, id);
      expect(page.text).to.include('Endpoint added');
      expect(page.headers['cache-control']).to.equal('no-store');
      expect(page.headers['referrer-policy']).to.equal('no-referrer');
      expect(page.headers['set-cookie'] ?? '').to.not.include(secret);
      expect(page.text, 'a form on this page would POST with Origin: null').to.not.match(/<form[^>]*method="post"[^>]*action=/);
      expect((await stored(id)).reveal_token_hash, 'cleared once shown').to.equal(null);
      expect(address).to.not.include(secret);
    });

    it('opened again, on either instance, it is not shown; a HEAD before it used nothing up', async () => {
      const { address, id } = await addOnA();
      expect((await onB(admin).request('HEAD', address, undefined, { accept: 'text/html' })).status).to.equal(200);
      await expectShown(onB(admin), address, id);
      await expectNotShown(onB(admin), address);
      await expectNotShown(admin, address);
    });

    it('a rotation is shown the same way with until when the old secret signs, and a refused second rotation leaves it to be seen', async () => {
      const { id } = await addOnA();
      const before = (await stored(id)).secret;
      const { address } = await rotateOnA(id);
      const refused = await admin.request('POST', `/admin/webhooks/${id}/rotate`, '', { ...FORM, accept: 'text/html' });
      expect(refused.status).to.equal(409);
      const { secret, page } = await expectShown(onB(admin), address, id);
      expect(secret).to.not.equal(before);
      expect(page.text).to.include('Secret rotated');
      const until = (await a.pool.query('SELECT previous_secret_until FROM webhook_endpoints WHERE id = $1', [id])).rows[0];
      expect(page.text).to.include(`datetime="${(until.previous_secret_until as Date).toISOString()}"`);
    });
  });

  describe('when someone else, or the same address too late or altered, asks', () => {
    it('another admin sees it not shown, and the admin who made the change still sees it', async () => {
      const { address, id } = await addOnA();
      await expectNotShown(onB(otherAdmin), address);
      await expectNotShown(otherAdmin, address);
      await expectShown(onB(admin), address, id);
    });

    it('after its minute it is not shown; just inside it, it is', async () => {
      // Each test gateway's clock stands still where it started; B's is set to A's, where the minute starts.
      const started = b.clock.now();
      try {
        const late = await addOnA();
        b.clock.set(a.clock.now());
        b.clock.advance(61_000);
        await expectNotShown(onB(admin), late.address);
        const inTime = await addOnA();
        b.clock.set(a.clock.now());
        b.clock.advance(59_000);
        await expectShown(onB(admin), inTime.address, inTime.id);
      } finally {
        b.clock.set(started);
      }
    });

    it('a tampered, malformed, repeated or misplaced token shows nothing, and leaves the real one working', async () => {
      const { address, id, token } = await addOnA();
      const other = await addOnA();
      const flipped = token.slice(0, 20) + (token[20] === 'A' ? 'B' : 'A') + token.slice(21);
      for (const wrong of [
        `/admin/webhooks/${id}?secret=${flipped}`, `/admin/webhooks/${id}?secret=${token}A`, `/admin/webhooks/${id}?secret=`,
        `/admin/webhooks/${id}?secret=${token}&secret=${token}`, `/admin/webhooks/${other.id}?secret=${token}`,
        `/admin/webhooks/${id}?secret=${encodeURIComponent('<script>x</script>')}`,
      ]) await expectNotShown(onB(admin), wrong);
      expect((await onB(admin).get(`/admin/webhooks/00000000-0000-4000-8000-000000000000?secret=${token}`, { accept: 'text/html' })).status)
        .to.equal(404);
      await expectShown(onB(admin), address, id);
    });

    it('asked for on both instances at once, it is shown by exactly one', async () => {
      const { address } = await addOnA();
      const pages = await Promise.all([admin, onB(admin), admin, onB(admin)].map((c) => c.get(address, { accept: 'text/html' })));
      expect(pages.map((p) => p.status)).to.deep.equal([200, 200, 200, 200]);
      expect(pages.filter((p) => shownSecret(p.text) !== null)).to.have.length(1);
    });

    it('a rotation by the API before the page is opened leaves nothing to show: that secret is no longer the new one', async () => {
      const { address, id } = await addOnA();
      const r = await admin.post(`/api/admin/webhooks/${id}/rotate-secret`);
      expect(r.status, r.text).to.equal(200);
      seen.push(r.body.secret);
      await expectNotShown(onB(admin), address);
    });
  });

  describe('in Chromium, behind a balancer that sends every POST to one instance and every GET to the other', () => {
    let browser: Browser;
    let lb: Balancer;
    before(async () => {
      browser = await launchBrowser();
      lb = await startBalancer((req) => (req.method === 'POST' ? a.url : b.url));
    });
    after(async () => {
      await browser?.close();
      await lb?.close();
    });

    it('adding and rotating each show their secret once, on the instance that did not take the POST', async () => {
      const t = await openContext(browser, lb.url, { sessionCookie: admin.cookies.get('keygate_session')! });
      try {
        await t.page.goto('/admin/webhooks');
        await t.page.getByLabel('URL').fill('http://127.0.0.1:9/browser');
        const revealed = t.page.waitForResponse((r) => r.url().includes('?secret='));
        await t.page.getByRole('button', { name: 'Add endpoint' }).click();
        const headers = (await revealed).headers();
        expect(headers['cache-control']).to.equal('no-store');
        expect(headers['referrer-policy']).to.equal('no-referrer');
        await t.page.getByRole('heading', { name: 'Endpoint added' }).waitFor();
        const id = ADDRESS.exec(new URL(t.page.url()).pathname + new URL(t.page.url()).search)![1]!;
        const first = (await t.page.locator('code.secret').innerText()).trim();
        expect(first).to.equal((await stored(id)).secret);
        seen.push(first, new URL(t.page.url()).searchParams.get('secret')!);
        const post = lb.passed.find((p) => p.method === 'POST' && p.path === '/admin/webhooks');
        const shown = lb.passed.find((p) => p.method === 'GET' && p.path.startsWith(`/admin/webhooks/${id}?secret=`));
        expect([post?.to, post?.status, shown?.to, shown?.status]).to.deep.equal([a.url, 303, b.url, 200]);
        await screenshot(t.page, 'console-webhook-secret-fleet-1280');

        await t.page.reload();
        await t.page.getByText(NOT_SHOWN).waitFor();
        expect(await t.page.content()).to.not.include(first);

        await t.page.getByRole('link', { name: 'Continue to the endpoint' }).click();
        await t.page.getByRole('button', { name: 'Rotate secret' }).click();
        await t.page.getByRole('heading', { name: 'Secret rotated' }).waitFor();
        const second = (await t.page.locator('code.secret').innerText()).trim();
        expect(second).to.not.equal(first);
        expect(second).to.equal((await stored(id)).secret);
        seen.push(second, new URL(t.page.url()).searchParams.get('secret')!);
        await t.page.reload();
        await t.page.getByText(NOT_SHOWN).waitFor();
        expect(await t.page.content()).to.not.include(second);

        // No request after a page with a token named that page: not its assets, not the next page.
        expect(lb.passed.filter((p) => p.referer?.includes('secret='))).to.deep.equal([]);
        expect(t.problems).to.deep.equal([]);
      } finally {
        await t.close();
      }
    });
  });

  describe('afterwards', () => {
    it('no secret and no token the tests saw was written to either instance\'s log', () => {
      expect(seen.length).to.be.greaterThan(10);
      const logs = [...a.logs, ...b.logs].join('\n');
      for (const s of seen) expect(logs, 'a log line').to.not.include(s);
    });
  });
});
