import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { expectNotForwarded, expectProblem, startMatrixGateway, traced, type MatrixGateway } from './support.ts';

// /v1/content is guarded by one shared secret in X-Content-Api-Key, not by
// users or keys. The upstream sees no identity and never the secret.

describe('/v1/content: the shared content key', () => {
  let m: MatrixGateway;
  before(async () => {
    m = await startMatrixGateway('A', { env: { CONTENT_API_KEY: 's3cret' } });
  });
  after(async () => m?.stop());

  const anonymous = () => new Client(m.gw.url);

  describe('when X-Content-Api-Key equals CONTENT_API_KEY, then the request is forwarded as nobody', () => {
    const cases: { path: string; upstreamPath: string; query: Record<string, string> }[] = [
      { path: '/v1/content', upstreamPath: '/v1/content', query: {} },
      { path: '/v1/content/articles/42?lang=en&fields=title', upstreamPath: '/v1/content/articles/42', query: { lang: 'en', fields: 'title' } },
      { path: '/v1/content/articles/./42/', upstreamPath: '/v1/content/articles/42', query: {} },
    ];
    for (const c of cases) {
      it(`GET ${c.path}`, async () => {
        const { res, upstream } = await traced(m.echo, anonymous(), 'GET', c.path, undefined, { 'x-content-api-key': 's3cret' });
        expect(res.status, res.text).to.equal(200);
        expect(upstream).to.have.length(1);
        const got = upstream[0]!;
        expect(got).to.include({ method: 'GET', path: c.upstreamPath });
        expect(got.query).to.deep.equal(c.query);
        expect(got.headers).to.not.have.property('x-content-api-key');
        expect(Object.keys(got.headers).filter((h) => h.startsWith('x-keygate-'))).to.deep.equal([]);
      });
    }

    it('an API key sent along is neither used nor forwarded, and no identity is added', async () => {
      const { res, upstream } = await traced(m.echo, m.parties['ai+mcp'].client(), 'GET', '/v1/content', undefined, { 'x-content-api-key': 's3cret' });
      expect(res.status, res.text).to.equal(200);
      expect(upstream).to.have.length(1);
      expect(upstream[0]!.headers).to.not.have.property('x-api-key');
      expect(Object.keys(upstream[0]!.headers).filter((h) => h.startsWith('x-keygate-'))).to.deep.equal([]);
    });

    it('identity headers the caller made up, in any spelling, do not reach the upstream', async () => {
      const { res, upstream } = await traced(m.echo, anonymous(), 'GET', '/v1/content', undefined, {
        'x-content-api-key': 's3cret',
        'x-keygate-user-id': '00000000-0000-4000-8000-000000000001',
        'x-keygate-subject': 'session',
        x_keygate_user_id: '00000000-0000-4000-8000-000000000001',
      });
      expect(res.status, res.text).to.equal(200);
      expect(upstream).to.have.length(1);
      expect(Object.keys(upstream[0]!.headers).filter((h) => /^x[-_]keygate[-_]/.test(h))).to.deep.equal([]);
    });
  });

  describe('when the content key is wrong or missing, then 401 UNAUTHENTICATED and nothing is forwarded', () => {
    const wrong: [string, Record<string, string>][] = [
      ['no X-Content-Api-Key', {}],
      ['an empty one', { 'x-content-api-key': '' }],
      ['a wrong one of the same length', { 'x-content-api-key': 's3creT' }],
      ['the right one in other letter case', { 'x-content-api-key': 'S3CRET' }],
      ['a longer one that starts with the right one', { 'x-content-api-key': 's3cret-and-more' }],
      ['a prefix of the right one', { 'x-content-api-key': 's3cr' }],
      ['the right one in another header', { 'x-api-key': 's3cret' }],
    ];
    for (const [what, headers] of wrong) {
      it(what, async () => {
        const { res, upstream } = await traced(m.echo, anonymous(), 'GET', '/v1/content/articles/42', undefined, headers);
        expectProblem(res, 401, 'UNAUTHENTICATED');
        expectNotForwarded(upstream);
      });
    }
  });

  describe('when only an API key is presented, then it never opens the content route', () => {
    for (const who of ['key', 'ai', 'mcp', 'ai+mcp'] as const) {
      it(`${who === 'key' ? 'an unscoped' : `an ${who}`} key: 401 UNAUTHENTICATED`, async () => {
        const { res, upstream } = await traced(m.echo, m.parties[who].client(), 'GET', '/v1/content');
        expectProblem(res, 401, 'UNAUTHENTICATED');
        expectNotForwarded(upstream);
      });
    }

    it('a signed-in session: 401 UNAUTHENTICATED', async () => {
      const { res, upstream } = await traced(m.echo, m.parties.session.client(), 'GET', '/v1/content');
      expectProblem(res, 401, 'UNAUTHENTICATED');
      expectNotForwarded(upstream);
    });
  });

  describe('when the server has no CONTENT_API_KEY, then no header opens the route', () => {
    let bare: TestGateway;
    before(async () => {
      bare = await startTestGateway({ config: { upstream: { url: m.echo.url } } });
    });
    after(async () => bare?.stop());

    for (const [what, headers] of [['no header', {}], ['an empty X-Content-Api-Key', { 'x-content-api-key': '' }], ['any X-Content-Api-Key', { 'x-content-api-key': 's3cret' }]] as [string, Record<string, string>][]) {
      it(what, async () => {
        const { res, upstream } = await traced(m.echo, new Client(bare.url), 'GET', '/v1/content', undefined, headers);
        expectProblem(res, 401, 'UNAUTHENTICATED');
        expectNotForwarded(upstream);
      });
    }
  });
});
