import { expect } from 'chai';
import { startTestGateway, testClock, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { OwnRedis, freePort } from '../../support/redis-server.ts';
import { generateKey } from '../../../src/services/keys/format.ts';
import { until } from '../../support/until.ts';

async function lookups(gw: TestGateway): Promise<Record<string, number>> {
  const text = (await new Client(gw.url).get('/metrics')).text;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^keygate_key_lookups_total\{result="([a-z-]+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/**
 * Waits for `gw` to hear a signal logged after line `from`, and answers how long that took; the key
 * must then be refused there.
 */
async function msUntilRefused(gw: TestGateway, key: string, from: number): Promise<number> {
  const started = performance.now();
  await gw.waitForLog(/"msg":"signal heard"/, { from, timeoutMs: 3000 });
  const ms = performance.now() - started;
  expect((await new Client(gw.url).withKey(key).get('/api/auth/get-session')).status, 'refused once the signal was heard').to.equal(401);
  return ms;
}

describe('key verification: cached, and stopped everywhere within a second', () => {
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    // One clock for both instances, standing still unless a test moves it.
    const clock = testClock();
    a = await startTestGateway({ clock });
    b = await startTestGateway({ database: a.database, clock });
  });
  after(async () => {
    await b?.stop();
    await a?.stop();
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
    // An expiry must be an hour ahead; a rotation with no grace ends a key now.
    ['rotation with gracePeriodSeconds 0', ({ client, keyId }) => client.post(`/api/api-keys/${keyId}/rotate`, { gracePeriodSeconds: 0 })],
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
      const from = b.logs.length;
      const res = (await stop({ client, userId: user.id, keyId: created.id, password, admin: admin.client })) as { status: number };
      expect(res.status).to.be.oneOf([200, 201, 204]);
      // The instance that made the change is exact at once.
      expect((await new Client(a.url).withKey(created.key).get('/api/auth/get-session')).status).to.equal(401);
      const delay = await msUntilRefused(b, created.key, from);
      expect(delay, `${what} took ${delay} ms to reach the other instance`).to.be.below(1000);
    });
  }

  it('a key whose expiry passes stops on time, cached or not', async () => {
    const { client } = await signUp(a.url);
    const created = (await client.post('/api/api-keys', { name: 'k' })).body;
    await client.post('/api/auth/api-key/update', { keyId: created.id, expiresAt: new Date(b.clock.now().getTime() + 7_200_000).toISOString() });
    const k = new Client(b.url).withKey(created.key);
    expect((await k.get('/api/auth/get-session')).status).to.equal(200);
    b.clock.advance(7_201_000);
    try {
      expect((await k.get('/api/auth/get-session')).status).to.equal(401);
    } finally {
      b.clock.advance(-7_201_000);
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

  it('last use is written in batches: lastUsedAt appears at the next flush, not per request', async () => {
    const { client } = await signUp(a.url);
    const created = (await client.post('/api/api-keys', { name: 'k' })).body;
    for (let i = 0; i < 10; i++) await new Client(a.url).withKey(created.key).get('/api/auth/get-session');
    const immediately = (await a.pool.query('SELECT last_used_at FROM apikeys WHERE id = $1', [created.id])).rows[0].last_used_at;
    expect(immediately, 'written per request').to.equal(null);
    await a.runPeriodic();
    const later = (await client.get('/api/api-keys')).body.keys[0].lastUsedAt;
    expect(later).to.equal(a.clock.now().toISOString());
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
      // The client comes back on its own reconnect schedule, which the test does not drive: ask the
      // key itself, for at most the 5 s within which service resumes after a store returns.
      await until('a key request answered 200 after Redis returned', async () => (await k.get('/api/auth/get-session')).status === 200, 5_000);
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
      const from = gw.logs.length;
      const pending = new Client(gw.url).withKey(created.key).get('/api/auth/get-session');
      // In flight means: its lookup waits on our lock. PostgreSQL says so in pg_locks.
      await until('the lookup waits on the locked key table', async () => (await gw.pool.query(
        "SELECT 1 FROM pg_locks WHERE relation = 'apikeys'::regclass AND NOT granted")).rowCount! >= 1, 5_000);
      // Any invalidation heard while it is in flight (here: another instance's signal about some key).
      await gw.pool.query("SELECT pg_notify('keygate_events', $1)", [JSON.stringify({ type: 'key', id: '00000000-0000-4000-8000-000000000000' })]);
      await gw.waitForLog(/"msg":"signal heard"/, { from, timeoutMs: 5_000 });
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
