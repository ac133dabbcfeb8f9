import { expect } from 'chai';
import { startTestGateway, useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

const APIKEY_FIELDS = ['id', 'name', 'start', 'prefix', 'permissions', 'ai', 'mcp', 'requestQuota', 'rateLimits', 'state', 'enabled', 'expiresAt', 'createdAt', 'lastUsedAt', 'rotatedFrom', 'rotatedTo', 'expiresSoon'];

describe('API keys: lifecycle over HTTP (Variant A)', () => {
  let gw: TestGateway;
  useGateway({ config: { ai: { enabled: true }, plans: { free: {}, pro: { apiRateLimit: 5000 } } } }, (g) => (gw = g));

  describe('when a signed-in user creates a key', () => {
    it('answers 201 with the ApiKey object and the plaintext once, as `key`', async () => {
      const { client } = await signUp(gw.url);
      const res = await client.post('/api/api-keys', { name: '  ci  ' });
      expect(res.status).to.equal(201);
      expect(res.headers['cache-control']).to.equal('no-store');
      expect(Object.keys(res.body).sort()).to.deep.equal([...APIKEY_FIELDS, 'key'].sort());
      expect(res.body).to.include({ name: 'ci', prefix: 'key_', ai: false, mcp: false, state: 'active', enabled: true, expiresAt: null, lastUsedAt: null });
      expect(res.body.permissions).to.deep.equal({});
      expect(res.body.requestQuota).to.deep.equal({ limit: 100, window: 'day' });
      expect(res.body.key).to.match(/^key_[0-9A-Za-z]{49}$/);
      expect(res.body.start).to.equal(res.body.key.slice(0, 12)).and.have.length(12);
      const list = await client.get('/api/api-keys');
      expect(list.body.keys).to.have.length(1);
      expect(list.body.keys[0]).to.not.have.property('key');
      expect(JSON.stringify(list.body)).to.not.include(res.body.key);
    });

    it('stores { ai: ["access"] } and { mcp: ["access"] } for the scopes asked for', async () => {
      const { client } = await signUp(gw.url);
      const both = await client.post('/api/api-keys', { name: 'agent', ai: true, mcp: true });
      expect(both.body.permissions).to.deep.equal({ ai: ['access'], mcp: ['access'] });
      expect(both.body).to.include({ ai: true, mcp: true });
      const { rows } = await gw.pool.query('SELECT permissions FROM apikeys WHERE id = $1', [both.body.id]);
      expect(rows[0].permissions).to.deep.equal({ ai: ['access'], mcp: ['access'] });
    });

    it("stamps the owner's plan's apiRateLimit, fixed at creation", async () => {
      const { client, user } = await signUp(gw.url);
      await gw.pool.query("UPDATE users SET plan = 'pro' WHERE id = $1", [user.id]);
      const pro = await client.post('/api/api-keys', { name: 'pro' });
      expect(pro.body.requestQuota.limit).to.equal(5000);
      await gw.pool.query("UPDATE users SET plan = 'free' WHERE id = $1", [user.id]);
      const list = await client.get('/api/api-keys');
      expect(list.body.keys.find((k: { id: string }) => k.id === pro.body.id).requestQuota.limit).to.equal(5000);
      expect((await client.post('/api/api-keys', { name: 'free' })).body.requestQuota.limit).to.equal(100);
    });

    const bad: [string, unknown][] = [
      ['an empty name', { name: '   ' }],
      ['a name over 64 characters', { name: 'n'.repeat(65) }],
      ['a missing name', {}],
      ['an unknown field', { name: 'x', admin: true }],
      ['a non-boolean ai', { name: 'x', ai: 'yes' }],
    ];
    for (const [what, body] of bad) {
      it(`refuses ${what} with 400 VALIDATION_FAILED and creates nothing`, async () => {
        const { client, user } = await signUp(gw.url);
        const res = await client.post('/api/api-keys', body);
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
        const { rows } = await gw.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1', [user.id]);
        expect(rows[0].n).to.equal(0);
      });
    }
  });

  describe('when a key is presented in x-api-key', () => {
    it('authenticates as its owner, never as an organization', async () => {
      const { client, user } = await signUp(gw.url);
      await client.post('/api/auth/organization/create', { name: 'Org', slug: `org-${Date.now()}` });
      const { body } = await client.post('/api/api-keys', { name: 'k' });
      const res = await new Client(gw.url).withKey(body.key).get('/api/auth/get-session');
      expect(res.status).to.equal(200);
      expect(res.body.session).to.include({ kind: 'key', userId: user.id, activeOrganizationId: null });
      expect(res.body.user.id).to.equal(user.id);
      expect((await new Client(gw.url).withKey(body.key).get('/api/auth/organization/get-active-member')).status).to.equal(404);
    });

    it('a key request ignores any cookie on it', async () => {
      const a = await signUp(gw.url);
      const b = await signUp(gw.url);
      const { body } = await a.client.post('/api/api-keys', { name: 'k' });
      const res = await b.client.get('/api/auth/get-session', { 'x-api-key': body.key });
      expect(res.body.user.id).to.equal(a.user.id);
    });

    const refused: [string, (gw: TestGateway, c: Client, id: string) => Promise<unknown>][] = [
      ['revoked', (_g, c, id) => c.delete(`/api/api-keys/${id}`)],
      ['disabled', (_g, c, id) => c.post('/api/auth/api-key/update', { keyId: id, enabled: false })],
      // An expiry must be an hour ahead, so the clock moves past it; `after` puts it back.
      ['expired', async (g, c, id) => {
        await c.post('/api/auth/api-key/update', { keyId: id, expiresAt: new Date(g.clock.now().getTime() + 2 * 3600_000).toISOString() });
        g.clock.advance(3 * 3600_000);
        movedBy += 3 * 3600_000;
      }],
      ['of a banned owner', async (g, c) => {
      const admin = await signUp(g.url);
      await g.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
      const me = await c.get('/api/auth/get-session');
      return admin.client.post(`/api/admin/users/${me.body.user.id}/ban`);
    }],
    ];
    let movedBy = 0;
    afterEach(() => {
      gw.clock.advance(-movedBy);
      movedBy = 0;
    });
    for (const [what, stop] of refused) {
      it(`a ${what} key gets 401 INVALID_API_KEY, worded like an unknown one`, async () => {
        const { client } = await signUp(gw.url);
        const { body } = await client.post('/api/api-keys', { name: 'k' });
        const keyClient = new Client(gw.url).withKey(body.key);
        expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200);
        await stop(gw, client, body.id);
        const res = await keyClient.get('/api/auth/get-session');
        expect(res.status).to.equal(401);
        expect(res.body.code).to.equal('INVALID_API_KEY');
        const unknown = await new Client(gw.url).withKey('key_' + 'A'.repeat(49)).get('/api/auth/get-session');
        expect(res.body.detail).to.equal(unknown.body.detail);
      });
    }

    it('a key whose checksum fails is refused with 401 before any lookup', async () => {
      const { client } = await signUp(gw.url);
      const { body } = await client.post('/api/api-keys', { name: 'k' });
      const last = body.key.at(-1) === 'a' ? 'b' : 'a';
      const res = await new Client(gw.url).withKey(body.key.slice(0, -1) + last).get('/api/auth/get-session');
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('INVALID_API_KEY');
    });

    it("deleting the account deletes its keys (cascade) and the key stops at once", async () => {
      const { client, user, password } = await signUp(gw.url);
      const { body } = await client.post('/api/api-keys', { name: 'k' });
      expect((await client.post('/api/auth/delete-user', { password })).status).to.equal(204);
      const { rows } = await gw.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1', [user.id]);
      expect(rows[0].n).to.equal(0);
      expect((await new Client(gw.url).withKey(body.key).get('/api/auth/get-session')).status).to.equal(401);
    });
  });

  describe('listing keys', () => {
    it('lists the caller\'s own keys newest first, revoked keys left out, no hash anywhere', async () => {
      const { client } = await signUp(gw.url);
      const other = await signUp(gw.url);
      await other.client.post('/api/api-keys', { name: 'not mine' });
      const ids: string[] = [];
      for (const name of ['one', 'two', 'three']) ids.push((await client.post('/api/api-keys', { name })).body.id);
      await client.delete(`/api/api-keys/${ids[1]}`);
      const res = await client.get('/api/api-keys');
      expect(res.body.keys.map((k: { name: string }) => k.name)).to.deep.equal(['three', 'one']);
      expect(res.text).to.not.match(/hash/i);
      const viaKey = await new Client(gw.url).withKey((await client.post('/api/api-keys', { name: 'lister' })).body.key).get('/api/api-keys');
      expect(viaKey.status).to.equal(200);
      expect(viaKey.body.keys).to.have.length(3);
    });

    it('the auth layer get and list show own keys only; another user\'s key is 404', async () => {
      const a = await signUp(gw.url);
      const b = await signUp(gw.url);
      const mine = (await a.client.post('/api/api-keys', { name: 'mine' })).body;
      expect((await a.client.get(`/api/auth/api-key/get?id=${mine.id}`)).body.name).to.equal('mine');
      expect((await b.client.get(`/api/auth/api-key/get?id=${mine.id}`)).status).to.equal(404);
      expect((await b.client.get('/api/auth/api-key/list')).body.keys).to.deep.equal([]);
      expect((await a.client.get('/api/auth/api-key/get?id=nope')).status).to.equal(400);
    });
  });

  describe('revoking a key', () => {
    it('answers 204, then 404 for a second revoke, another user\'s key, or an unknown id', async () => {
      const a = await signUp(gw.url);
      const b = await signUp(gw.url);
      const key = (await a.client.post('/api/api-keys', { name: 'k' })).body;
      expect((await b.client.delete(`/api/api-keys/${key.id}`)).status).to.equal(404);
      expect((await a.client.delete(`/api/api-keys/${key.id}`)).status).to.equal(204);
      expect((await a.client.delete(`/api/api-keys/${key.id}`)).status).to.equal(404);
      expect((await a.client.delete('/api/api-keys/00000000-0000-4000-8000-000000000000')).status).to.equal(404);
      expect((await a.client.delete('/api/api-keys/not-a-uuid')).status).to.equal(404);
      const { rows } = await gw.pool.query('SELECT revoked_at FROM apikeys WHERE id = $1', [key.id]);
      expect(rows[0].revoked_at).to.be.an.instanceOf(Date);
    });
  });

  describe('updating a key through the auth layer', () => {
    it('renames, disables and sets expiry of own keys; the state follows', async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      const renamed = await client.post('/api/auth/api-key/update', { keyId: key.id, name: 'renamed' });
      expect(renamed.status).to.equal(200);
      expect(renamed.body.name).to.equal('renamed');
      expect((await client.post('/api/auth/api-key/update', { keyId: key.id, enabled: false })).body.state).to.equal('disabled');
      await client.post('/api/auth/api-key/update', { keyId: key.id, enabled: true });
      const soon = new Date(gw.clock.now().getTime() + 2 * 3600_000).toISOString();
      const expiring = await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: soon });
      expect(expiring.body).to.include({ state: 'active', expiresAt: soon, expiresSoon: true });
      gw.clock.advance(3 * 3600_000);
      try {
        expect((await client.get(`/api/auth/api-key/get?id=${key.id}`)).body.state).to.equal('expired');
        expect((await client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: null })).body.state).to.equal('active');
      } finally {
        gw.clock.advance(-3 * 3600_000);
      }
    });

    it('refuses another user\'s key with 404 and a request carrying x-api-key with 403', async () => {
      const a = await signUp(gw.url);
      const b = await signUp(gw.url);
      const key = (await a.client.post('/api/api-keys', { name: 'k' })).body;
      expect((await b.client.post('/api/auth/api-key/update', { keyId: key.id, name: 'x' })).status).to.equal(404);
      const viaKey = await new Client(gw.url).withKey(key.key).post('/api/auth/api-key/update', { keyId: key.id, name: 'x' });
      expect(viaKey.status).to.equal(403);
      expect(viaKey.body.code).to.equal('FORBIDDEN');
    });
  });

  describe('key management needs a signed-in session (Variant A)', () => {
    it('a key cannot mint or revoke keys: POST and DELETE /api/api-keys answer 403', async () => {
      const { client, user } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      const k = new Client(gw.url).withKey(key.key);
      const create = await k.post('/api/api-keys', { name: 'minted' });
      expect(create.status).to.equal(403);
      expect(create.body.code).to.equal('FORBIDDEN');
      expect((await k.delete(`/api/api-keys/${key.id}`)).status).to.equal(403);
      const { rows } = await gw.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1 AND revoked_at IS NULL', [user.id]);
      expect(rows[0].n).to.equal(1);
    });

    it('the auth layer\'s create and delete answer 403 to every caller, sessions included', async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      expect((await client.post('/api/auth/api-key/create', { name: 'x' })).status).to.equal(403);
      expect((await client.post('/api/auth/api-key/delete', { keyId: key.id })).status).to.equal(403);
      expect((await new Client(gw.url).withKey(key.key).post('/api/auth/api-key/create', { name: 'x' })).status).to.equal(403);
      expect((await new Client(gw.url).post('/api/auth/api-key/create', { name: 'x' })).status).to.equal(401);
    });
  });

  describe('feature switches', () => {
    it('ai: true while AI is off and mcp: true while MCP is off answer 400 FEATURE_DISABLED', async () => {
      const off = await startTestGateway({ config: { ai: { enabled: false }, mcpServer: { enabled: false } } });
      try {
        const { client, user } = await signUp(off.url);
        for (const body of [{ name: 'a', ai: true }, { name: 'm', mcp: true }]) {
          const res = await client.post('/api/api-keys', body);
          expect(res.status).to.equal(400);
          expect(res.body.code).to.equal('FEATURE_DISABLED');
        }
        const { rows } = await off.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1', [user.id]);
        expect(rows[0].n).to.equal(0);
      } finally {
        await off.stop();
      }
    });
  });
});

describe('API keys: Variant B', () => {
  let gw: TestGateway;
  useGateway({ config: { apiKeys: { enabled: true, variant: 'B' }, billingScope: 'organization', plans: { free: {}, team: { apiRateLimit: 777 } } } }, (g) => (gw = g));

  it('takes only { name }: ai and mcp are unknown fields', async () => {
    const { client } = await signUp(gw.url);
    expect((await client.post('/api/api-keys', { name: 'k', mcp: true })).status).to.equal(400);
    expect((await client.post('/api/api-keys', { name: 'k' })).status).to.equal(201);
  });

  it('has no key limits: 12 keys for one user', async () => {
    const { client } = await signUp(gw.url);
    for (let i = 0; i < 12; i++) expect((await client.post('/api/api-keys', { name: `k${i}` })).status).to.equal(201);
  });

  it("under organization billing, stamps the creator's active organization's plan", async () => {
    const { client } = await signUp(gw.url);
    const slug = `team-${Date.now()}`;
    await client.post('/api/auth/organization/create', { name: 'Team', slug });
    await gw.pool.query("UPDATE organizations SET plan = 'team' WHERE slug = $1", [slug]);
    expect((await client.post('/api/api-keys', { name: 'k' })).body.requestQuota.limit).to.equal(777);
    await client.post('/api/auth/organization/set-active', { organizationId: null });
    expect((await client.post('/api/api-keys', { name: 'k2' })).body.requestQuota.limit).to.equal(100);
  });

  it('a key may manage keys, and the auth layer\'s create and delete work', async () => {
    const { client } = await signUp(gw.url);
    const key = (await client.post('/api/api-keys', { name: 'k' })).body;
    const k = new Client(gw.url).withKey(key.key);
    const minted = await k.post('/api/auth/api-key/create', { name: 'minted' });
    expect(minted.status).to.equal(201);
    expect((await k.post('/api/auth/api-key/delete', { keyId: minted.body.id })).status).to.equal(204);
    expect((await client.post('/api/auth/api-key/create', { name: 'by session' })).status).to.equal(201);
  });
});

describe('API keys turned off (apiKeys.enabled: false)', () => {
  let gw: TestGateway;
  useGateway({ config: { apiKeys: { enabled: false } } }, (g) => (gw = g));

  it('every key route answers 400 API_KEYS_DISABLED to every caller', async () => {
    const { client } = await signUp(gw.url);
    const anon = new Client(gw.url);
    const routes: [string, string][] = [['GET', '/api/api-keys'], ['POST', '/api/api-keys'], ['DELETE', '/api/api-keys/00000000-0000-4000-8000-000000000000'], ['GET', '/api/admin/api-keys'], ['DELETE', '/api/admin/api-keys/00000000-0000-4000-8000-000000000000'], ['GET', '/api/auth/api-key/list']];
    for (const c of [client, anon]) {
      for (const [method, path] of routes) {
        const res = await c.request(method, path, method === 'POST' ? { name: 'x' } : undefined);
        expect(res.status, `${method} ${path}`).to.equal(400);
        expect(res.body.code).to.equal('API_KEYS_DISABLED');
      }
    }
  });

  it('an x-api-key header authenticates nobody: it is ignored', async () => {
    const { client } = await signUp(gw.url);
    const res = await client.get('/api/auth/get-session', { 'x-api-key': 'key_' + 'A'.repeat(49) });
    expect(res.status).to.equal(200);
    expect(res.body.session.kind).to.equal('session');
    expect((await new Client(gw.url).withKey('key_whatever').get('/api/auth/get-session')).status).to.equal(401);
  });
});
