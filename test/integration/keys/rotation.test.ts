import { expect } from 'chai';
import { startTestGateway, useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

const DAY = 86_400_000;

async function makeAdmin(gw: TestGateway): Promise<Client> {
  const admin = await signUp(gw.url);
  await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
  return admin.client;
}

/** Asks until `check` holds, for at most `ms`: the promised bound, not a sleep. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setImmediate(r));
  }
  return check();
}

describe('API keys: rotation', () => {
  let gw: TestGateway;
  useGateway({ config: { apiKeys: { maxKeysPerUser: 2, maxCreatesPerDay: 4 }, mcpServer: { enabled: true }, plans: { free: {}, pro: { apiRateLimit: 5000 } } } }, (g) => (gw = g));

  describe('when a key is rotated with the default grace period', () => {
    it('answers 201 with a new key of the same name and permissions, linked both ways; both keys work for a day', async () => {
      const { client } = await signUp(gw.url);
      const old = (await client.post('/api/api-keys', { name: 'deploy', mcp: true })).body;
      const now = gw.clock.now().getTime();
      const res = await client.post(`/api/api-keys/${old.id}/rotate`, {});
      expect(res.status).to.equal(201);
      expect(res.headers['cache-control']).to.equal('no-store');
      expect(res.body.key).to.match(/^key_/).and.not.equal(old.key);
      expect(res.body).to.include({ name: 'deploy', mcp: true, rotatedFrom: old.id, rotatedTo: null, expiresAt: null });
      expect(res.body.permissions).to.deep.equal({ mcp: ['access'] });
      const list = (await client.get('/api/api-keys')).body.keys as { id: string; rotatedTo: string | null; expiresAt: string | null }[];
      const previous = list.find((k) => k.id === old.id)!;
      expect(previous.rotatedTo).to.equal(res.body.id);
      expect(new Date(previous.expiresAt!).getTime() - now).to.be.within(DAY - 5000, DAY + 5000);
      expect((await new Client(gw.url).withKey(old.key).get('/api/auth/get-session')).status).to.equal(200);
      expect((await new Client(gw.url).withKey(res.body.key).get('/api/auth/get-session')).status).to.equal(200);
      expect(JSON.stringify(list)).to.not.include(res.body.key);
    });

    it('after the grace period the old key is refused like a revoked one, leaves the list, and its routes answer 404', async () => {
      const { client } = await signUp(gw.url);
      const old = (await client.post('/api/api-keys', { name: 'k' })).body;
      const fresh = (await client.post(`/api/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 3600 })).body;
      gw.clock.advance(3600_000 + 1000);
      try {
        const refused = await new Client(gw.url).withKey(old.key).get('/api/auth/get-session');
        expect(refused.status).to.equal(401);
        expect(refused.body.code).to.equal('INVALID_API_KEY');
        expect((await new Client(gw.url).withKey(fresh.key).get('/api/auth/get-session')).status).to.equal(200);
        expect((await client.get('/api/api-keys')).body.keys.map((k: { id: string }) => k.id)).to.deep.equal([fresh.id]);
        expect((await client.get(`/api/auth/api-key/get?id=${old.id}`)).status).to.equal(404);
        expect((await client.get(`/api/api-keys/${old.id}/usage`)).status).to.equal(404);
        expect((await client.post(`/api/api-keys/${old.id}/rotate`, {})).status).to.equal(404);
        expect((await client.delete(`/api/api-keys/${old.id}`)).status).to.equal(404);
      } finally {
        gw.clock.advance(-(3600_000 + 1000));
      }
    });
  });

  it("stamps the new key's quota from the owner's current plan, and keeps the old key's lifetime length", async () => {
    const { client, user } = await signUp(gw.url);
    const old = (await client.post('/api/api-keys', { name: 'k', expiresIn: 30 * 86_400 })).body;
    expect(old.requestQuota.limit).to.equal(100);
    await gw.pool.query("UPDATE users SET plan = 'pro' WHERE id = $1", [user.id]);
    gw.clock.advance(2 * DAY);
    try {
      const now = gw.clock.now().getTime();
      const res = await client.post(`/api/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 60 });
      expect(res.body.requestQuota.limit).to.equal(5000);
      expect(new Date(res.body.expiresAt).getTime() - now).to.be.within(30 * DAY - 5000, 30 * DAY + 5000);
    } finally {
      gw.clock.advance(-2 * DAY);
    }
  });

  describe('limits', () => {
    it('a user at maxKeysPerUser can still rotate, and the rotated key stops counting at once', async () => {
      const { client } = await signUp(gw.url);
      const a = (await client.post('/api/api-keys', { name: 'a' })).body;
      await client.post('/api/api-keys', { name: 'b' });
      expect((await client.post('/api/api-keys', { name: 'c' })).body.code).to.equal('API_KEY_LIMIT');
      const rotated = await client.post(`/api/api-keys/${a.id}/rotate`, {});
      expect(rotated.status).to.equal(201);
      // Three keys in the list (one in its grace period), but only two held.
      expect((await client.get('/api/api-keys')).body.keys).to.have.length(3);
      expect((await client.post('/api/api-keys', { name: 'c' })).body.code).to.equal('API_KEY_LIMIT');
    });

    it('a rotation counts as a create for maxCreatesPerDay', async () => {
      const { client } = await signUp(gw.url);
      const a = (await client.post('/api/api-keys', { name: 'a' })).body;
      const b = (await client.post(`/api/api-keys/${a.id}/rotate`, { gracePeriodSeconds: 0 })).body;
      const c = (await client.post(`/api/api-keys/${b.id}/rotate`, { gracePeriodSeconds: 0 })).body;
      const d = await client.post(`/api/api-keys/${c.id}/rotate`, { gracePeriodSeconds: 0 });
      expect(d.status).to.equal(201);
      const e = await client.post(`/api/api-keys/${d.body.id}/rotate`, { gracePeriodSeconds: 0 });
      expect(e.status).to.equal(429);
      expect(e.body.code).to.equal('API_KEY_DAILY_LIMIT');
      expect(Number(e.headers['retry-after'])).to.be.greaterThan(0);
      // Refused: the key that was to be rotated is untouched.
      const still = await client.get(`/api/auth/api-key/get?id=${d.body.id}`);
      expect(still.body.rotatedTo).to.equal(null);
      expect((await new Client(gw.url).withKey(d.body.key).get('/api/auth/get-session')).status).to.equal(200);
    });
  });

  it('writes API_KEY_ROTATED with keyId the new key and previousKeyId the old', async () => {
    const admin = await makeAdmin(gw);
    const { client, user } = await signUp(gw.url);
    const old = (await client.post('/api/api-keys', { name: 'k' })).body;
    const fresh = (await client.post(`/api/api-keys/${old.id}/rotate`, {}, { 'user-agent': 'rotation-test' })).body;
    const entries = (await admin.get('/api/admin/audit-log?limit=100')).body.entries as Record<string, unknown>[];
    const entry = entries.find((e) => e.type === 'API_KEY_ROTATED' && e.ownerUserId === user.id);
    expect(entry).to.include({ keyId: fresh.id, previousKeyId: old.id, actorUserId: user.id, userAgent: 'rotation-test' });
    expect(JSON.stringify(entries)).to.not.include(fresh.key);
  });

  describe('refusals', () => {
    const cases: [string, (c: Client, gw: TestGateway) => Promise<string>][] = [
      ['an unknown key', async () => '00000000-0000-4000-8000-000000000000'],
      ['a malformed id', async () => 'not-a-uuid'],
      ["another user's key", async (_c, g) => (await (await signUp(g.url)).client.post('/api/api-keys', { name: 'theirs' })).body.id],
      ['a revoked key', async (c) => {
        const k = (await c.post('/api/api-keys', { name: 'r' })).body;
        await c.delete(`/api/api-keys/${k.id}`);
        return k.id;
      }],
      ['an expired key', async (c, g) => {
        const k = (await c.post('/api/api-keys', { name: 'e', expiresIn: 3600 })).body;
        await g.pool.query("UPDATE apikeys SET expires_at = now() - interval '1 minute' WHERE id = $1", [k.id]);
        return k.id;
      }],
      ['an already rotated key (in its grace period)', async (c) => {
        const k = (await c.post('/api/api-keys', { name: 'twice' })).body;
        await c.post(`/api/api-keys/${k.id}/rotate`, {});
        return k.id;
      }],
    ];
    for (const [what, make] of cases) {
      it(`rotating ${what} answers 404 and creates nothing`, async () => {
        const { client, user } = await signUp(gw.url);
        const id = await make(client, gw);
        const before = (await gw.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1', [user.id])).rows[0].n;
        const res = await client.post(`/api/api-keys/${id}/rotate`, {});
        expect(res.status).to.equal(404);
        expect(res.body.code).to.equal('NOT_FOUND');
        expect((await gw.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1', [user.id])).rows[0].n).to.equal(before);
      });
    }

    it('a request carrying x-api-key gets 403 under Variant A, and nothing changes', async () => {
      const { client } = await signUp(gw.url);
      const k = (await client.post('/api/api-keys', { name: 'k' })).body;
      const res = await new Client(gw.url).withKey(k.key).post(`/api/api-keys/${k.id}/rotate`, {});
      expect(res.status).to.equal(403);
      expect(res.body.code).to.equal('FORBIDDEN');
      expect((await client.get(`/api/auth/api-key/get?id=${k.id}`)).body.rotatedTo).to.equal(null);
    });

    for (const body of [{ gracePeriodSeconds: -1 }, { gracePeriodSeconds: 604_801 }, { gracePeriodSeconds: 1.5 }, { grace: 10 }]) {
      it(`refuses ${JSON.stringify(body)} with 400 VALIDATION_FAILED`, async () => {
        const { client } = await signUp(gw.url);
        const k = (await client.post('/api/api-keys', { name: 'k' })).body;
        const res = await client.post(`/api/api-keys/${k.id}/rotate`, body);
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
        expect((await client.get(`/api/auth/api-key/get?id=${k.id}`)).body.rotatedTo).to.equal(null);
      });
    }
  });
});

describe('API keys: rotation with gracePeriodSeconds 0 across two instances', () => {
  let one: TestGateway;
  let two: TestGateway;
  before(async () => {
    one = await startTestGateway();
    two = await startTestGateway({ database: one.database });
  });
  after(async () => {
    await two?.stop();
    await one?.stop();
  });

  it('the old key is refused at once on the instance that rotated and within 1 s on the other', async () => {
    const { client } = await signUp(one.url);
    const old = (await client.post('/api/api-keys', { name: 'k' })).body;
    const onTwo = new Client(two.url).withKey(old.key);
    // The second instance has the key cached before the rotation.
    expect((await onTwo.get('/api/auth/get-session')).status).to.equal(200);
    const fresh = await client.post(`/api/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 0 });
    expect(fresh.status).to.equal(201);
    expect((await new Client(one.url).withKey(old.key).get('/api/auth/get-session')).status).to.equal(401);
    expect(await within(1000, async () => (await onTwo.get('/api/auth/get-session')).status === 401)).to.equal(true);
    expect((await new Client(two.url).withKey(fresh.body.key).get('/api/auth/get-session')).status).to.equal(200);
  });
});

describe('API keys: rotation under Variant B', () => {
  let gw: TestGateway;
  useGateway({ config: { apiKeys: { variant: 'B' } } }, (g) => (gw = g));

  it('a key may rotate itself (a Variant B key is a full session)', async () => {
    const { client } = await signUp(gw.url);
    const k = (await client.post('/api/api-keys', { name: 'k' })).body;
    const res = await new Client(gw.url).withKey(k.key).post(`/api/api-keys/${k.id}/rotate`, { gracePeriodSeconds: 0 });
    expect(res.status).to.equal(201);
    expect(res.body.rotatedFrom).to.equal(k.id);
    expect((await new Client(gw.url).withKey(k.key).get('/api/auth/get-session')).status).to.equal(401);
  });
});
