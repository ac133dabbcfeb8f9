import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { expectProblem } from './support.ts';

// With no upstream configured, a request the matrix allows and the gateway does not
// serve itself answers 404. The matrix still decides first: refusals keep their 401 and 403.

describe('no upstream configured', () => {
  let gw: TestGateway;
  let session: Client;
  let key: Client;
  before(async () => {
    gw = await startTestGateway({ config: { upstream: { url: null }, ai: { enabled: true } }, env: { CONTENT_API_KEY: 's3cret' } });
    session = (await signUp(gw.url)).client;
    const created = await session.post('/api/api-keys', { name: 'no upstream', ai: true });
    key = new Client(gw.url).withKey(created.body.key);
  });
  after(async () => gw?.stop());

  describe('when the matrix allows a forwarded path, then 404 NOT_FOUND as a problem', () => {
    const cases: [string, () => Client, string, string, unknown?][] = [
      ['a signed-in session', () => session, 'GET', '/api/projects'],
      ['a signed-in session', () => session, 'POST', '/api/billing/checkout', { plan: 'pro' }],
      ['a signed-in session', () => session, 'GET', '/api/organizations/o-1'],
      ['an ai key', () => key, 'GET', '/api/projects?page=2'],
      ['an ai key', () => key, 'POST', '/api/ai/chat', { message: 'hi' }],
      ['an ai key', () => key, 'GET', '/api/projects/../billing/invoices'],
    ];
    for (const [who, client, method, path, body] of cases) {
      it(`${who}: ${method} ${path}`, async () => {
        const res = await client().request(method, path, body);
        expectProblem(res, 404, 'NOT_FOUND');
      });
    }

    it('the content route with the right content key: 404 NOT_FOUND', async () => {
      expectProblem(await new Client(gw.url).get('/v1/content', { 'x-content-api-key': 's3cret' }), 404, 'NOT_FOUND');
    });
  });

  describe('when the matrix refuses, then the refusal comes first', () => {
    it('an anonymous caller: 401 UNAUTHENTICATED', async () => {
      expectProblem(await new Client(gw.url).get('/api/projects'), 401, 'UNAUTHENTICATED');
    });
    it('an ai key on a billing write: 403 FORBIDDEN', async () => {
      expectProblem(await key.post('/api/billing/checkout', { plan: 'pro' }), 403, 'FORBIDDEN');
    });
    it('a content request with a wrong content key: 401 UNAUTHENTICATED', async () => {
      expectProblem(await new Client(gw.url).get('/v1/content', { 'x-content-api-key': 'nope' }), 401, 'UNAUTHENTICATED');
    });
  });

  describe('when the gateway serves the path itself, then it still answers', () => {
    it('GET /api/api-keys: 200', async () => {
      const res = await key.get('/api/api-keys');
      expect(res.status).to.equal(200);
      expect(res.body.keys).to.have.length(1);
    });
    it('GET /api/auth/get-session: 200', async () => {
      expect((await session.get('/api/auth/get-session')).status).to.equal(200);
    });
  });
});
