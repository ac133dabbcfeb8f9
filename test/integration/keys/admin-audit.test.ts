import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { expectNoSecrets } from '../../support/secrets.ts';

async function signUpAdmin(gw: TestGateway) {
  const admin = await signUp(gw.url, { name: 'Admin' });
  await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
  return admin;
}

describe('API keys: audit, admin and secrets', () => {
  let gw: TestGateway;
  useGateway({ config: { mcpServer: { enabled: true } } }, (g) => (gw = g));

  describe('audit entries', () => {
    it('a create writes API_KEY_CREATED with actor, owner, key id, time, IP and user agent', async () => {
      const { client, user } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' }, { 'user-agent': 'audit-test/1.0' })).body;
      const { rows } = await gw.pool.query('SELECT * FROM audit_log WHERE key_id = $1', [key.id]);
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ type: 'API_KEY_CREATED', actor_user_id: user.id, owner_user_id: user.id, user_agent: 'audit-test/1.0' });
      expect(rows[0].ip).to.match(/127\.0\.0\.1/);
      expect(rows[0].at).to.be.an.instanceOf(Date);
    });

    it("an owner's revocation writes API_KEY_REVOKED naming the owner as actor; an admin's names the admin", async () => {
      const owner = await signUp(gw.url);
      const admin = await signUpAdmin(gw);
      const k1 = (await owner.client.post('/api/api-keys', { name: 'k1' })).body;
      const k2 = (await owner.client.post('/api/api-keys', { name: 'k2' })).body;
      await owner.client.delete(`/api/api-keys/${k1.id}`);
      expect((await admin.client.delete(`/api/admin/api-keys/${k2.id}`)).status).to.equal(204);
      const { rows } = await gw.pool.query("SELECT key_id, actor_user_id, owner_user_id FROM audit_log WHERE type = 'API_KEY_REVOKED' AND key_id = ANY($1)", [[k1.id, k2.id]]);
      const byKey = Object.fromEntries(rows.map((r) => [r.key_id, r]));
      expect(byKey[k1.id]).to.include({ actor_user_id: owner.user.id, owner_user_id: owner.user.id });
      expect(byKey[k2.id]).to.include({ actor_user_id: admin.user.id, owner_user_id: owner.user.id });
      expect((await new Client(gw.url).withKey(k2.key).get('/api/auth/get-session')).status).to.equal(401);
    });

    it('GET /api/admin/audit-log pages through entries newest first with a cursor', async () => {
      const admin = await signUpAdmin(gw);
      const { client } = await signUp(gw.url);
      for (let i = 0; i < 3; i++) await client.post('/api/api-keys', { name: `a${i}` });
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { status: number; body: { entries: { id: string; type: string; at: string }[]; nextCursor: string | null } } = await admin.client.get(`/api/admin/audit-log?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).to.equal(200);
        expect(page.body.entries.length).to.be.at.most(2);
        seen.push(...page.body.entries.map((e) => e.id));
        cursor = page.body.nextCursor;
      } while (cursor);
      const { rows } = await gw.pool.query('SELECT id::text FROM audit_log ORDER BY id DESC');
      expect(seen).to.deep.equal(rows.map((r) => r.id));
      const bad = await admin.client.get('/api/admin/audit-log?cursor=abc');
      expect(bad.status).to.equal(400);
      expect(bad.body.code).to.equal('VALIDATION_FAILED');
      expect((await admin.client.get('/api/admin/audit-log?limit=0')).status).to.equal(400);
      expect((await admin.client.get('/api/admin/audit-log?limit=101')).status).to.equal(400);
    });
  });

  describe('admin routes', () => {
    it('refuse a signed-in non-admin with 403 and a key with 403', async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      expect((await client.get('/api/admin/api-keys')).status).to.equal(403);
      expect((await new Client(gw.url).withKey(key.key).get('/api/admin/api-keys')).status).to.equal(403);
      const admin = await signUpAdmin(gw);
      const adminKey = (await admin.client.post('/api/api-keys', { name: 'admin key' })).body;
      expect((await new Client(gw.url).withKey(adminKey.key).get('/api/admin/api-keys')).status).to.equal(403);
    });

    it("list every user's keys with the owner's name and e-mail, and no secret", async () => {
      const admin = await signUpAdmin(gw);
      const owner = await signUp(gw.url, { name: 'Olga Owner' });
      const key = (await owner.client.post('/api/api-keys', { name: 'owned', mcp: true })).body;
      const res = await admin.client.get('/api/admin/api-keys?limit=100');
      const found = res.body.keys.find((k: { id: string }) => k.id === key.id);
      expect(found.owner).to.deep.equal({ id: owner.user.id, name: 'Olga Owner', email: owner.user.email });
      expect(found.mcp).to.equal(true);
      expect(res.text).to.not.include(key.key);
    });

    it('pagination visits every key exactly once while keys are being created', async () => {
      const admin = await signUpAdmin(gw);
      const users = await Promise.all(Array.from({ length: 3 }, () => signUp(gw.url)));
      for (const u of users) for (let i = 0; i < 8; i++) await u.client.post('/api/api-keys', { name: `pre${i}` });
      const before = new Set((await gw.pool.query('SELECT id FROM apikeys WHERE revoked_at IS NULL')).rows.map((r) => r.id as string));
      let inserting = true;
      const writer = (async () => {
        let i = 0;
        while (inserting) await users[i++ % 3]!.client.post('/api/api-keys', { name: `during${i}` }).catch(() => {});
      })();
      const seen: string[] = [];
      let cursor: string | null = null;
      try {
        do {
          const page: { status: number; body: { keys: { id: string }[]; nextCursor: string | null } } = await admin.client.get(`/api/admin/api-keys?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          expect(page.status).to.equal(200);
          seen.push(...page.body.keys.map((k) => k.id));
          cursor = page.body.nextCursor;
        } while (cursor);
      } finally {
        inserting = false;
        await writer;
      }
      expect(new Set(seen).size).to.equal(seen.length);
      for (const id of before) expect(seen).to.include(id);
    });

    it('an unreadable cursor is 400 VALIDATION_FAILED', async () => {
      const admin = await signUpAdmin(gw);
      for (const cursor of ['nope', Buffer.from('2026-01-01|not-a-uuid').toString('base64url')]) {
        const res = await admin.client.get(`/api/admin/api-keys?cursor=${cursor}`);
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
      }
    });

    it("ban stops the user's sessions and keys at once; unban lets them sign in again", async () => {
      const admin = await signUpAdmin(gw);
      const target = await signUp(gw.url);
      const key = (await target.client.post('/api/api-keys', { name: 'k' })).body;
      expect((await admin.client.post(`/api/admin/users/${target.user.id}/ban`)).status).to.equal(204);
      expect((await target.client.get('/api/auth/get-session')).status).to.equal(401);
      expect((await new Client(gw.url).withKey(key.key).get('/api/auth/get-session')).status).to.equal(401);
      expect((await admin.client.post(`/api/admin/users/${target.user.id}/unban`)).status).to.equal(204);
      expect((await new Client(gw.url).withKey(key.key).get('/api/auth/get-session')).status).to.equal(200);
      expect((await admin.client.post('/api/admin/users/00000000-0000-4000-8000-000000000000/ban')).status).to.equal(404);
    });
  });

  describe('the plaintext key exists in one response and nowhere else', () => {
    it('not in the database row, the audit entries or the captured logs of a create, use and revoke', async () => {
      const { client } = await signUp(gw.url);
      const created = (await client.post('/api/api-keys', { name: 'secret' })).body;
      const plaintext: string = created.key;
      await new Client(gw.url).withKey(plaintext).get('/api/auth/get-session');
      await new Client(gw.url).withKey(plaintext).post('/api/api-keys', { name: 'refused' });
      await client.delete(`/api/api-keys/${created.id}`);
      await expectNoSecrets(gw, [plaintext]);
    });
  });
});
