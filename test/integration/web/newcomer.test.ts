import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp, signUpAdmin } from '../../support/http.ts';

// What a newcomer meets first: the address in a browser, a mistyped page, an API route with no
// upstream configured. Each answered raw JSON before.

const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('a newcomer with a browser', () => {
  let gw: TestGateway;
  useGateway({}, (g) => (gw = g));

  describe('when they open the root address', () => {
    it('then an anonymous visitor is sent to the sign-in page', async () => {
      const res = await new Client(gw.url).get('/', browser);
      expect(res.status).to.equal(302);
      expect(res.headers.location).to.equal('/sign-in');
      expect(res.headers['cache-control']).to.equal('no-store');
    });
    it('then a signed-in person is sent to Settings → Developers', async () => {
      const { client } = await signUp(gw.url);
      const res = await client.get('/', browser);
      expect(res.status).to.equal(302);
      expect(res.headers.location).to.equal('/settings/developers');
    });
  });

  describe('when they open a page that does not exist', () => {
    it('then an anonymous visitor is sent to sign in', async () => {
      const res = await new Client(gw.url).get('/no/such/page', browser);
      expect(res.status).to.equal(302);
      expect(res.headers.location).to.equal('/sign-in');
    });
    it('then a signed-in person sees an HTML page saying so, with the page headers', async () => {
      const { client } = await signUp(gw.url);
      const res = await client.get('/no/such/page', browser);
      expect(res.status).to.be.oneOf([403, 404]);
      expect(res.headers['content-type']).to.match(/^text\/html/);
      expect(res.text).to.match(/<h1>(Page not found|Page not available)<\/h1>/);
      expect(res.headers['content-security-policy']).to.contain("default-src 'none'");
    });
  });

  describe('when a form is posted to a page that only answers GET', () => {
    it('then a 405 page says so, with the Allow header, not a 404 that denies the page exists', async () => {
      const { client } = await signUpAdmin(gw);
      expect((await client.get('/admin', browser)).status).to.equal(200);
      const res = await client.request('POST', '/admin', 'x=1', { ...browser, 'content-type': 'application/x-www-form-urlencoded' });
      expect(res.status).to.equal(405);
      expect(res.headers.allow).to.contain('GET');
      expect(res.headers['content-type']).to.match(/^text\/html/);
      expect(res.text).to.contain('<h1>This page does not take that request</h1>');
      expect(res.text).to.contain(`<code class="request-id">${res.headers['x-request-id']}</code>`);
    });
  });

  describe('when a client that is not a browser asks', () => {
    it('then the answer stays a problem document (curl sends */*)', async () => {
      const res = await new Client(gw.url).get('/no/such/page', { accept: '*/*' });
      expect(res.status).to.equal(401);
      expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
    });
    it('then API paths stay problems even for a browser', async () => {
      const { client } = await signUp(gw.url);
      const res = await client.get('/api/no-such-thing', browser);
      expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
    });
  });

  describe('when no upstream is configured and a route of the API is asked for', () => {
    it('then the problem says forwarding is not configured', async () => {
      const { client } = await signUp(gw.url);
      const res = await client.get('/api/projects');
      expect(res.status).to.equal(404);
      expect(res.body.detail).to.contain('forwarding is not configured');
    });
  });
});

describe('an MCP client whose access token is not valid', () => {
  let gw: TestGateway;
  useGateway({ config: { publicUrl: 'http://127.0.0.1:1' } }, (g) => (gw = g));

  it('then the 401 speaks of an access token, not of an API key', async () => {
    const res = await new Client(gw.url).post('/api/mcp', { jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: 'Bearer not-a-token-of-ours', accept: 'application/json, text/event-stream' });
    expect(res.status).to.equal(401);
    expect(res.body.error_description).to.match(/access token/i);
    expect(res.body.error_description).to.not.match(/API key/);
  });
});
