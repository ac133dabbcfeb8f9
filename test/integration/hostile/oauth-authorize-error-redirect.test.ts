import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { registerClient } from '../oauth/support.ts';

// keygate's origin as an open redirect: anyone may register a client with an https URI of their
// choosing, then link people to an authorization request that is invalid on purpose; the library
// answered such requests by redirecting to the URI at once. And RP-initiated logout (the library's
// default) redirected to any registered post-logout URI. An invalid authorization
// request shows an error page and never redirects; `/oauth/session/end` answers 404.

const EVIL = 'https://evil.example/landing';

describe('hostile: keygate\'s OAuth endpoints as an open redirect', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let clientId: string;
  let loopbackClientId: string;
  before(async () => {
    gw = await startTestGateway();
    clientId = (await registerClient(gw.url, 'Redirector', [EVIL])).clientId;
    loopbackClientId = (await registerClient(gw.url, 'Loopback', ['http://127.0.0.1:9/callback'])).clientId;
  });
  after(async () => gw?.stop());

  const challenge = createHash('sha256').update(randomBytes(32)).digest('base64url');
  const good = () => ({ client_id: clientId, response_type: 'code', redirect_uri: EVIL, scope: 'mcp', code_challenge: challenge, code_challenge_method: 'S256', resource: `${gw.url}/api/mcp`, state: 'x' });
  const invalid: [string, () => Record<string, string | null>][] = [
    ['PKCE missing', () => ({ code_challenge: null, code_challenge_method: null })],
    ['PKCE plain', () => ({ code_challenge_method: 'plain' })],
    ['a foreign resource', () => ({ resource: 'https://elsewhere.example/api/mcp' })],
    ['an unsupported response_type', () => ({ response_type: 'token' })],
    ['redirect_uri left out (one is registered)', () => ({ redirect_uri: null, code_challenge: null })],
    ['a redirect_uri not registered', () => ({ redirect_uri: 'https://evil.example/other' })],
    ['an unknown client_id', () => ({ client_id: 'no-such-client' })],
    ['a loopback client sent to the evil URI', () => ({ client_id: loopbackClientId })],
    ['a request object', () => ({ request: 'eyJhbGciOiJub25lIn0.e30.' })],
  ];

  for (const signedIn of [false, true]) {
    for (const [name, change] of invalid) {
      it(`${signedIn ? 'signed in' : 'anonymous'}: ${name} gets an error page, no redirect`, async () => {
        const browser = new Client(gw.url);
        if (signedIn) browser.cookies = new Map((await signUp(gw.url)).client.cookies);
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries({ ...good(), ...change() })) if (v !== null) q.set(k, v);
        const res = await browser.get(`/oauth/authorize?${q}`);
        expect(res.status, res.text.slice(0, 200)).to.equal(400);
        expect(res.headers.location, 'a redirect').to.equal(undefined);
        expect(res.headers['content-type']).to.match(/^text\/html/);
        expect(res.text).to.contain('could not be connected');
        expect(res.text).not.to.contain('googleapis');
      });
    }
  }

  it('a valid request still goes on to the sign-in step (no error page)', async () => {
    const q = new URLSearchParams(good() as Record<string, string>);
    const res = await new Client(gw.url).get(`/oauth/authorize?${q}`);
    expect(res.status).to.be.within(300, 399);
    expect(new URL(res.headers.location!, gw.url).origin).to.equal(gw.url);
  });

  it('RP-initiated logout is off: /oauth/session/end answers 404 and redirects nowhere', async () => {
    const registered = await new Client(gw.url).post('/oauth/register', { client_name: 'Logout redirector', redirect_uris: [EVIL], post_logout_redirect_uris: [EVIL], token_endpoint_auth_method: 'none' });
    const id = (registered.body.client_id as string | undefined) ?? clientId;
    for (const method of ['GET', 'POST'] as const) {
      const q = new URLSearchParams({ client_id: id, post_logout_redirect_uri: EVIL });
      const res = method === 'GET'
        ? await new Client(gw.url).get(`/oauth/session/end?${q}`)
        : await new Client(gw.url).request('POST', '/oauth/session/end', q.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
      expect(res.status, `${method} ${res.text.slice(0, 200)}`).to.equal(404);
      expect(res.headers.location).to.equal(undefined);
    }
  });
});
