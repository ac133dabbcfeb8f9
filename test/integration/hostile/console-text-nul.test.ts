import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';

// An admin's filter or rollback message holding NUL (or, in JSON, a lone surrogate): PostgreSQL's
// text holds no NUL and its JSON no lone surrogate, so each must be refused as bad input, nothing
// written, not end in a 500 (or, for the export, a stream cut off after its 200).

const html = { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8' };

describe('hostile: NUL in the console’s filters and rollback message', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;

  before(async () => {
    gw = await startTestGateway({});
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
  });
  after(async () => gw?.stop());

  const versions = async () => (await gw.pool.query('SELECT count(*)::int AS n FROM policy_versions')).rows[0].n as number;
  const rollbacks = async () =>
    (await gw.pool.query("SELECT count(*)::int AS n FROM audit_log WHERE type = 'POLICY_ROLLED_BACK'")).rows[0].n as number;

  describe('when an API filter holds NUL', () => {
    for (const path of ['/api/admin/users?q=ada%00', '/api/admin/audit-log?actor=a%00b', '/api/admin/audit-log?owner=a%00b',
      '/api/admin/audit-log/export?format=csv&owner=a%00b', '/api/admin/api-keys?owner=a%00b']) {
      it(`then ${path} is a 400 problem naming the field`, async () => {
        const r = await admin.get(path);
        expect(r.status, r.text).to.equal(400);
        expect(r.headers['content-type']).to.match(/^application\/problem\+json/);
        expect(r.body.code).to.equal('VALIDATION_FAILED');
        expect(r.body.errors.map((e: { message: string }) => e.message)).to.include('must not contain NUL');
      });
    }
  });

  describe('when a rollback message holds NUL or a lone surrogate', () => {
    for (const message of ['why\u0000not', 'half \ud800 a pair']) {
      it(`then ${JSON.stringify(message)} is a 400 problem and no version or audit entry is written`, async () => {
        const [v, a] = [await versions(), await rollbacks()];
        const r = await admin.post('/api/admin/policy/rollback', { version: 0, message });
        expect(r.status, r.text).to.equal(400);
        expect(r.body.code).to.equal('VALIDATION_FAILED');
        expect(r.body.errors[0].path).to.equal('message');
        expect([await versions(), await rollbacks()]).to.deep.equal([v, a]);
      });
    }
  });

  describe('when a console page’s field holds NUL', () => {
    for (const path of ['/admin/users?q=ada%00', '/admin/audit?actor=a%00b', '/admin/audit?owner=a%00b', '/admin/keys?owner=a%00b']) {
      it(`then ${path} is a 400 page in words`, async () => {
        const r = await admin.get(path, html);
        expect(r.status, r.text).to.equal(400);
        expect(r.headers['content-type']).to.match(/^text\/html/);
        expect(r.text).to.contain('<h1>That did not work</h1>');
      });
    }

    it('then the rollback form with a NUL in its message is a 400 page, and nothing is rolled back', async () => {
      const [v, a] = [await versions(), await rollbacks()];
      const r = await admin.request('POST', '/admin/policy/rollback-0', 'message=why%00not', {
        ...html, 'content-type': 'application/x-www-form-urlencoded',
      });
      expect(r.status, r.text).to.equal(400);
      expect(r.headers['content-type']).to.match(/^text\/html/);
      expect([await versions(), await rollbacks()]).to.deep.equal([v, a]);
    });
  });

  describe('when the sign-in API gets an e-mail holding NUL', () => {
    it('then it is a 400 problem naming the field, not a 500', async () => {
      const r = await fetch(`${gw.url}/api/auth/sign-in/email`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a\u0000b@x.test', password: 'whatever it is' }),
      });
      expect(r.status).to.equal(400);
      const body = await r.json() as { code: string; errors: { message: string }[] };
      expect(body.code).to.equal('VALIDATION_FAILED');
      expect(body.errors.map((e) => e.message)).to.include('must not contain control characters');
    });
  });

  describe('when a key name or a user name holds half a surrogate pair', () => {
    it('then it is a 400 problem and nothing is stored (PostgreSQL would have kept U+FFFD instead)', async () => {
      const signUpReply = await fetch(`${gw.url}/api/auth/sign-up/email`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: '{"email":"half@example.test","password":"correct horse battery","name":"\\ud800x"}',
      });
      expect(signUpReply.status).to.equal(400);
      expect((await gw.pool.query("SELECT 1 FROM users WHERE email = 'half@example.test'")).rowCount).to.equal(0);
      const keys = async () => (await gw.pool.query('SELECT count(*)::int AS n FROM apikeys')).rows[0].n as number;
      const before = await keys();
      // JSON.stringify writes the lone half as the escape \ud800.
      const r = await admin.post('/api/api-keys', { name: '\ud800x' });
      expect(r.status, r.text).to.equal(400);
      expect(r.body.errors.map((e: { message: string }) => e.message)).to.include('must be well-formed Unicode');
      expect(await keys()).to.equal(before);
    });
  });
});
