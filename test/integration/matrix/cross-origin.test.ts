import { expect } from 'chai';
import { expectForwarded, expectNotForwarded, expectProblem, startMatrixGateway, traced, type MatrixGateway } from './support.ts';

// A cookie rides along on cross-site requests, so a cookie-authenticated write whose
// Origin names another origin, or whose Sec-Fetch-Site is cross-site, is refused. Requests without
// Origin are accepted; reads are never refused for their origin; keys carry no ambient credential.

const EVIL = 'https://evil.example';

describe('cross-origin cookie writes', () => {
  for (const variant of ['A', 'B'] as const) {
    describe(`Variant ${variant}`, () => {
      let m: MatrixGateway;
      let own: string;
      before(async () => {
        m = await startMatrixGateway(variant);
        own = new URL(m.gw.url).origin;
      });
      after(async () => m?.stop());

      const keyCount = async () => Number((await m.gw.pool.query('SELECT count(*) n FROM apikeys WHERE user_id = $1 AND revoked_at IS NULL', [m.parties.session.identity.userId])).rows[0].n);

      describe('when a session writes with a foreign Origin or Sec-Fetch-Site: cross-site, then 403 FORBIDDEN and nothing happens', () => {
        const refused: [string, Record<string, string>][] = [
          [`Origin: ${EVIL}`, { origin: EVIL }],
          ['Origin: null (a sandboxed or opaque origin)', { origin: 'null' }],
          ['Origin of the same host on another port', { origin: 'http://127.0.0.1:1' }],
          ['Origin of the same host over https', { origin: 'https://127.0.0.1' }],
          ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
          ['Sec-Fetch-Site: cross-site with the own Origin', { 'sec-fetch-site': 'cross-site', origin: 'OWN' }],
        ];
        for (const [what, headers] of refused) {
          it(`POST /api/api-keys with ${what}`, async () => {
            const before = await keyCount();
            const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v === 'OWN' ? own : v]));
            const res = await m.parties.session.client().post('/api/api-keys', { name: 'csrf' }, h);
            expectProblem(res, 403, 'FORBIDDEN');
            expect(await keyCount()).to.equal(before);
          });
        }

        for (const [method, path] of [['DELETE', '/api/api-keys/00000000-0000-4000-8000-000000000000'], ['POST', '/api/projects'], ['PUT', '/api/billing/auto-topup'], ['POST', '/api/auth/change-password']]) {
          it(`${method} ${path} with Origin: ${EVIL} (never forwarded)`, async () => {
            const { res, upstream } = await traced(m.echo, m.parties.session.client(), method!, path!, method === 'DELETE' ? undefined : {}, { origin: EVIL });
            expectProblem(res, 403, 'FORBIDDEN');
            expectNotForwarded(upstream);
          });
        }

        it(`an admin session's DELETE /api/admin/api-keys/:id with Origin: ${EVIL}`, async () => {
          const { res } = await traced(m.echo, m.parties.admin.client(), 'DELETE', `/api/admin/api-keys/${m.parties.key.identity.keyId}`, undefined, { origin: EVIL });
          expectProblem(res, 403, 'FORBIDDEN');
          expect((await m.parties.key.client().get('/api/api-keys')).status, 'the key must still work').to.equal(200);
        });
      });

      describe('when a session writes from its own origin or without Origin, then the write goes through', () => {
        for (const [what, headers] of [['no Origin', {}], ['the gateway\'s own Origin', { origin: 'OWN' }], ['Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin', origin: 'OWN' }], ['Sec-Fetch-Site: none (typed or bookmarked)', { 'sec-fetch-site': 'none' }]] as [string, Record<string, string>][]) {
          it(`POST /api/api-keys with ${what}: 201`, async () => {
            const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v === 'OWN' ? own : v]));
            const res = await m.parties.session.client().post('/api/api-keys', { name: 'same site' }, h);
            expect(res.status, res.text).to.equal(201);
            expect(res.body.key).to.be.a('string');
          });
        }

        it('POST /api/projects with the own Origin is forwarded', async () => {
          const party = m.parties.session;
          const { res, upstream } = await traced(m.echo, party.client(), 'POST', '/api/projects', { name: 'p' }, { origin: own });
          expectForwarded(res, upstream, { method: 'POST', path: '/api/projects', body: { name: 'p' } }, party.identity);
        });
      });

      describe('when a session reads with a foreign Origin, then the read is not refused for it', () => {
        it(`GET /api/api-keys with Origin: ${EVIL} and Sec-Fetch-Site: cross-site`, async () => {
          const res = await m.parties.session.client().get('/api/api-keys', { origin: EVIL, 'sec-fetch-site': 'cross-site' });
          expect(res.status, res.text).to.equal(200);
        });
      });

      describe('when a key writes with a foreign Origin, then the origin does not matter', () => {
        it(`POST /api/projects with Origin: ${EVIL} is forwarded`, async () => {
          const party = m.parties.key;
          const { res, upstream } = await traced(m.echo, party.client(), 'POST', '/api/projects', { name: 'p' }, { origin: EVIL, 'sec-fetch-site': 'cross-site' });
          expectForwarded(res, upstream, { method: 'POST', path: '/api/projects', body: { name: 'p' } }, party.identity);
        });

        it(`POST /api/api-keys with Origin: ${EVIL} gets what the matrix says (Variant ${variant}: ${variant === 'A' ? '403, keys never mint keys' : '201'})`, async () => {
          const res = await m.parties.key.client().post('/api/api-keys', { name: 'by key' }, { origin: EVIL });
          if (variant === 'A') {
            expectProblem(res, 403, 'FORBIDDEN');
            expect(res.body.detail).to.match(/session/i);
          } else {
            expect(res.status, res.text).to.equal(201);
          }
        });
      });
    });
  }
});
