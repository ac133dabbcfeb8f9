import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { layout, raw } from '../../../src/web/layout.ts';

// What the pages and their assets answer over plain HTTP: the security headers a browser
// enforces, content types, and who is sent where.

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

describe('web: page and asset responses', () => {
  let gw: TestGateway;
  // Another prefix than /api: the page must call the API where it really is.
  before(async () => {
    gw = await startTestGateway({ config: { apiPrefix: '/v2' } });
  });
  after(async () => gw?.stop());

  const assetPaths = (html: string) => [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);

  describe('when a page is served', () => {
    it('carries the strict CSP, nosniff, no-referrer and no-store, and no inline script or style', async () => {
      const client = await signUpUnderPrefix(gw);
      for (const [who, path] of [[new Client(gw.url), '/sign-in'], [client, '/settings/developers']] as const) {
        const res = await who.get(path);
        expect(res.status, path).to.equal(200);
        expect(res.headers['content-type']).to.equal('text/html; charset=utf-8');
        expect(res.headers['content-security-policy']).to.equal(CSP);
        expect(res.headers['x-content-type-options']).to.equal('nosniff');
        // The sign-in page's forms POST without script: Chromium would send them with `Origin: null`
        // under no-referrer, so it says same-origin (other sites still learn nothing).
        expect(res.headers['referrer-policy']).to.equal(path === '/sign-in' ? 'same-origin' : 'no-referrer');
        expect(res.headers['cache-control']).to.equal('no-store');
        expect(res.text).to.not.match(/<script(?![^>]*\b(src=|type="application\/json"))/);
        expect(res.text).to.not.match(/<style|style="|\son[a-z]+="/);
        expect(res.text).to.not.match(/https?:\/\//);
      }
    });

    it('hands the page its API prefix and flags in a JSON block, with "<" escaped', async () => {
      const res = await new Client(gw.url).get('/sign-in');
      const json = /<script type="application\/json" id="keygate-config">([^<]*)<\/script>/.exec(res.text)?.[1];
      expect(JSON.parse(json!)).to.deep.include({ apiPrefix: '/v2', signUp: true });
      const hostile = layout({
        title: 't', script: null, header: raw(''), main: raw(''),
        assets: { files: new Map(), urls: { signIn: '/a', developers: '/b', console: '/e', styles: '/c', icon: '/d' } },
        config: { apiPrefix: '</script><script>alert(1)</script>', signUp: true, keys: null, connectedApps: false },
      });
      expect(hostile).to.not.include('</script><script>alert(1)');
    });
  });

  describe('when an asset is asked for', () => {
    it('answers each with its content type, nosniff and a long cache (its name carries a hash)', async () => {
      const page = await new Client(gw.url).get('/sign-in');
      const paths = assetPaths(page.text);
      expect(paths.map((p) => p.split('.').pop())).to.include.members(['js', 'css', 'svg']);
      for (const path of paths) {
        const res = await new Client(gw.url).get(path);
        expect(res.status, path).to.equal(200);
        const type = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' }[path.split('.').pop()!];
        expect(res.headers['content-type'], path).to.equal(type);
        expect(res.headers['x-content-type-options']).to.equal('nosniff');
        expect(res.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
      }
    });

    it('answers 404 as a problem for a name it does not have', async () => {
      const res = await new Client(gw.url).get('/assets/nothing-here.js');
      expect(res.status).to.equal(404);
      expect(res.headers['content-type']).to.match(/application\/problem\+json/);
    });
  });

  describe('who is sent where', () => {
    it('an anonymous visitor to Settings → Developers is redirected to /sign-in', async () => {
      const res = await new Client(gw.url).get('/settings/developers');
      expect(res.status).to.equal(302);
      expect(res.headers.location).to.equal('/sign-in');
    });

    it('a signed-in visitor to /sign-in is redirected to Settings → Developers', async () => {
      const client = await signUpUnderPrefix(gw);
      const res = await client.get('/sign-in');
      expect(res.status).to.equal(302);
      expect(res.headers.location).to.equal('/settings/developers');
    });

    it('a request with an API key is no signed-in person: it is sent to /sign-in', async () => {
      const client = await signUpUnderPrefix(gw);
      const created = await client.post('/v2/api-keys', { name: 'k' });
      const res = await new Client(gw.url).withKey(created.body.key).get('/settings/developers');
      expect(res.status).to.equal(302);
      expect(res.headers.location).to.equal('/sign-in');
    });
  });
});

let n = 0;
async function signUpUnderPrefix(gw: TestGateway): Promise<Client> {
  const client = new Client(gw.url);
  const res = await client.post('/v2/auth/sign-up/email', { email: `hdr${Date.now()}${n++}@example.test`, password: 'long enough', name: 'H' });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${res.text}`);
  return client;
}
