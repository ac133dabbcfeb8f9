import { expect } from 'chai';
import { startTestGateway, testClock, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { requireRedis } from '../../support/redis.ts';

// Every limit on keys (count, daily creates, request quota) and the error it answers, with each counter store.
for (const counters of ['redis', 'postgres'] as const) {
  describe(`API key limits (Variant A, ${counters} counters)`, () => {
    let gw: TestGateway;
    const clock = testClock('2026-03-10T12:00:00Z');
    before(async function () {
      if (counters === 'redis') await requireRedis(this);
      gw = await startTestGateway({ counters, clock, config: { apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 10, maxCreatesPerDay: 20 } } });
    });
    after(async () => gw?.stop());
    const liveKeys = async (userId: string) =>
      (await gw.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1 AND revoked_at IS NULL', [userId])).rows[0].n as number;

    describe('maxKeysPerUser (10)', () => {
      it('the 11th key is refused with 400 API_KEY_LIMIT and a detail that says what to do', async () => {
        const { client, user } = await signUp(gw.url);
        for (let i = 0; i < 10; i++) expect((await client.post('/api/api-keys', { name: `k${i}` })).status).to.equal(201);
        const res = await client.post('/api/api-keys', { name: 'eleventh' });
        expect(res.status).to.equal(400);
        expect(res.body).to.include({ code: 'API_KEY_LIMIT', status: 400 });
        expect(res.body.detail).to.match(/Revoke one/);
        expect(await liveKeys(user.id)).to.equal(10);
      });

      it('when 25 creates run in parallel, exactly 10 keys exist', async () => {
        const { client, user } = await signUp(gw.url);
        const results = await Promise.all(Array.from({ length: 25 }, (_, i) => client.post('/api/api-keys', { name: `p${i}` })));
        const statuses = results.map((r) => r.status);
        expect(statuses.filter((s) => s === 201)).to.have.length(10);
        expect(statuses.filter((s) => s !== 201).every((s) => s === 400)).to.equal(true);
        expect(await liveKeys(user.id)).to.equal(10);
      });

      it('when 25 parallel creates are split over two gateway instances on one database, exactly 10 keys exist', async () => {
        const second = await startTestGateway({ counters, clock, database: gw.database, config: gw.config.apiKeys.enabled ? { apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 10, maxCreatesPerDay: 20 } } : {} });
        try {
          const { client, user } = await signUp(gw.url);
          const other = new Client(second.url);
          other.cookies = client.cookies;
          const results = await Promise.all(Array.from({ length: 25 }, (_, i) => (i % 2 ? other : client).post('/api/api-keys', { name: `s${i}` })));
          expect(results.filter((r) => r.status === 201)).to.have.length(10);
          expect(await liveKeys(user.id)).to.equal(10);
        } finally {
          await second.stop();
        }
      });

      it('a revoked key no longer counts as held', async () => {
        const { client } = await signUp(gw.url);
        const ids: string[] = [];
        for (let i = 0; i < 10; i++) ids.push((await client.post('/api/api-keys', { name: `k${i}` })).body.id);
        await client.delete(`/api/api-keys/${ids[0]}`);
        expect((await client.post('/api/api-keys', { name: 'replacement' })).status).to.equal(201);
      });
    });

    describe('maxCreatesPerDay (20, per UTC day)', () => {
      it('revoke-and-recreate cannot beat it: the 21st create of the day answers 429 API_KEY_DAILY_LIMIT with Retry-After to midnight UTC', async () => {
        clock.set('2026-03-10T23:00:00Z');
        const { client, user } = await signUp(gw.url);
        for (let i = 0; i < 20; i++) {
          const created = await client.post('/api/api-keys', { name: `d${i}` });
          expect(created.status, `create ${i}`).to.equal(201);
          expect((await client.delete(`/api/api-keys/${created.body.id}`)).status).to.equal(204);
        }
        const res = await client.post('/api/api-keys', { name: 'one too many' });
        expect(res.status).to.equal(429);
        expect(res.body.code).to.equal('API_KEY_DAILY_LIMIT');
        expect(Number(res.headers['retry-after'])).to.be.within(3599, 3600);
        expect(await liveKeys(user.id)).to.equal(0);
      });

      it('the next UTC day opens again (clock moved, no sleeping)', async () => {
        clock.set('2026-03-11T23:59:00Z');
        const { client } = await signUp(gw.url);
        for (let i = 0; i < 20; i++) await client.delete(`/api/api-keys/${(await client.post('/api/api-keys', { name: `d${i}` })).body.id}`);
        expect((await client.post('/api/api-keys', { name: 'late' })).status).to.equal(429);
        clock.set('2026-03-12T00:00:01Z');
        expect((await client.post('/api/api-keys', { name: 'after midnight' })).status).to.equal(201);
      });

      it('a create refused by maxKeysPerUser does not spend a daily create', async () => {
        clock.set('2026-03-13T10:00:00Z');
        const small = await startTestGateway({ counters, clock, config: { apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 1, maxCreatesPerDay: 2 } } });
        try {
          const { client } = await signUp(small.url);
          const first = await client.post('/api/api-keys', { name: 'a' });
          for (let i = 0; i < 5; i++) expect((await client.post('/api/api-keys', { name: 'b' })).status).to.equal(400);
          await client.delete(`/api/api-keys/${first.body.id}`);
          expect((await client.post('/api/api-keys', { name: 'second of the day' })).status).to.equal(201);
        } finally {
          await small.stop();
        }
      });
    });
  });
}

describe('API key limits when the counter store does not answer', () => {
  it('Redis unreachable: the create answers 503 SERVICE_UNAVAILABLE and no key row is written', async () => {
    const gw = await startTestGateway({ counters: 'redis', redisUrl: 'redis://127.0.0.1:1' });
    try {
      const { client, user } = await signUp(gw.url);
      const res = await client.post('/api/api-keys', { name: 'k' });
      expect(res.status).to.equal(503);
      expect(res.body.code).to.equal('SERVICE_UNAVAILABLE');
      const { rows } = await gw.pool.query('SELECT count(*)::int n FROM apikeys WHERE user_id = $1', [user.id]);
      expect(rows[0].n).to.equal(0);
      const audit = await gw.pool.query('SELECT count(*)::int n FROM audit_log WHERE owner_user_id = $1', [user.id]);
      expect(audit.rows[0].n).to.equal(0);
      expect((await client.get('/healthz')).status).to.equal(200);
      expect((await client.get('/readyz')).status).to.equal(503);
    } finally {
      await gw.stop();
    }
  });
});
