import { expect } from 'chai';
import { Client } from '../../support/http.ts';
import { describeCaller, expectForwarded, startMatrixGateway, traced, type CallerName, type MatrixGateway } from './support.ts';

// The upstream learns who is calling from the gateway's x-keygate-* headers alone.
// Incoming x-keygate-* headers are removed first; the key and the session cookie never leave.

const spoofed = {
  'x-keygate-user-id': '00000000-0000-4000-8000-000000000001',
  'X-Keygate-Subject': 'session',
  'X-KEYGATE-KEY-ID': 'someone-elses-key',
  'x-keygate-permissions': 'ai,mcp',
  'x-keygate-role': 'admin',
};

// Rack, PHP, WSGI and nginx's CGI variables fold "_" and "-" into one name, so an upstream on one
// of them reads x_keygate_user_id as x-keygate-user-id.
const underscored = {
  x_keygate_user_id: '00000000-0000-4000-8000-000000000001',
  X_Keygate_Subject: 'session',
  x_keygate_permissions: 'ai,mcp',
};

describe('forwarded headers: the upstream hears who is calling from the gateway only', () => {
  let m: MatrixGateway;
  before(async () => {
    m = await startMatrixGateway('A');
  });
  after(async () => m?.stop());

  describe('when a caller sends x-keygate-* headers of its own, then the upstream gets the gateway\'s values and none of the caller\'s', () => {
    for (const who of ['session', 'admin', 'key', 'ai+mcp'] as CallerName[]) {
      it(`${describeCaller[who]}`, async () => {
        const party = m.parties[who];
        const { res, upstream } = await traced(m.echo, party.client(), 'POST', '/api/projects?x=1', { name: 'p' }, spoofed);
        expectForwarded(res, upstream, { method: 'POST', path: '/api/projects', query: { x: '1' }, body: { name: 'p' } }, party.identity);
        expect(Object.keys(upstream[0]!.headers).filter((h) => h.startsWith('x-keygate-')).sort()).to.deep.equal(
          party.identity.subject === 'key' ? ['x-keygate-key-id', 'x-keygate-permissions', 'x-keygate-subject', 'x-keygate-user-id'] : ['x-keygate-subject', 'x-keygate-user-id'],
        );
      });
    }
  });

  describe('when a caller spells them with underscores, then they do not reach the upstream either', () => {
    for (const who of ['session', 'key'] as CallerName[]) {
      it(`${describeCaller[who]}`, async () => {
        const party = m.parties[who];
        const { res, upstream } = await traced(m.echo, party.client(), 'GET', '/api/projects', undefined, underscored);
        expectForwarded(res, upstream, { method: 'GET', path: '/api/projects' }, party.identity);
        const names = Object.keys(upstream[0]!.headers).filter((h) => /^x[-_]keygate[-_]/i.test(h));
        expect(names.filter((h) => h.includes('_')), 'identity headers spelled with "_" reached the upstream').to.deep.equal([]);
      });
    }
  });

  describe('when a caller sends x-forwarded-* headers, then the upstream gets the gateway\'s', () => {
    it('a signed-in session', async () => {
      const party = m.parties.session;
      const { res, upstream } = await traced(m.echo, party.client(), 'GET', '/api/projects', undefined, { 'x-forwarded-for': '6.6.6.6', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
      expectForwarded(res, upstream, { method: 'GET', path: '/api/projects' }, party.identity);
      const h = upstream[0]!.headers;
      expect(h['x-forwarded-for']).to.equal('127.0.0.1');
      expect(h['x-forwarded-host']).to.equal(new URL(m.gw.url).host);
      expect(h['x-forwarded-proto']).to.equal('http');
    });
  });

  describe('when a key calls, then its x-api-key never reaches the upstream', () => {
    for (const who of ['key', 'ai', 'mcp', 'ai+mcp'] as CallerName[]) {
      it(`${describeCaller[who]}`, async () => {
        const party = m.parties[who];
        const { res, upstream } = await traced(m.echo, party.client(), 'GET', '/api/projects');
        expectForwarded(res, upstream, { method: 'GET', path: '/api/projects' }, party.identity);
        expect(upstream[0]!.headers).to.not.have.property('x-api-key');
        expect(JSON.stringify(upstream[0]!.headers)).to.not.match(/key_[A-Za-z0-9]{20,}/);
      });
    }
  });

  describe('when the request carries cookies, then the session cookie is removed and the others are kept', () => {
    const tokenOf = (c: Client) => c.cookies.get('keygate_session')!;

    it('a signed-in session: only its other cookies reach the upstream', async () => {
      const party = m.parties.session;
      const token = tokenOf(party.client());
      const client = new Client(m.gw.url);
      const { res, upstream } = await traced(m.echo, client, 'GET', '/api/projects', undefined, { cookie: `theme=dark; keygate_session=${token}; lang=en` });
      expectForwarded(res, upstream, { method: 'GET', path: '/api/projects' }, party.identity);
      expect(upstream[0]!.headers.cookie).to.equal('theme=dark; lang=en');
    });

    it('a signed-in session with no other cookie: no cookie header at all', async () => {
      const party = m.parties.session;
      const { res, upstream } = await traced(m.echo, party.client(), 'GET', '/api/projects');
      expectForwarded(res, upstream, { method: 'GET', path: '/api/projects' }, party.identity);
      expect(upstream[0]!.headers).to.not.have.property('cookie');
    });

    it('a key request that also carries a session cookie: the cookie is ignored for identity and never forwarded', async () => {
      const party = m.parties.key;
      const token = tokenOf(m.parties.admin.client());
      const { res, upstream } = await traced(m.echo, party.client(), 'GET', '/api/projects', undefined, { cookie: `keygate_session=${token}; a=1` });
      expectForwarded(res, upstream, { method: 'GET', path: '/api/projects' }, party.identity);
      expect(upstream[0]!.headers.cookie).to.equal('a=1');
      expect(JSON.stringify(upstream[0]!.headers)).to.not.include(token);
    });
  });
});
