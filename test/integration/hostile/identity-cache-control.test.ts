import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

// A shared cache (a corporate proxy, a CDN set up for the static pages) or the browser's history
// would keep what these answers say about a person: the session and its e-mail, key lists, usage,
// every user's e-mail in the admin lists, the audit log with addresses. Each family is asked for
// an answer and for a refusal, since a 401 or a 404 also tells who asked what.

describe('hostile: caches keeping answers that carry identity', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let user: Client;
  let admin: Client;
  let keyId: string;
  before(async () => {
    gw = await startTestGateway({ config: { mcpServer: { enabled: true } } });
    user = (await signUp(gw.url)).client;
    const a = await signUp(gw.url, { name: 'Admin' });
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [a.user.id]);
    admin = a.client;
    keyId = (await user.post('/api/api-keys', { name: 'k' })).body.id as string;
  });
  after(async () => gw?.stop());

  const anonymous = () => new Client(gw.url);
  const cases: [string, () => Client, string, string?][] = [
    ['GET', () => user, '/api/auth/get-session'],
    ['GET', () => user, '/api/auth/list-sessions'],
    ['GET', () => user, '/api/auth/organization/list'],
    ['GET', anonymous, '/api/auth/get-session'],
    ['POST', anonymous, '/api/auth/sign-in/email', '{"email":"nobody@example.test","password":"wrong password"}'],
    ['GET', () => user, '/api/api-keys'],
    ['GET', () => user, '/api/auth/api-key/list'],
    ['GET', anonymous, '/api/api-keys'],
    ['GET', () => admin, '/api/admin/api-keys'],
    ['GET', () => admin, '/api/admin/audit-log'],
    ['GET', () => user, '/api/admin/audit-log'],
    ['GET', () => user, '/api/oauth/grants'],
    ['GET', anonymous, '/api/oauth/grants'],
  ];
  for (const [method, who, path, body] of cases) {
    it(`${method} ${path} (${who === anonymous ? 'anonymous' : 'signed in'}) sends Cache-Control: no-store, whatever its status`, async () => {
      const res = await who().request(method, path, body);
      expect(res.headers['cache-control'], `${res.status} ${res.text}`).to.equal('no-store');
    });
  }

  describe('when usage is read, by its owner, by an admin and by someone else', () => {
    it('then every answer, the 404 included, sends Cache-Control: no-store', async () => {
      for (const [who, path, status] of [[user, `/api/api-keys/${keyId}/usage`, 200], [admin, `/api/admin/api-keys/${keyId}/usage`, 200], [admin, `/api/api-keys/${keyId}/usage`, 404]] as const) {
        const res = await who.get(path);
        expect(res.status, `${path} ${res.text}`).to.equal(status);
        expect(res.headers['cache-control'], path).to.equal('no-store');
      }
    });
  });

  describe('when a path of these families is spelled in another letter case', () => {
    it('then it is no-store too, as the policy decides it alike', async () => {
      const res = await user.get('/api/AUTH/get-session');
      expect(res.headers['cache-control'], res.text).to.equal('no-store');
    });
  });

  describe('when an answer carries nothing about anyone', () => {
    it('then it is not marked no-store (the health check stays cacheable as before)', async () => {
      const res = await anonymous().get('/healthz');
      expect(res.headers['cache-control']).to.equal(undefined);
    });
  });
});
