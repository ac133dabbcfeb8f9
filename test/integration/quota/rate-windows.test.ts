import { expect } from 'chai';
import { loadConfig } from '../../../src/config.ts';
import { startTestGateway, testClock, manualEvery, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { requireRedis } from '../../support/redis.ts';
import { parseList } from '../../support/structured-fields.ts';
import { initializeMessage, rpc } from '../mcp/support.ts';

// Short rate windows beside the day: stamped on the key, counted with the day in one atomic step,
// all or nothing, exact across instances; 429 RATE_LIMITED names the window.

const plans = {
  free: {},
  burst: { apiRateLimit: 1000, rateLimits: [{ window: '1m', limit: 600 }, { window: '1s', limit: 5 }] },
  minute: { apiRateLimit: 1000, rateLimits: [{ window: '1m', limit: 25 }] },
  edge: { apiRateLimit: 1000, rateLimits: [{ window: '1s', limit: 2 }, { window: '1m', limit: 3 }] },
  dayFirst: { apiRateLimit: 3, rateLimits: [{ window: '1s', limit: 3 }] },
};

async function keyOnPlan(gw: TestGateway, plan: string) {
  const { client, user } = await signUp(gw.url);
  await gw.pool.query('UPDATE users SET plan = $2 WHERE id = $1', [user.id, plan]);
  const key = (await client.post('/api/api-keys', { name: 'w', mcp: true })).body;
  return { client, key, keyClient: new Client(gw.url).withKey(key.key) };
}

/** The RateLimit fields read as a client library would: name -> parameters. */
function fields(headers: Record<string, string | string[] | undefined>, name: string): Map<string, Map<string, unknown>> {
  const raw = headers[name.toLowerCase()];
  expect(raw, name).to.be.a('string');
  const out = new Map<string, Map<string, unknown>>();
  for (const m of parseList(raw as string)) {
    expect(m.value, `${name}: each member is named by a string`).to.be.a('string');
    out.set(m.value as string, m.params);
  }
  return out;
}

for (const counters of ['redis', 'postgres'] as const) {
  describe(`rate windows beside the daily quota (${counters} counters)`, () => {
    let gw: TestGateway;
    const clock = testClock('2026-06-01T10:00:00.500Z');
    const ticker = manualEvery();
    before(async function () {
      if (counters === 'redis') await requireRedis(this);
      gw = await startTestGateway({ counters, clock, usageFlush: { every: ticker.every }, config: { plans } });
    });
    after(async () => gw?.stop());

    it('a key is stamped with its plan\'s windows, shortest first; the fields list the day and every window in RFC 8941 syntax', async () => {
      clock.set('2026-06-01T10:00:20.500Z');
      const { key, keyClient } = await keyOnPlan(gw, 'burst');
      expect(key.rateLimits).to.deep.equal([{ window: '1s', limit: 5 }, { window: '1m', limit: 600 }]);
      const res = await keyClient.get('/api/auth/get-session');
      expect(res.status).to.equal(200);
      const policy = fields(res.headers, 'RateLimit-Policy');
      expect([...policy.keys()]).to.deep.equal(['day', '1s', '1m']);
      expect(Object.fromEntries(policy.get('day')!)).to.deep.equal({ q: 1000, w: 86400 });
      expect(Object.fromEntries(policy.get('1s')!)).to.deep.equal({ q: 5, w: 1 });
      expect(Object.fromEntries(policy.get('1m')!)).to.deep.equal({ q: 600, w: 60 });
      const state = fields(res.headers, 'RateLimit');
      expect(Object.fromEntries(state.get('day')!)).to.deep.equal({ r: 999, t: 50_380 });
      expect(Object.fromEntries(state.get('1s')!)).to.deep.equal({ r: 4, t: 1 });
      expect(Object.fromEntries(state.get('1m')!)).to.deep.equal({ r: 599, t: 40 });
      // The older fields stay the day's.
      expect(res.headers['ratelimit-limit']).to.equal('1000');
      expect(res.headers['ratelimit-remaining']).to.equal('999');
    });

    it('a key without windows answers exactly the day\'s fields, as before', async () => {
      const { key, keyClient } = await keyOnPlan(gw, 'free');
      expect(key.rateLimits).to.deep.equal([]);
      const res = await keyClient.get('/api/auth/get-session');
      expect(res.headers['ratelimit-policy']).to.equal('"day";q=100;w=86400');
      expect(res.headers['ratelimit']).to.match(/^"day";r=99;t=\d+$/);
    });

    it('60 parallel requests within one second against a 1s limit of 5: exactly 5 served, the rest 429 RATE_LIMITED naming 1s; the refused spent nothing of the minute or the day', async () => {
      clock.set('2026-06-01T11:00:00.200Z');
      const { keyClient } = await keyOnPlan(gw, 'burst');
      const results = await Promise.all(Array.from({ length: 60 }, () => keyClient.get('/api/auth/get-session')));
      expect(results.filter((r) => r.status === 200)).to.have.length(5);
      const refused = results.filter((r) => r.status === 429);
      expect(refused).to.have.length(55);
      for (const r of refused) {
        expect(r.body).to.include({ code: 'RATE_LIMITED', window: '1s' });
        expect(r.headers['retry-after']).to.equal('1');
        expect(Object.fromEntries(fields(r.headers, 'RateLimit').get('1s')!)).to.deep.equal({ r: 0, t: 1 });
      }
      // Remaining answers of the served ones are 4..0, each once.
      expect(results.filter((r) => r.status === 200).map((r) => fields(r.headers, 'RateLimit').get('1s')!.get('r')).sort()).to.deep.equal([0, 1, 2, 3, 4]);
      clock.set('2026-06-01T11:00:01.000Z');
      const next = await keyClient.get('/api/auth/get-session');
      expect(next.status).to.equal(200);
      const state = fields(next.headers, 'RateLimit');
      expect(state.get('day')!.get('r')).to.equal(994);
      expect(state.get('1m')!.get('r')).to.equal(594);
      expect(state.get('1s')!.get('r')).to.equal(4);
    });

    it('windows that straddle a boundary: the minute refuses at :59.9 with Retry-After 1, and the next minute opens again', async () => {
      clock.set('2026-06-01T12:00:58.100Z');
      const { keyClient } = await keyOnPlan(gw, 'edge');
      expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200);
      clock.set('2026-06-01T12:00:59.100Z');
      expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200);
      expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200); // 1s: 2 of 2, 1m: 3 of 3
      clock.set('2026-06-01T12:00:59.900Z');
      const refused = await keyClient.get('/api/auth/get-session');
      expect(refused.status).to.equal(429);
      // Both windows are spent; the first one the key declares (shortest) is named.
      expect(refused.body).to.include({ code: 'RATE_LIMITED', window: '1s' });
      expect(refused.headers['retry-after']).to.equal('1');
      clock.set('2026-06-01T12:01:00.000Z');
      const opened = await keyClient.get('/api/auth/get-session');
      expect(opened.status).to.equal(200);
      const state = fields(opened.headers, 'RateLimit');
      expect(Object.fromEntries(state.get('1m')!)).to.deep.equal({ r: 2, t: 60 });
      expect(Object.fromEntries(state.get('1s')!)).to.deep.equal({ r: 1, t: 1 });
      expect(state.get('day')!.get('r')).to.equal(996);
      // At :30 the minute holds 2 more; at :31 the second is fresh but the minute alone refuses.
      clock.set('2026-06-01T12:01:30.000Z');
      expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200);
      expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200);
      clock.set('2026-06-01T12:01:31.000Z');
      const byMinute = await keyClient.get('/api/auth/get-session');
      expect(byMinute.status).to.equal(429);
      expect(byMinute.body.window).to.equal('1m');
      expect(byMinute.headers['retry-after']).to.equal('29');
      expect(fields(byMinute.headers, 'RateLimit').get('1s')!.get('r')).to.equal(2);
    });

    it('when the day is exhausted too, the day\'s answer wins (QUOTA_EXCEEDED)', async () => {
      clock.set('2026-06-01T13:00:00.100Z');
      const { keyClient } = await keyOnPlan(gw, 'dayFirst');
      for (let i = 0; i < 3; i++) expect((await keyClient.get('/api/auth/get-session')).status).to.equal(200);
      const refused = await keyClient.get('/api/auth/get-session');
      expect(refused.status).to.equal(429);
      expect(refused.body.code).to.equal('QUOTA_EXCEEDED');
      expect(refused.body).not.to.have.property('window');
    });

    it('/api/mcp answers the same 429 RATE_LIMITED (not the OAuth 401), and usage counts the refusals', async () => {
      clock.set('2026-06-01T14:00:00.100Z');
      const { client, key, keyClient } = await keyOnPlan(gw, 'edge');
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await rpc(keyClient, initializeMessage));
      expect(answers.slice(0, 2).map((r) => r.status)).to.deep.equal([200, 200]);
      expect(answers[2]!.status).to.equal(429);
      expect(answers[2]!.body).to.include({ code: 'RATE_LIMITED', window: '1s' });
      expect(answers[2]!.headers['retry-after']).to.equal('1');
      expect(answers[2]!.headers['www-authenticate']).to.equal(undefined);
      await ticker.runAll();
      const usage = await client.get(`/api/api-keys/${key.id}/usage?days=1`);
      expect(usage.body.days.at(-1)).to.deep.include({ requests: 3, refused: 1 });
    });

    it('two instances on one store serve exactly a window\'s limit: 100 parallel requests over both, 1m limit 25', async function () {
      this.timeout(60_000);
      clock.set('2026-06-01T15:00:10.000Z');
      const second = await startTestGateway({ counters, clock, database: gw.database, config: { plans } });
      try {
        const { key } = await keyOnPlan(gw, 'minute');
        const clients = [new Client(gw.url).withKey(key.key), new Client(second.url).withKey(key.key)];
        const results = await Promise.all(Array.from({ length: 100 }, (_, i) => clients[i % 2]!.get('/api/auth/get-session')));
        expect(results.filter((r) => r.status === 200)).to.have.length(25);
        expect(results.filter((r) => r.status === 429 && r.body.window === '1m')).to.have.length(75);
        const remaining = results.filter((r) => r.status === 200).map((r) => Number(fields(r.headers, 'RateLimit').get('1m')!.get('r')));
        expect(remaining.sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 25 }, (_, i) => i));
      } finally {
        await second.stop();
      }
    });
  });
}

describe('rate windows: the counter store down', () => {
  it('a key with windows fails closed with 503 SERVICE_UNAVAILABLE', async () => {
    const gw = await startTestGateway({ counters: 'redis', redisUrl: 'redis://127.0.0.1:1' });
    try {
      const { user } = await signUp(gw.url);
      const { generateKey, keyStart } = await import('../../../src/services/keys/format.ts');
      const { sha256 } = await import('../../../src/services/secrets.ts');
      const key = generateKey('key_');
      await gw.pool.query(`INSERT INTO apikeys (user_id, name, key_hash, start, prefix, request_quota, rate_limits)
        VALUES ($1, 'k', $2, $3, 'key_', 10, '[{"window":"1s","limit":5}]')`, [user.id, sha256(key), keyStart(key)]);
      const res = await new Client(gw.url).withKey(key).get('/api/auth/get-session');
      expect(res.status).to.equal(503);
      expect(res.body.code).to.equal('SERVICE_UNAVAILABLE');
    } finally {
      await gw.stop();
    }
  });
});

describe('rate windows: configuration checked at start', () => {
  const load = (overrides: Record<string, unknown>) => () => loadConfig({ env: {}, overrides });
  it('accepts the documented shape', () => {
    const c = loadConfig({ env: {}, overrides: { plans: { free: {}, pro: { apiRateLimit: 100000, rateLimits: [{ window: '1s', limit: 20 }, { window: '1m', limit: 600 }] } }, defaultRateLimits: [{ window: '1h', limit: 50 }] } });
    expect(c.defaultRateLimits).to.deep.equal([{ window: '1h', limit: 50 }]);
  });
  it('refuses an unknown window, a window twice, more than 4, a limit above the day, a limit that is not a positive integer, naming the field', () => {
    expect(load({ plans: { free: { rateLimits: [{ window: '2s', limit: 5 }] } } })).to.throw(/plans\.free\.rateLimits\.0\.window/);
    expect(load({ plans: { free: { rateLimits: [{ window: '1s', limit: 5 }, { window: '1s', limit: 6 }] } } })).to.throw(/plans\.free\.rateLimits\.1\.window/);
    const five = ['1s', '10s', '1m', '10m', '1h'].map((window) => ({ window, limit: 1 }));
    expect(load({ plans: { free: { rateLimits: five } } })).to.throw(/plans\.free\.rateLimits.*at most 4/);
    expect(load({ plans: { free: { apiRateLimit: 10, rateLimits: [{ window: '1m', limit: 11 }] } } })).to.throw(/plans\.free\.rateLimits\.0\.limit/);
    expect(load({ defaultApiRateLimit: 10, defaultRateLimits: [{ window: '1m', limit: 11 }] })).to.throw(/defaultRateLimits\.0\.limit/);
    expect(load({ defaultRateLimits: [{ window: '1m', limit: 0 }] })).to.throw(/defaultRateLimits\.0\.limit/);
  });
});
