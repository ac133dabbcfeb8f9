import { expect } from 'chai';
import { manualEvery, startTestGateway, useGateway, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { requireRedis } from '../../support/redis.ts';
import { Client, signUp } from '../../support/http.ts';

const DAY = 86_400_000;
const iso = (d: Date) => d.toISOString().slice(0, 10);

async function usageRows(gw: TestGateway, keyId: string): Promise<{ day: string; requests: number; refused: number }[]> {
  const { rows } = await gw.pool.query(
    "SELECT to_char(day, 'YYYY-MM-DD') AS day, requests::int, refused::int FROM key_usage_daily WHERE key_id = $1 ORDER BY day", [keyId]);
  return rows;
}

async function writesMetric(gw: TestGateway): Promise<number> {
  const text = (await new Client(gw.url).get('/metrics')).text;
  return Number(/^keygate_usage_writes_total (\d+)/m.exec(text)?.[1] ?? NaN);
}

for (const counters of ['postgres', 'redis'] as const) {
  describe(`API keys: usage history with the ${counters} counter store`, () => {
    let gw: TestGateway;
    const ticker = manualEvery();
    before(async function () {
      if (counters === 'redis') await requireRedis(this);
      gw = await startTestGateway({ counters, usageFlush: { every: ticker.every }, config: { plans: { free: { apiRateLimit: 3 } } } });
    });
    after(async () => gw?.stop());

    it('counts every request the key made and the 429s, one entry per UTC day, zeros for quiet days, today last', async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      const asKey = new Client(gw.url).withKey(key.key);
      gw.clock.advance(-2 * DAY);
      try {
        for (let i = 0; i < 2; i++) expect((await asKey.get('/api/auth/get-session')).status).to.equal(200);
      } finally {
        gw.clock.advance(2 * DAY);
      }
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await asKey.get('/api/auth/get-session')).status);
      expect(statuses).to.deep.equal([200, 200, 200, 429, 429]);

      // Visible once the periodic flush has run (every 5 s); a read never flushes.
      await ticker.runAll();
      const res = await client.get(`/api/api-keys/${key.id}/usage?days=7`);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ keyId: key.id, limit: 3 });
      const today = gw.clock.now();
      expect(res.body.days.map((d: { date: string }) => d.date)).to.deep.equal(
        [6, 5, 4, 3, 2, 1, 0].map((n) => iso(new Date(today.getTime() - n * DAY))));
      expect(res.body.days[4]).to.deep.equal({ date: iso(new Date(today.getTime() - 2 * DAY)), requests: 2, refused: 0 });
      expect(res.body.days[5]).to.deep.include({ requests: 0, refused: 0 });
      expect(res.body.days[6]).to.deep.include({ requests: 5, refused: 2 });
      // The default is 30 days.
      expect((await client.get(`/api/api-keys/${key.id}/usage`)).body.days).to.have.length(30);
    });

    it('counts a request at 23:59:59.999 UTC on its day and the next one, a millisecond later, on the next', async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'midnight' })).body;
      const asKey = new Client(gw.url).withKey(key.key);
      const started = gw.clock.now();
      const midnight = Math.ceil((started.getTime() + 1) / DAY) * DAY;
      gw.clock.set(new Date(midnight - 1).toISOString());
      try {
        expect((await asKey.get('/api/auth/get-session')).status).to.equal(200);
        gw.clock.advance(1);
        expect((await asKey.get('/api/auth/get-session')).status).to.equal(200);
        gw.clock.advance(-1);
        expect((await asKey.get('/api/auth/get-session')).status).to.equal(200);
        await ticker.runAll();
        expect(await usageRows(gw, key.id)).to.deep.equal([
          { day: iso(new Date(midnight - 1)), requests: 2, refused: 0 },
          { day: iso(new Date(midnight)), requests: 1, refused: 0 },
        ]);
      } finally {
        gw.clock.set(started.toISOString());
      }
    });

    it('writes tallies in one batch when the flush interval ticks (at most every 5 s), never one write per request', async () => {
      expect(ticker.intervals.every((ms) => ms <= 5000)).to.equal(true);
      const { client } = await signUp(gw.url);
      const a = (await client.post('/api/api-keys', { name: 'a' })).body;
      const b = (await client.post('/api/api-keys', { name: 'b' })).body;
      const writesBefore = await writesMetric(gw);
      for (const k of [a, b, a, b, a]) await new Client(gw.url).withKey(k.key).get('/api/auth/get-session');
      expect(await usageRows(gw, a.id)).to.deep.equal([]);
      await ticker.runAll();
      const today = iso(gw.clock.now());
      const deadline = Date.now() + 2000;
      while ((await usageRows(gw, a.id)).length === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      expect(await usageRows(gw, a.id)).to.deep.equal([{ day: today, requests: 3, refused: 0 }]);
      expect(await usageRows(gw, b.id)).to.deep.equal([{ day: today, requests: 2, refused: 0 }]);
      expect((await writesMetric(gw)) - writesBefore).to.equal(1);
    });

    it('drops days older than 90 when it writes', async () => {
      const { client } = await signUp(gw.url);
      const k = (await client.post('/api/api-keys', { name: 'old' })).body;
      const old = iso(new Date(gw.clock.now().getTime() - 91 * DAY));
      const kept = iso(new Date(gw.clock.now().getTime() - 89 * DAY));
      await gw.pool.query('INSERT INTO key_usage_daily (key_id, day, requests, refused) VALUES ($1, $2, 7, 0), ($1, $3, 5, 1)', [k.id, old, kept]);
      // The sweep runs on the first flush of each UTC day: move to tomorrow so it runs again.
      gw.clock.advance(DAY);
      try {
        await new Client(gw.url).withKey(k.key).get('/api/auth/get-session');
        await ticker.runAll();
        expect((await usageRows(gw, k.id)).map((r) => r.day)).to.not.include(old);
        const all = (await client.get(`/api/api-keys/${k.id}/usage?days=90`)).body.days;
        expect(all[0].date).to.equal(iso(new Date(gw.clock.now().getTime() - 89 * DAY)));
      } finally {
        gw.clock.advance(-DAY);
      }
    });
  });
}

describe('API keys: usage survives a gateway restart and is shared by instances', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => database?.drop());

  it('counts served by an instance that stopped are read by the next one', async () => {
    const first = await startTestGateway({ database, usageFlush: { every: manualEvery().every } });
    const { client } = await signUp(first.url);
    const key = (await client.post('/api/api-keys', { name: 'k' })).body;
    for (let i = 0; i < 4; i++) await new Client(first.url).withKey(key.key).get('/api/auth/get-session');
    // No tick: only the flush on close writes them.
    await first.stop();
    const second = await startTestGateway({ database, usageFlush: { every: manualEvery().every } });
    try {
      const again = new Client(second.url);
      again.cookies = client.cookies;
      const res = await again.get(`/api/api-keys/${key.id}/usage?days=1`);
      expect(res.status).to.equal(200);
      expect(res.body.days).to.deep.equal([{ date: iso(second.clock.now()), requests: 4, refused: 0 }]);
    } finally {
      await second.stop();
    }
  });
});

describe('API keys: who may read usage', () => {
  let gw: TestGateway;
  useGateway({}, (g) => (gw = g));

  it("a user gets 404 for another user's key; an admin reads any key's usage; others get 403", async () => {
    const owner = await signUp(gw.url);
    const other = await signUp(gw.url);
    const admin = await signUp(gw.url);
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
    const key = (await owner.client.post('/api/api-keys', { name: 'k' })).body;
    await new Client(gw.url).withKey(key.key).get('/api/auth/get-session');
    await gw.runPeriodic();
    expect((await other.client.get(`/api/api-keys/${key.id}/usage`)).status).to.equal(404);
    expect((await owner.client.get('/api/api-keys/not-a-uuid/usage')).status).to.equal(404);
    const byAdmin = await admin.client.get(`/api/admin/api-keys/${key.id}/usage?days=2`);
    expect(byAdmin.status).to.equal(200);
    expect(byAdmin.body.days[1].requests).to.equal(1);
    expect((await other.client.get(`/api/admin/api-keys/${key.id}/usage`)).status).to.equal(403);
    expect((await new Client(gw.url).withKey(key.key).get(`/api/admin/api-keys/${key.id}/usage`)).status).to.equal(403);
    // A key reads its own usage (a read, open to keys). Every request the key authenticated
    // counts: the first one, the refused admin read, and (after the next flush) this one.
    await gw.runPeriodic();
    const own = await new Client(gw.url).withKey(key.key).get(`/api/api-keys/${key.id}/usage?days=1`);
    expect(own.status).to.equal(200);
    expect(own.body.days[0].requests).to.equal(2);
    await gw.runPeriodic();
    expect((await owner.client.get(`/api/api-keys/${key.id}/usage?days=1`)).body.days[0].requests).to.equal(3);
    expect((await new Client(gw.url).get(`/api/api-keys/${key.id}/usage`)).status).to.equal(401);
  });

  for (const q of ['days=0', 'days=91', 'days=x', 'days=1.5', 'from=2020-01-01']) {
    it(`refuses ?${q} with 400 VALIDATION_FAILED`, async () => {
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'k' })).body;
      const res = await client.get(`/api/api-keys/${key.id}/usage?${q}`);
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_FAILED');
    });
  }
});
