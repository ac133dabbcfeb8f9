import { expect } from 'chai';
import { startTestGateway, testClock, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { requireRedis } from '../../support/redis.ts';

const plans = { free: {}, tiny: { apiRateLimit: 3 }, hundred: { apiRateLimit: 100 } };

async function keyOnPlan(gw: TestGateway, plan: string, body: Record<string, unknown> = {}) {
  const { client, user } = await signUp(gw.url);
  await gw.pool.query('UPDATE users SET plan = $2 WHERE id = $1', [user.id, plan]);
  const key = (await client.post('/api/api-keys', { name: 'q', ...body })).body;
  return { client, user, key, keyClient: new Client(gw.url).withKey(key.key) };
}

for (const counters of ['redis', 'postgres'] as const) {
  describe(`request quota per key per UTC day (${counters} counters)`, () => {
    let gw: TestGateway;
    const clock = testClock('2026-05-01T22:00:00Z');
    before(async function () {
      if (counters === 'redis') await requireRedis(this);
      gw = await startTestGateway({ counters, clock, config: { plans } });
    });
    after(async () => gw?.stop());

    it('a limit of 3 answers RateLimit-Remaining 2, 1, 0 with the IETF and older fields, then 429 QUOTA_EXCEEDED with Retry-After', async () => {
      clock.set('2026-05-01T22:00:00Z');
      const { keyClient } = await keyOnPlan(gw, 'tiny');
      const reset = 2 * 3600;
      for (const remaining of [2, 1, 0]) {
        const res = await keyClient.get('/api/auth/get-session');
        expect(res.status).to.equal(200);
        expect(res.headers['ratelimit-policy']).to.equal('"day";q=3;w=86400');
        expect(res.headers['ratelimit-limit']).to.equal('3');
        expect(res.headers['ratelimit-remaining']).to.equal(String(remaining));
        expect(Number(res.headers['ratelimit-reset'])).to.be.within(reset - 5, reset);
        expect(res.headers['ratelimit']).to.match(new RegExp(`^"day";r=${remaining};t=\\d+$`));
      }
      const refused = await keyClient.get('/api/auth/get-session');
      expect(refused.status).to.equal(429);
      expect(refused.body.code).to.equal('QUOTA_EXCEEDED');
      expect(refused.headers['ratelimit-remaining']).to.equal('0');
      expect(Number(refused.headers['retry-after'])).to.be.at.least(Number(refused.headers['ratelimit-reset']));
      expect(Number(refused.headers['retry-after'])).to.be.within(reset - 5, reset);
    });

    it('the list shows the key as rate-limited while it is, and the next UTC day opens it again', async () => {
      clock.set('2026-05-02T23:59:00Z');
      const { client, keyClient } = await keyOnPlan(gw, 'tiny');
      for (let i = 0; i < 3; i++) await keyClient.get('/api/projects');
      expect((await keyClient.get('/api/auth/get-session')).status).to.equal(429);
      expect((await client.get('/api/api-keys')).body.keys[0].state).to.equal('rate-limited');
      clock.set('2026-05-03T00:00:01Z');
      const res = await keyClient.get('/api/auth/get-session');
      expect(res.status).to.equal(200);
      expect(res.headers['ratelimit-remaining']).to.equal('2');
      expect((await client.get('/api/api-keys')).body.keys[0].state).to.equal('active');
    });

    it('requests the policy refuses still count: every request a key authenticates spends one', async () => {
      clock.set('2026-05-04T10:00:00Z');
      const { keyClient } = await keyOnPlan(gw, 'tiny');
      const refused = await keyClient.get('/api/admin/api-keys');
      expect(refused.status).to.equal(403);
      expect(refused.headers['ratelimit-remaining']).to.equal('2');
    });

    it('two instances share one key\'s quota exactly: 200 parallel requests over both, limit 100, exactly 100 answered', async function () {
      this.timeout(60_000);
      clock.set('2026-05-05T10:00:00Z');
      const second = await startTestGateway({ counters, clock, database: gw.database, config: { plans } });
      try {
        const { key } = await keyOnPlan(gw, 'hundred');
        const clients = [new Client(gw.url).withKey(key.key), new Client(second.url).withKey(key.key)];
        const results = await Promise.all(Array.from({ length: 200 }, (_, i) => clients[i % 2]!.get('/api/auth/get-session')));
        expect(results.filter((r) => r.status === 200)).to.have.length(100);
        expect(results.filter((r) => r.status === 429)).to.have.length(100);
      } finally {
        await second.stop();
      }
    });
  });
}

describe('request quota when the counter store does not answer', () => {
  it('key requests fail closed with 503 SERVICE_UNAVAILABLE; session requests go on', async () => {
    const gw = await startTestGateway({ counters: 'redis', redisUrl: 'redis://127.0.0.1:1' });
    try {
      const { client, user } = await signUp(gw.url);
      // A key made while the counter store is down cannot be created either, so write one directly.
      const { generateKey, keyStart } = await import('../../../src/services/keys/format.ts');
      const { sha256 } = await import('../../../src/services/secrets.ts');
      const key = generateKey('key_');
      await gw.pool.query("INSERT INTO apikeys (user_id, name, key_hash, start, prefix, request_quota) VALUES ($1, 'k', $2, $3, 'key_', 10)", [user.id, sha256(key), keyStart(key)]);
      const res = await new Client(gw.url).withKey(key).get('/api/auth/get-session');
      expect(res.status).to.equal(503);
      expect(res.body.code).to.equal('SERVICE_UNAVAILABLE');
      expect((await client.get('/api/auth/get-session')).status).to.equal(200);
    } finally {
      await gw.stop();
    }
  });
});
