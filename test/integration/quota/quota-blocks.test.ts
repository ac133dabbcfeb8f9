import { expect } from 'chai';
import { Redis } from 'ioredis';
import { startTestGateway, testClock, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp, type Reply } from '../../support/http.ts';
import { REDIS_URL, requireRedis } from '../../support/redis.ts';
import { utcDayStart } from '../../../src/store/quota/day.ts';

// Leased quota blocks above 1,000 remaining, one by one at or below it.

const plans = { free: {}, boundary: { apiRateLimit: 1500 }, big: { apiRateLimit: 100_000 } };
// Blocks that never expire during a test and no sweep timer: the test decides when blocks return.
const steady = { blockSize: 200, blockTtlMs: 600_000, sweepIntervalMs: 0 };

async function keyOnPlan(gw: TestGateway, plan: string) {
  const { client, user } = await signUp(gw.url);
  await gw.pool.query('UPDATE users SET plan = $2 WHERE id = $1', [user.id, plan]);
  const key = (await client.post('/api/api-keys', { name: 'q' })).body;
  return { id: key.id as string, key: key.key as string };
}

/** `count` requests spread over the clients, `width` in flight at once. */
async function load(clients: Client[], count: number, width = 100): Promise<Reply[]> {
  const out: Reply[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) {
      const i = next++;
      out[i] = await clients[i % clients.length]!.get('/api/auth/get-session');
    }
  }));
  return out;
}

for (const counters of ['redis', 'postgres'] as const) {
  describe(`leased quota blocks (${counters} counters)`, () => {
    let gw: TestGateway;
    let second: TestGateway;
    let redis: Redis | null = null;
    const clock = testClock('2026-06-01T10:00:00Z');
    before(async function () {
      if (counters === 'redis') {
        await requireRedis(this);
        redis = new Redis(REDIS_URL);
      }
      gw = await startTestGateway({ counters, clock, config: { plans }, quotaLease: steady });
      second = await startTestGateway({ counters, clock, database: gw.database, config: { plans }, quotaLease: steady });
    });
    after(async () => {
      await second?.stop();
      await gw?.stop();
      redis?.disconnect();
    });

    const stored = async (keyId: string): Promise<number> => {
      const day = utcDayStart(clock.now());
      if (redis) return Number((await redis.get(`keygate:quota:${keyId}:${day.getTime() / 1000}`)) ?? 0);
      const { rows } = await gw.pool.query<{ value: string }>('SELECT value FROM counters WHERE name = $1 AND window_start = $2', [`quota:${keyId}`, day]);
      return Number(rows[0]?.value ?? 0);
    };
    const setStored = async (keyId: string, value: number) => {
      const day = utcDayStart(clock.now());
      if (redis) return void (await redis.set(`keygate:quota:${keyId}:${day.getTime() / 1000}`, value, 'EX', 90_000));
      await gw.pool.query(`INSERT INTO counters (name, window_start, value, expires_at) VALUES ($1, $2, $3, $2::timestamptz + interval '25 hours')
        ON CONFLICT (name, window_start) DO UPDATE SET value = $3`, [`quota:${keyId}`, day, value]);
    };

    it('with plenty left, a key\'s first request is counted one by one, and the next one leases a block and answers the exact remainder', async () => {
      const { id, key } = await keyOnPlan(gw, 'big');
      const first = await new Client(gw.url).withKey(key).get('/api/auth/get-session');
      expect(first.status).to.equal(200);
      expect(first.headers['ratelimit-remaining']).to.equal('99999');
      expect(await stored(id), 'a key asked once leases nothing').to.equal(1);
      const second = await new Client(gw.url).withKey(key).get('/api/auth/get-session');
      expect(second.headers['ratelimit-remaining']).to.equal('99998');
      expect(await stored(id), 'the key came back: one block of 200 leased').to.equal(201);
      // The next 198 requests on this instance are spent from the block: the counter does not move.
      for (let i = 0; i < 20; i++) await new Client(gw.url).withKey(key).get('/api/auth/get-session');
      expect(await stored(id)).to.equal(201);
    });

    it('an unspent block comes back when its lifetime is over, and on shutdown', async () => {
      const third = await startTestGateway({ counters, clock, database: gw.database, config: { plans }, quotaLease: { ...steady, blockTtlMs: 4000 } });
      const fourth = await startTestGateway({ counters, clock, database: gw.database, config: { plans }, quotaLease: steady });
      try {
        const { id, key } = await keyOnPlan(gw, 'big');
        const twice = async (at: TestGateway) => {
          await new Client(at.url).withKey(key).get('/api/auth/get-session');
          return new Client(at.url).withKey(key).get('/api/auth/get-session');
        };
        expect((await twice(third)).status).to.equal(200);
        expect(await stored(id), 'one request counted, then one block leased').to.equal(201);
        // fourth counts its first request (202), leases (402), and knows 199 of its block are unspent.
        expect((await twice(fourth)).headers['ratelimit-remaining']).to.equal('99797');
        expect(await stored(id)).to.equal(402);
        await third.quota.sweep();
        expect(await stored(id), 'a block younger than its lifetime stays out').to.equal(402);
        clock.advance(4000);
        await third.quota.sweep();
        expect(await stored(id), 'the expired block is handed back but for the one request spent').to.equal(203);
        await fourth.stop();
        expect(await stored(id), 'a stopping instance hands its block back').to.equal(4);
      } finally {
        await third.stop();
        await fourth.stop().catch(() => {});
      }
    });

    it('two instances under parallel load serve exactly the limit, crossing the 1,000 boundary: each remainder 1,499..0 answered once', async function () {
      this.timeout(120_000);
      const { id, key } = await keyOnPlan(gw, 'boundary');
      const clients = [new Client(gw.url).withKey(key), new Client(second.url).withKey(key)];
      const results = await load(clients, 1800);
      const served = results.filter((r) => r.status === 200);
      expect(results.filter((r) => r.status !== 200 && r.status !== 429), 'only 200 and 429').to.have.length(0);
      expect(served).to.have.length(1500);
      const remainders = served.map((r) => Number(r.headers['ratelimit-remaining'])).sort((a, b) => a - b);
      expect(remainders).to.deep.equal(Array.from({ length: 1500 }, (_, i) => i));
      expect(await stored(id)).to.be.at.least(1500);
    });

    it('at or below 1,000 left no block is leased: each request is counted in the store as it is served', async () => {
      const { id, key } = await keyOnPlan(gw, 'boundary');
      await setStored(id, 499);
      const c = [new Client(gw.url).withKey(key), new Client(second.url).withKey(key)];
      // 1,001 left: the only block there is room for above the floor holds one request.
      expect((await c[0]!.get('/api/auth/get-session')).headers['ratelimit-remaining']).to.equal('1000');
      expect(await stored(id)).to.equal(500);
      for (const [i, remaining] of [999, 998, 997, 996].entries()) {
        expect((await c[i % 2]!.get('/api/auth/get-session')).headers['ratelimit-remaining']).to.equal(String(remaining));
        expect(await stored(id)).to.equal(1500 - remaining);
      }
    });
  });
}

describe('leased quota blocks when Redis does not answer', () => {
  it('a key with plenty left still fails closed with 503 SERVICE_UNAVAILABLE', async () => {
    const gw = await startTestGateway({ counters: 'redis', redisUrl: 'redis://127.0.0.1:1' });
    try {
      const { user } = await signUp(gw.url);
      const { generateKey, keyStart } = await import('../../../src/services/keys/format.ts');
      const { sha256 } = await import('../../../src/services/secrets.ts');
      const key = generateKey('key_');
      await gw.pool.query("INSERT INTO apikeys (user_id, name, key_hash, start, prefix, request_quota) VALUES ($1, 'k', $2, $3, 'key_', 100000)", [user.id, sha256(key), keyStart(key)]);
      const res = await new Client(gw.url).withKey(key).get('/api/auth/get-session');
      expect(res.status).to.equal(503);
      expect(res.body.code).to.equal('SERVICE_UNAVAILABLE');
    } finally {
      await gw.stop();
    }
  });
});
