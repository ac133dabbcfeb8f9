import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { OwnRedis, freePort } from '../../support/redis-server.ts';
import { generateKey } from '../../../src/services/keys/format.ts';

async function lookups(gw: TestGateway): Promise<Record<string, number>> {
  const text = (await new Client(gw.url).get('/metrics')).text;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^keygate_key_lookups_total\{result="([a-z-]+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** Polls until the key stops authenticating on `gw`, and returns how long that took. */
async function msUntilRefused(gw: TestGateway, key: string, limitMs = 3000): Promise<number> {
  const started = Date.now();
  const k = new Client(gw.url).withKey(key);
  while (Date.now() - started < limitMs) {
    if ((await k.get('/api/auth/get-session')).status === 401) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 10));
  }
  return Infinity;
}

describe('key verification: cached, and stopped everywhere within a second', () => {
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    a = await startTestGateway();
    b = await startTestGateway({ database: a.database });
  });
  after(async () => {
    await b.stop();
    await a.stop();
  });

  it('a verified key is served from the cache: repeated requests make one database lookup', async () => {
    const { client } = await signUp(a.url);
    const key = (await client.post('/api/api-keys', { name: 'k' })).body.key;
    const before = await lookups(b);
    for (let i = 0; i < 20; i++) expect((await new Client(b.url).withKey(key).get('/api/auth/get-session')).status).to.equal(200);
    const after = await lookups(b);
    expect((after.miss ?? 0) - (before.miss ?? 0)).to.equal(1);
    expect((after.hit ?? 0) - (before.hit ?? 0)).to.equal(19);
  });

  const stops: [string, (ctx: { client: Client; userId: string; keyId: string; password: string; admin: Client }) => Promise<unknown>][] = [
    ['revoke', ({ client, keyId }) => client.delete(`/api/api-keys/${keyId}`)],
    ['admin revoke', ({ admin, keyId }) => admin.delete(`/api/admin/api-keys/${keyId}`)],
    ['disable', ({ client, keyId }) => client.post('/api/auth/api-key/update', { keyId, enabled: false })],
    ['expire (an expiry set in the past)', ({ client, keyId }) => client.post('/api/auth/api-key/update', { keyId, expiresAt: new Date(Date.now() - 1000).toISOString() })],
    ['ban', ({ admin, userId }) => admin.post(`/api/admin/users/${userId}/ban`)],
    ['account deletion', ({ client, password }) => client.post('/api/auth/delete-user', { password })],
  ];
  for (const [what, stop] of stops) {
    it(`${what} on one instance stops the key cached on another within one second (measured)`, async () => {
      const admin = await signUp(a.url);
      await a.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
      const { client, user, password } = await signUp(a.url);
      const created = (await client.post('/api/api-keys', { name: 'k' })).body;
      const onB = new Client(b.url).withKey(created.key);
      expect((await onB.get('/api/auth/get-session')).status).to.equal(200);
      expect((await onB.get('/api/auth/get-session')).status).to.equal(200);
      const res = (await stop({ client, userId: user.id, keyId: created.id, password, admin: admin.client })) as { status: number };
      expect(res.status).to.be.oneOf([200, 204]);
      // The instance that made the change is exact at once.
      expect((await new Client(a.url).withKey(created.key).get('/api/auth/get-session')).status).to.equal(401);
      const delay = await msUntilRefused(b, created.key);
      expect(delay, `${what} took ${delay} ms to reach the other instance`).to.be.below(1000);
    });
  }

  it('a key whose expiry passes stops on time, cached or not', async () => {
    const { client } = await signUp(a.url);
    const created = (await client.post('/api/api-keys', { name: 'k' })).body;
    await client.post('/api/auth/api-key/update', { keyId: created.id, expiresAt: new Date(Date.now() + 60_000).toISOString() });
    const k = new Client(b.url).withKey(created.key);
    expect((await k.get('/api/auth/get-session')).status).to.equal(200);
    b.clock.advance(61_000);
    try {
      expect((await k.get('/api/auth/get-session')).status).to.equal(401);
    } finally {
      b.clock.advance(-61_000);
    }
  });

  it('2,000 requests with unknown keys cause a bounded number of database lookups', async () => {
    const before = await lookups(a);
    // Made-up keys fail the checksum: no lookup at all.
    const madeUp = Array.from({ length: 1000 }, (_, i) => `key_${String(i).padStart(49, 'x')}`);
    // Well-formed but unknown keys are looked up once each, then remembered for a while.
    const wellFormed = Array.from({ length: 20 }, () => generateKey('key_'));
    const requests = [...madeUp, ...Array.from({ length: 1000 }, (_, i) => wellFormed[i % 20]!)];
    for (let i = 0; i < requests.length; i += 50) {
      const batch = requests.slice(i, i + 50).map((k) => new Client(a.url).withKey(k).get('/api/projects'));
      for (const res of await Promise.all(batch)) expect(res.status).to.equal(401);
    }
    const after = await lookups(a);
    expect((after.miss ?? 0) - (before.miss ?? 0)).to.be.at.most(20);
    expect((after.malformed ?? 0) - (before.malformed ?? 0)).to.equal(1000);
  });

  it('last use is written in batches: lastUsedAt appears within 5 seconds, not per request', async function () {
    this.timeout(15_000);
    const { client } = await signUp(a.url);
    const created = (await client.post('/api/api-keys', { name: 'k' })).body;
    for (let i = 0; i < 10; i++) await new Client(a.url).withKey(created.key).get('/api/auth/get-session');
    const immediately = (await a.pool.query('SELECT last_used_at FROM apikeys WHERE id = $1', [created.id])).rows[0].last_used_at;
    expect(immediately, 'written per request').to.equal(null);
    await new Promise((r) => setTimeout(r, 2600));
    const later = (await client.get('/api/api-keys')).body.keys[0].lastUsedAt;
    expect(later).to.be.a('string');
    expect(Date.now() - Date.parse(later)).to.be.below(5000);
  });
});

describe('key requests while Redis is down', () => {
  it('answer 503 and recover when Redis returns, without a restart', async function () {
    this.timeout(60_000);
    const redis = new OwnRedis(await freePort());
    await redis.start();
    const gw = await startTestGateway({ counters: 'redis', redisUrl: redis.url });
    try {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body.key;
      const k = new Client(gw.url).withKey(key);
      expect((await k.get('/api/auth/get-session')).status).to.equal(200);
      await redis.stop();
      const down = await k.get('/api/auth/get-session');
      expect(down.status).to.equal(503);
      expect(down.body.code).to.equal('SERVICE_UNAVAILABLE');
      expect((await client.get('/readyz')).status).to.equal(503);
      expect((await client.get('/healthz')).status).to.equal(200);
      await redis.start();
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        status = (await k.get('/api/auth/get-session')).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).to.equal(200);
      expect((await client.get('/readyz')).status).to.equal(200);
    } finally {
      await gw.stop();
      await redis.stop();
    }
  });
});

describe('key verification: a lookup in flight when a key changes', () => {
  it('answers, but is not cached: the next request looks the key up again', async () => {
    const gw = await startTestGateway();
    try {
      const { client } = await signUp(gw.url);
      const created = (await client.post('/api/api-keys', { name: 'k' })).body;
      // Hold the lookup open: the key table is locked until we let go.
      const locker = await gw.pool.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE apikeys IN ACCESS EXCLUSIVE MODE');
      const before = await lookups(gw);
      const pending = new Client(gw.url).withKey(created.key).get('/api/auth/get-session');
      await new Promise((r) => setTimeout(r, 200));
      // Any invalidation heard while it is in flight (here: another instance's signal about some key).
      await gw.pool.query("SELECT pg_notify('keygate_events', $1)", [JSON.stringify({ type: 'key', id: '00000000-0000-4000-8000-000000000000' })]);
      await new Promise((r) => setTimeout(r, 200));
      await locker.query('COMMIT');
      locker.release();
      expect((await pending).status).to.equal(200);
      expect((await new Client(gw.url).withKey(created.key).get('/api/auth/get-session')).status).to.equal(200);
      const after = await lookups(gw);
      expect((after.miss ?? 0) - (before.miss ?? 0), 'lookups').to.equal(2);
    } finally {
      await gw.stop();
    }
  });
});
