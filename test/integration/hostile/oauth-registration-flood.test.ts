import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { registerClient } from '../oauth/support.ts';

// Dynamic registration is open to anyone: 200 clients of 53 KB each went into the store in under a
// second, and a host such as `a;b` or `*` was registered and later written verbatim into the
// consent page's Content-Security-Policy. 20 registrations a minute per client
// address (429 with Retry-After), client_name at most 200 characters, the metadata at most 8 KB,
// and redirect hosts plain DNS names or IP literals (400).

const meta = (extra: Record<string, unknown> = {}) => ({ client_name: 'Flooder', redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...extra });

describe('hostile: flooding or poisoning dynamic client registration', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  beforeEach(async () => (gw = await startTestGateway()));
  afterEach(async () => gw?.stop());

  const register = (body: unknown) => new Client(gw.url).post('/oauth/register', body);
  const clients = async () => Number((await gw.pool.query("SELECT count(*) AS n FROM oauth_store WHERE model = 'Client'")).rows[0].n);

  it('the 21st registration from one address within a minute is 429 with Retry-After, and stores nothing', async () => {
    for (let i = 0; i < 20; i++) expect((await register(meta())).status, `registration ${i}`).to.equal(201);
    const refused = await register(meta());
    expect(refused.status).to.equal(429);
    expect(refused.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(refused.body.code).to.equal('TOO_MANY_REGISTRATIONS');
    const wait = Number(refused.headers['retry-after']);
    expect(wait).to.be.within(1, 60);
    expect(await clients()).to.equal(20);
    // The window is the gateway's clock: a minute on, registration is open again.
    gw.clock.advance(60_000);
    expect((await register(meta())).status).to.equal(201);
  });

  it('a client_name over 200 characters or metadata over 8 KB is 400, and stores nothing', async () => {
    const long = await register(meta({ client_name: 'x'.repeat(201) }));
    expect(long.status).to.equal(400);
    expect(long.body.error).to.equal('invalid_client_metadata');
    const fat = await register(meta({ client_uri: 'https://app.example/', logo_uri: 'https://app.example/logo', contacts: Array.from({ length: 400 }, (_, i) => `person${i}@app.example`) }));
    expect(fat.status).to.equal(400);
    expect(fat.body.error).to.equal('invalid_client_metadata');
    expect(await clients()).to.equal(0);
    expect((await register(meta({ client_name: 'x'.repeat(200) }))).status).to.equal(201);
  });

  it('a redirect URI whose host is not a plain DNS name or IP literal is 400', async () => {
    for (const uri of ["https://a;b.example/cb", 'https://*.example/cb', "https://x'.example/cb", 'https://a%20b.example/cb', 'https://a!b.example/cb', 'https://a$b.example/cb', "https://evil.example;script-src/cb"]) {
      const res = await register(meta({ redirect_uris: [uri] }));
      expect(res.status, uri).to.equal(400);
    }
    for (const uri of ['https://app.example/cb', 'https://xn--bcher-kva.example/cb', 'https://203.0.113.7/cb', 'https://[2001:db8::1]:8443/cb', 'http://[::1]:3000/cb']) {
      expect((await register(meta({ redirect_uris: [uri] }))).status, uri).to.equal(201);
    }
  });

  it('the consent page\'s CSP names only a plain origin, even for a client stored before hosts were checked', async () => {
    const person = await signUp(gw.url);
    const { clientId } = await registerClient(gw.url, 'Old client', ['https://app.example/cb']);
    // Made as an older version would have stored it. (Loading it now fails the library's check of
    // stored metadata, and the consent route would refuse its origin in any case.)
    await gw.pool.query(`UPDATE oauth_store SET payload = jsonb_set(payload, '{redirect_uris}', '["https://x;sandbox/cb"]') WHERE model = 'Client'`);
    const browser = new Client(gw.url);
    browser.cookies = new Map(person.client.cookies);
    const q = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: 'https://x;sandbox/cb', scope: 'mcp', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', resource: `${gw.url}/api/mcp` });
    let res = await browser.get(`/oauth/authorize?${q}`);
    for (let i = 0; i < 6 && res.status >= 300 && res.status < 400; i++) {
      const to = new URL(res.headers.location!, gw.url);
      expect(to.origin, 'redirected to the client').to.equal(gw.url);
      res = await browser.get(to.pathname + to.search);
    }
    // `https://x;sandbox` in form-action would end the directive and add one of the host's choosing.
    expect(res.headers['content-security-policy'] ?? '').not.to.match(/x;|sandbox/);
    expect(res.status).to.equal(400);
  });
});
