import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { expectNoSecrets } from '../../support/secrets.ts';

describe('accounts: the auth layer', () => {
  let gw: TestGateway;
  useGateway({}, (g) => (gw = g));

  describe('sign-up', () => {
    it('creates the user, answers 201 with the user and sets an HttpOnly SameSite=Lax session cookie', async () => {
      const c = new Client(gw.url);
      const res = await c.request('POST', '/api/auth/sign-up/email', { email: 'Ann@Example.test', password: 'long enough', name: 'Ann' });
      expect(res.status).to.equal(201);
      expect(res.body.user).to.include({ email: 'ann@example.test', name: 'Ann', role: 'user' });
      expect(res.body.user).to.not.have.property('passwordHash');
      const setCookie = res.headers['set-cookie']!;
      expect(setCookie).to.match(/keygate_session=/).and.match(/httponly/i).and.match(/samesite=lax/i);
      expect(setCookie).to.not.match(/secure/i);
      const session = await c.get('/api/auth/get-session');
      expect(session.status).to.equal(200);
      expect(session.body.session.kind).to.equal('session');
      expect(session.body.user.email).to.equal('ann@example.test');
    });

    it('answers 409 EMAIL_TAKEN for an e-mail already used, in any letter case', async () => {
      const res = await new Client(gw.url).post('/api/auth/sign-up/email', { email: 'ANN@example.test', password: 'long enough', name: 'Other' });
      expect(res.status).to.equal(409);
      expect(res.body.code).to.equal('EMAIL_TAKEN');
    });

    const bad: [string, unknown, string][] = [
      ['a missing password', { email: 'x@example.test', name: 'X' }, 'password'],
      ['a short password', { email: 'x@example.test', name: 'X', password: 'short' }, 'password'],
      ['a password over 128 characters', { email: 'x@example.test', name: 'X', password: 'p'.repeat(129) }, 'password'],
      ['a wrong type', { email: 'x@example.test', name: 42, password: 'long enough' }, 'name'],
      ['a malformed e-mail', { email: 'not-an-email', name: 'X', password: 'long enough' }, 'email'],
      ['an unknown field', { email: 'x@example.test', name: 'X', password: 'long enough', role: 'admin' }, '(body)'],
    ];
    for (const [what, body, path] of bad) {
      it(`answers 400 VALIDATION_FAILED naming the field for ${what}, and creates nothing`, async () => {
        const users = async () => (await gw.pool.query('SELECT count(*)::int n FROM users')).rows[0].n as number;
        const before = await users();
        const res = await new Client(gw.url).post('/api/auth/sign-up/email', body);
        expect(res.status).to.equal(400);
        expect(res.headers['content-type']).to.match(/application\/problem\+json/);
        expect(res.body).to.include({ status: 400, code: 'VALIDATION_FAILED' });
        expect(res.body.errors.map((e: { path: string }) => e.path)).to.include(path);
        expect(await users()).to.equal(before);
      });
    }

    it('answers 400 for malformed JSON', async () => {
      const res = await new Client(gw.url).request('POST', '/api/auth/sign-up/email', '{"email": ');
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
      expect(res.body.detail).to.match(/not valid JSON/);
    });

    it('answers 413 PAYLOAD_TOO_LARGE for a body over 1 MiB', async () => {
      const res = await new Client(gw.url).post('/api/auth/sign-up/email', { email: 'big@example.test', password: 'long enough', name: 'x'.repeat(1024 * 1024) });
      expect(res.status).to.equal(413);
      expect(res.body.code).to.equal('PAYLOAD_TOO_LARGE');
    });
  });

  describe('sign-in', () => {
    it('answers 200 with the user and a new session for the right password', async () => {
      const { user, password } = await signUp(gw.url);
      const c = new Client(gw.url);
      const res = await c.post('/api/auth/sign-in/email', { email: user.email, password });
      expect(res.status).to.equal(200);
      expect(res.body.user.id).to.equal(user.id);
      expect((await c.get('/api/auth/get-session')).status).to.equal(200);
    });

    it('answers the same 401 INVALID_CREDENTIALS for a wrong password and for an unknown e-mail', async () => {
      const { user } = await signUp(gw.url);
      const wrong = await new Client(gw.url).post('/api/auth/sign-in/email', { email: user.email, password: 'not the password' });
      const unknown = await new Client(gw.url).post('/api/auth/sign-in/email', { email: 'nobody@example.test', password: 'not the password' });
      expect(wrong.status).to.equal(401);
      expect(unknown.status).to.equal(401);
      expect(wrong.body.code).to.equal('INVALID_CREDENTIALS');
      expect({ ...wrong.body, instance: null }).to.deep.equal({ ...unknown.body, instance: null });
    });

    it('answers 403 USER_BANNED to a banned user with the right password', async () => {
      const { user, password } = await signUp(gw.url);
      await gw.pool.query('UPDATE users SET banned = true WHERE id = $1', [user.id]);
      const res = await new Client(gw.url).post('/api/auth/sign-in/email', { email: user.email, password });
      expect(res.status).to.equal(403);
      expect(res.body.code).to.equal('USER_BANNED');
    });
  });

  describe('sessions', () => {
    it('get-session answers 401 UNAUTHENTICATED to an anonymous caller', async () => {
      const res = await new Client(gw.url).get('/api/auth/get-session');
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('UNAUTHENTICATED');
    });

    it('sign-out ends the session and clears the cookie', async () => {
      const { client } = await signUp(gw.url);
      const token = client.cookies.get('keygate_session')!;
      const res = await client.post('/api/auth/sign-out');
      expect(res.status).to.equal(204);
      expect(client.cookies.has('keygate_session')).to.equal(false);
      const replay = new Client(gw.url);
      replay.cookies.set('keygate_session', token);
      expect((await replay.get('/api/auth/get-session')).status).to.equal(401);
    });

    it('an expired session is no session', async () => {
      const { client, user } = await signUp(gw.url);
      // Expired by the gateway's clock, the one it judges sessions with.
      await gw.pool.query('UPDATE sessions SET expires_at = $2 WHERE user_id = $1', [user.id, new Date(gw.clock.now().getTime() - 1000)]);
      expect((await client.get('/api/auth/get-session')).status).to.equal(401);
    });

    it('list-sessions shows the caller\'s sessions and revoke-session ends one of them', async () => {
      const { client, user, password } = await signUp(gw.url);
      const other = new Client(gw.url);
      await other.post('/api/auth/sign-in/email', { email: user.email, password });
      const list = await client.get('/api/auth/list-sessions');
      expect(list.status).to.equal(200);
      expect(list.body.sessions).to.have.length(2);
      const otherSession = list.body.sessions.find((s: { current: boolean }) => !s.current);
      expect((await client.post('/api/auth/revoke-session', { sessionId: otherSession.id })).status).to.equal(204);
      expect((await other.get('/api/auth/get-session')).status).to.equal(401);
      expect((await client.get('/api/auth/get-session')).status).to.equal(200);
      expect((await client.post('/api/auth/revoke-session', { sessionId: otherSession.id })).status).to.equal(404);
    });

    it('a banned user\'s sessions stop working at once', async () => {
      const { client, user } = await signUp(gw.url);
      await gw.pool.query('UPDATE users SET banned = true WHERE id = $1', [user.id]);
      expect((await client.get('/api/auth/get-session')).status).to.equal(401);
    });
  });

  describe('change-password', () => {
    it('needs the current password, then signs out the other sessions', async () => {
      const { client, user, password } = await signUp(gw.url);
      const other = new Client(gw.url);
      await other.post('/api/auth/sign-in/email', { email: user.email, password });
      const wrong = await client.post('/api/auth/change-password', { currentPassword: 'nope nope', newPassword: 'a new password' });
      expect(wrong.status).to.equal(401);
      const ok = await client.post('/api/auth/change-password', { currentPassword: password, newPassword: 'a new password' });
      expect(ok.status).to.equal(204);
      expect((await other.get('/api/auth/get-session')).status).to.equal(401);
      expect((await client.get('/api/auth/get-session')).status).to.equal(200);
      expect((await new Client(gw.url).post('/api/auth/sign-in/email', { email: user.email, password: 'a new password' })).status).to.equal(200);
    });
  });

  describe('delete-user', () => {
    it('deletes the account after checking the password', async () => {
      const { client, user, password } = await signUp(gw.url);
      expect((await client.post('/api/auth/delete-user', { password: 'wrong wrong' })).status).to.equal(401);
      expect((await client.post('/api/auth/delete-user', { password })).status).to.equal(204);
      const { rows } = await gw.pool.query('SELECT count(*)::int n FROM users WHERE id = $1', [user.id]);
      expect(rows[0].n).to.equal(0);
      expect((await client.get('/api/auth/get-session')).status).to.equal(401);
    });
  });

  describe('organizations', () => {
    it('create makes the caller owner and the active organization; list and get-active-member show it', async () => {
      const { client, user } = await signUp(gw.url);
      const created = await client.post('/api/auth/organization/create', { name: 'Acme', slug: `acme-${Date.now()}` });
      expect(created.status).to.equal(201);
      const orgId = created.body.organization.id;
      const session = await client.get('/api/auth/get-session');
      expect(session.body.session.activeOrganizationId).to.equal(orgId);
      const list = await client.get('/api/auth/organization/list');
      expect(list.body.organizations).to.have.length(1);
      expect(list.body.organizations[0]).to.include({ id: orgId, role: 'owner' });
      const member = await client.get('/api/auth/organization/get-active-member');
      expect(member.status).to.equal(200);
      expect(member.body.member).to.include({ organizationId: orgId, userId: user.id, role: 'owner' });
    });

    it('set-active refuses an organization the caller is not a member of, and clears with null', async () => {
      const a = await signUp(gw.url);
      const b = await signUp(gw.url);
      const created = await a.client.post('/api/auth/organization/create', { name: 'A', slug: `a-${Date.now()}` });
      const refused = await b.client.post('/api/auth/organization/set-active', { organizationId: created.body.organization.id });
      expect(refused.status).to.equal(403);
      expect((await a.client.post('/api/auth/organization/set-active', { organizationId: null })).status).to.equal(200);
      expect((await a.client.get('/api/auth/organization/get-active-member')).status).to.equal(404);
    });

    it('a taken slug is a validation error', async () => {
      const { client } = await signUp(gw.url);
      const slug = `dup-${Date.now()}`;
      await client.post('/api/auth/organization/create', { name: 'One', slug });
      const res = await client.post('/api/auth/organization/create', { name: 'Two', slug });
      expect(res.status).to.equal(400);
      expect(res.body.errors[0].path).to.equal('slug');
    });
  });

  describe('secrets at rest', () => {
    it('the database never holds a password or a session token in plain text', async () => {
      const password = 'plain-text-canary-123';
      const { client } = await signUp(gw.url, { password });
      const token = decodeURIComponent(client.cookies.get('keygate_session')!);
      await expectNoSecrets(gw, [password, token, Buffer.from(token).toString('hex')]);
    });
  });
});
