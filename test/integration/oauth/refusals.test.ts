import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { initializeMessage, rpc, startEcho, type Echo } from '../mcp/support.ts';

// Every refusal of the OAuth server for MCP clients, over raw HTTP. The consent step is answered with the person's
// session cookie by a plain HTTP client here; flow.test.ts clicks it in Chromium.

const REDIRECT = 'http://127.0.0.1:9/callback';

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

interface Tokens { access_token: string; refresh_token: string }

describe('OAuth for MCP clients: refusals', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let second: TestGateway;
  let echo: Echo;
  before(async () => {
    echo = await startEcho();
    gw = await startTestGateway({ config: { plans: { free: {}, tiny: { apiRateLimit: 2 } }, upstream: { url: echo.url } } });
    // Two instances behind one public name, as in production: they share the issuer and the store.
    second = await startTestGateway({ database: gw.database, config: { publicUrl: gw.url, upstream: { url: echo.url } } });
  });
  after(async () => {
    await second?.stop();
    await gw?.stop();
    await echo?.close();
  });

  const form = (c: Client, path: string, body: Record<string, string>) =>
    c.request('POST', path, new URLSearchParams(body).toString(), { 'content-type': 'application/x-www-form-urlencoded' });

  async function register(redirectUris = [REDIRECT]) {
    return new Client(gw.url).post('/oauth/register', { client_name: 'Raw client', redirect_uris: redirectUris, token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] });
  }

  /** Registers, authorizes with the person's session, consents; answers the code and verifier. */
  async function authorize(person: Awaited<ReturnType<typeof signUp>>, params: Record<string, string> = {}) {
    const clientId = (await register()).body.client_id as string;
    const verifier = randomBytes(32).toString('base64url');
    const browser = new Client(gw.url);
    browser.cookies = new Map(person.client.cookies);
    const q = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'mcp', code_challenge: s256(verifier), code_challenge_method: 'S256', resource: `${gw.url}/api/mcp`, ...params });
    // An empty value stands for a parameter left out altogether.
    for (const [k, v] of Object.entries(params)) if (v === '') q.delete(k);
    let res = await browser.get(`/oauth/authorize?${q}`);
    for (let i = 0; i < 6 && res.status >= 300 && res.status < 400; i++) {
      const to = new URL(res.headers.location!, gw.url);
      if (to.origin !== gw.url) return { clientId, verifier, redirect: to, browser };
      res = /\/oauth\/consent\/[^/]+$/.test(to.pathname)
        ? await browser.request('POST', `${to.pathname}/allow`, undefined, { origin: gw.url })
        : await browser.get(to.pathname + to.search);
    }
    return { clientId, verifier, redirect: null, status: res.status, body: res.body, browser };
  }

  async function connected(plan?: string) {
    const person = await signUp(gw.url);
    if (plan) await gw.pool.query('UPDATE users SET plan = $1 WHERE id = $2', [plan, person.user.id]);
    const a = await authorize(person);
    const code = a.redirect!.searchParams.get('code')!;
    const token = await form(new Client(gw.url), '/oauth/token', { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: a.clientId, code_verifier: a.verifier, resource: `${gw.url}/api/mcp` });
    expect(token.status, token.text).to.equal(200);
    return { person, clientId: a.clientId, tokens: token.body as Tokens };
  }

  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const mcpWith = (base: string, token: string) => rpc(new Client(base), initializeMessage, bearer(token));

  it('serves the authorization server and protected resource metadata, and scope="mcp" in the MCP 401', async () => {
    const c = new Client(gw.url);
    const as = await c.get('/.well-known/oauth-authorization-server');
    expect(as.body).to.deep.equal({
      issuer: gw.url, authorization_endpoint: `${gw.url}/oauth/authorize`, token_endpoint: `${gw.url}/oauth/token`,
      registration_endpoint: `${gw.url}/oauth/register`, revocation_endpoint: `${gw.url}/oauth/revoke`,
      response_types_supported: ['code'], grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'], scopes_supported: ['mcp'], token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true, client_id_metadata_document_supported: true,
    });
    for (const path of ['/.well-known/oauth-protected-resource/api/mcp', '/.well-known/oauth-protected-resource']) {
      const pr = await c.get(path);
      expect(pr.body).to.include({ resource: `${gw.url}/api/mcp` });
      expect(pr.body.authorization_servers).to.deep.equal([gw.url]);
      expect(pr.body.scopes_supported).to.deep.equal(['mcp']);
      expect(pr.body.bearer_methods_supported).to.deep.equal(['header']);
    }
    const refused = await rpc(c, initializeMessage);
    expect(refused.headers['www-authenticate']).to.contain('scope="mcp"');
  });

  it('refuses redirect URIs that are neither https nor loopback http', async () => {
    for (const bad of ['http://example.com/cb', 'ftp://127.0.0.1/cb', 'myapp://cb']) {
      const res = await register([bad]);
      expect(res.status, bad).to.equal(400);
      expect(res.body.error).to.match(/invalid_redirect_uri|invalid_client_metadata/);
    }
    for (const good of ['https://app.example/cb', 'http://localhost:5173/cb', 'http://[::1]:8080/cb']) expect((await register([good])).status, good).to.equal(201);
  });

  it('a native client\'s redirect URI on a loopback IP literal matches on any port (the code goes there)', async () => {
    const person = await signUp(gw.url);
    const a = await authorize(person, { redirect_uri: 'http://127.0.0.1:10/callback' });
    expect(a.redirect?.origin).to.equal('http://127.0.0.1:10');
    expect(a.redirect?.searchParams.get('code')).to.be.a('string');
  });

  it('refuses an authorization without PKCE or with plain, and a wrong verifier or resource at the token endpoint', async () => {
    const person = await signUp(gw.url);
    // Refused on an error page, never by a redirect to the client.
    for (const params of [{ code_challenge: '', code_challenge_method: '' }, { code_challenge_method: 'plain' }] as Record<string, string>[]) {
      const a = await authorize(person, params);
      expect(a.redirect, JSON.stringify(params)).to.equal(null);
      expect(a.status, JSON.stringify(params)).to.equal(400);
    }
    const wrongResource = await authorize(person, { resource: 'https://elsewhere.example/api/mcp' });
    expect(wrongResource.redirect).to.equal(null);
    expect(wrongResource.status).to.equal(400);

    const a = await authorize(person);
    const code = a.redirect!.searchParams.get('code')!;
    const wrong = await form(new Client(gw.url), '/oauth/token', { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: a.clientId, code_verifier: randomBytes(32).toString('base64url') });
    expect(wrong.status).to.equal(400);
    expect(wrong.body.error).to.equal('invalid_grant');
  });

  it('a token is no credential on REST routes and is never forwarded upstream; a key in Bearer is not either', async () => {
    const { tokens } = await connected();
    const c = new Client(gw.url);
    const rest = await c.get('/api/api-keys', bearer(tokens.access_token));
    expect(rest.status).to.equal(401);
    expect(rest.body.code).to.equal('UNAUTHENTICATED');
    const fwd = await c.get('/api/projects', bearer(tokens.access_token));
    expect(fwd.status).to.equal(401);
    const grants = await c.get('/api/oauth/grants', bearer(tokens.access_token));
    expect(grants.status).to.equal(401);
    // Forwarded with a session: the session decides, the token stays behind, other Authorization passes.
    const person = await signUp(gw.url);
    const withToken = await person.client.get('/api/projects', bearer(tokens.access_token));
    expect(withToken.status).to.equal(200);
    expect(echo.last().headers.authorization).to.equal(undefined);
    expect((await person.client.get('/api/projects', bearer(tokens.refresh_token))).status).to.equal(200);
    expect(echo.last().headers.authorization, 'a refresh token stays behind too').to.equal(undefined);
    await person.client.get('/api/projects', { authorization: 'Bearer someone-elses-token' });
    expect(echo.last().headers.authorization).to.equal('Bearer someone-elses-token');
  });

  it('acts as key+via:oauth on /api/mcp with the RateLimit fields, and refuses past the per-grant quota', async () => {
    const { tokens } = await connected('tiny');
    const first = await mcpWith(gw.url, tokens.access_token);
    expect(first.status).to.equal(200);
    expect(first.headers['ratelimit-policy']).to.equal('"day";q=2;w=86400');
    expect(first.headers['ratelimit-remaining']).to.equal('1');
    expect((await mcpWith(gw.url, tokens.access_token)).headers['ratelimit-remaining']).to.equal('0');
    const over = await mcpWith(gw.url, tokens.access_token);
    expect(over.status).to.equal(401);
    expect(over.body.error).to.equal('invalid_token');
  });

  it('rotates refresh tokens, and a reused one revokes the grant', async () => {
    const { person, clientId, tokens } = await connected();
    const refresh = (rt: string) => form(new Client(gw.url), '/oauth/token', { grant_type: 'refresh_token', refresh_token: rt, client_id: clientId });
    const next = await refresh(tokens.refresh_token);
    expect(next.status, next.text).to.equal(200);
    expect(next.body.refresh_token).to.not.equal(tokens.refresh_token);
    expect((await mcpWith(gw.url, next.body.access_token)).status).to.equal(200);
    const reuse = await refresh(tokens.refresh_token);
    expect(reuse.status).to.equal(400);
    expect((await mcpWith(gw.url, next.body.access_token)).status).to.equal(401);
    expect((await refresh(next.body.refresh_token)).status).to.equal(400);
    expect((await person.client.get('/api/oauth/grants')).body.grants).to.deep.equal([]);
    const audit = await gw.pool.query("SELECT type FROM audit_log WHERE owner_user_id = $1 AND type LIKE 'OAUTH%' ORDER BY id", [person.user.id]);
    expect(audit.rows.map((r) => r.type)).to.deep.equal(['OAUTH_GRANT_CREATED', 'OAUTH_GRANT_REVOKED']);
  });

  it('a grant revoked on one instance stops its token on another within 1 s; foreign or unknown ids are 404', async () => {
    const { person, tokens } = await connected();
    expect((await mcpWith(second.url, tokens.access_token)).status).to.equal(200);
    const id = (await person.client.get('/api/oauth/grants')).body.grants[0].id as string;
    const stranger = await signUp(gw.url);
    expect((await stranger.client.request('DELETE', `/api/oauth/grants/${id}`)).status).to.equal(404);
    expect((await person.client.request('DELETE', '/api/oauth/grants/nope')).status).to.equal(404);
    expect((await person.client.request('DELETE', `/api/oauth/grants/${id}`)).status).to.equal(204);
    const deadline = Date.now() + 1000;
    let status = 0;
    do status = (await rpc(new Client(second.url), initializeMessage, bearer(tokens.access_token))).status;
    while (status !== 401 && Date.now() < deadline);
    expect(status).to.equal(401);
  });

  it('a banned owner\'s token is refused at once', async () => {
    const { person, tokens } = await connected();
    expect((await mcpWith(gw.url, tokens.access_token)).status).to.equal(200);
    await gw.pool.query('UPDATE users SET banned = true WHERE id = $1', [person.user.id]);
    expect((await mcpWith(gw.url, tokens.access_token)).status).to.equal(401);
  });
});
