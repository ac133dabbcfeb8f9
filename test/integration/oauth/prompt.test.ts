import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp, type Reply } from '../../support/http.ts';
import { registerClient } from './support.ts';

// The OpenID Connect `prompt` and `max_age` parameters on the authorization endpoint, over raw HTTP
// with the person's session cookie. `prompt=none` must answer the client by redirect when the person
// would be needed (OpenID Connect Core 3.1.2.6); an invalid value is an invalid request: a page.

const REDIRECT = 'http://127.0.0.1:9/callback';

describe('OAuth for MCP clients: prompt and max_age', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  before(async () => { gw = await startTestGateway({}); });
  after(async () => { await gw?.stop(); });

  /** A browser holding `cookies` (none: anonymous) asks to authorize `clientId` with `extra` parameters. */
  async function ask(browser: Client, clientId: string, extra: Record<string, string>): Promise<Reply> {
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const q = new URLSearchParams({
      client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'mcp', state: 'st-42',
      code_challenge: challenge, code_challenge_method: 'S256', resource: `${gw.url}/api/mcp`, ...extra,
    });
    return browser.get(`/oauth/authorize?${q}`);
  }

  /** Follows keygate's redirects, allowing on the consent page; answers where the client was sent. */
  async function follow(browser: Client, res: Reply): Promise<{ to: URL | null; consentPages: number }> {
    let consentPages = 0;
    for (let hop = 0; hop < 6 && res.status >= 300 && res.status < 400; hop++) {
      const to = new URL(res.headers.location!, gw.url);
      if (to.origin !== gw.url) return { to, consentPages };
      if (/\/oauth\/consent\/[^/]+$/.test(to.pathname)) {
        consentPages++;
        res = await browser.request('POST', `${to.pathname}/allow`, undefined, { origin: gw.url });
      } else res = await browser.get(to.pathname + to.search);
    }
    return { to: null, consentPages };
  }

  const browserOf = (person: Awaited<ReturnType<typeof signUp>> | null) => {
    const browser = new Client(gw.url);
    if (person) browser.cookies = new Map(person.client.cookies);
    return browser;
  };

  /** The redirect the client gets for `prompt=none`: its error, its state and the issuer, never a code. */
  function expectErrorRedirect(res: Reply, error: string) {
    expect(res.status, res.text.slice(0, 300)).to.equal(303);
    expect(res.headers.location, 'a Location header').to.be.a('string');
    const to = new URL(res.headers.location!);
    expect(`${to.origin}${to.pathname}`).to.equal(REDIRECT);
    expect(to.searchParams.get('error')).to.equal(error);
    expect(to.searchParams.get('state')).to.equal('st-42');
    expect(to.searchParams.get('iss')).to.equal(gw.url);
    expect(to.searchParams.has('code')).to.equal(false);
  }

  it('answers prompt=none for a signed-in person with an error redirect to the client, and records nothing', async () => {
    const person = await signUp(gw.url);
    const { clientId } = await registerClient(gw.url, 'Silent client');
    expectErrorRedirect(await ask(browserOf(person), clientId, { prompt: 'none' }), 'login_required');
    expect((await person.client.get('/api/oauth/grants')).body.grants).to.deep.equal([]);
  });

  it('answers prompt=none for an anonymous browser with login_required, not the sign-in page', async () => {
    const { clientId } = await registerClient(gw.url, 'Silent client');
    expectErrorRedirect(await ask(browserOf(null), clientId, { prompt: 'none' }), 'login_required');
  });

  // The library's own session now knows the person; a native (loopback) client still needs them
  // (the library's interaction_required), and keygate never reuses a consent anyway.
  it('answers prompt=none after an earlier consent with interaction_required: every authorization is consented anew', async () => {
    const person = await signUp(gw.url);
    const { clientId } = await registerClient(gw.url, 'Returning client');
    const browser = browserOf(person);
    const first = await follow(browser, await ask(browser, clientId, {}));
    expect(first.to?.searchParams.get('code')).to.be.a('string');
    expectErrorRedirect(await ask(browser, clientId, { prompt: 'none' }), 'interaction_required');
    expect((await person.client.get('/api/oauth/grants')).body.grants).to.have.length(1);
  });

  it('still answers an invalid prompt=none request with a page, never a redirect', async () => {
    const person = await signUp(gw.url);
    const { clientId } = await registerClient(gw.url, 'Silent client');
    const res = await ask(browserOf(person), clientId, { prompt: 'none', redirect_uri: 'http://127.0.0.1:9/elsewhere' });
    expect(res.status).to.equal(400);
    expect(res.headers.location).to.equal(undefined);
    expect(res.text).to.include('redirect_uri');
  });

  it('shows the consent page for prompt=login and prompt=consent, then sends a code', async () => {
    const person = await signUp(gw.url);
    for (const prompt of ['login', 'consent']) {
      const { clientId } = await registerClient(gw.url, `Client ${prompt}`);
      const browser = browserOf(person);
      const done = await follow(browser, await ask(browser, clientId, { prompt }));
      expect(done.consentPages, prompt).to.equal(1);
      expect(done.to?.searchParams.get('code'), prompt).to.be.a('string');
      expect(done.to?.searchParams.get('state'), prompt).to.equal('st-42');
    }
  });

  it('refuses an unknown prompt value and max_age=0 (OpenID only) with a 400 page', async () => {
    const person = await signUp(gw.url);
    const { clientId } = await registerClient(gw.url, 'Odd client');
    for (const [extra, words] of [
      [{ prompt: 'bogus' }, 'unsupported prompt value'],
      [{ prompt: 'none login' }, 'prompt none must only be used alone'],
      [{ max_age: '0' }, 'max_age'],
    ] as const) {
      const res = await ask(browserOf(person), clientId, extra);
      expect(res.status, JSON.stringify(extra)).to.equal(400);
      expect(res.headers.location, JSON.stringify(extra)).to.equal(undefined);
      expect(res.headers['content-type']).to.match(/^text\/html/);
      expect(res.text).to.include('invalid_request').and.include(words);
    }
    expect((await person.client.get('/api/oauth/grants')).body.grants).to.deep.equal([]);
  });
});
