import { expect } from 'chai';
import { manualEvery, startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { connectApp } from '../oauth/support.ts';
import { initializeMessage, rpc } from '../mcp/support.ts';

// One MCP request with an OAuth token put a grant id (not a uuid) into the batch of key
// usage; the one statement that writes the batch then failed on every flush, so no key's usage was
// recorded again. A tally the database will not take must cost that tally only, grant usage lives
// in a table of its own, and reading usage must write nothing.

const day = (d: Date) => d.toISOString().slice(0, 10);

async function keyRows(gw: TestGateway, keyId: string): Promise<{ day: string; requests: string; refused: string }[]> {
  return (await gw.pool.query("SELECT to_char(day, 'YYYY-MM-DD') AS day, requests::text, refused::text FROM key_usage_daily WHERE key_id = $1", [keyId])).rows;
}

async function writesMetric(gw: TestGateway): Promise<number> {
  const text = (await new Client(gw.url).get('/metrics')).text;
  return Number(/^keygate_usage_writes_total (\d+)/m.exec(text)?.[1] ?? NaN);
}

describe('hostile: usage tallies that poison the flush', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  const ticker = manualEvery();
  before(async () => (gw = await startTestGateway({ usageFlush: { every: ticker.every }, config: { plans: { free: { apiRateLimit: 100 } } } })));
  after(async () => gw?.stop());

  describe('when an OAuth token makes an MCP request before keys make theirs', () => {
    it('then every key request is still recorded, and the grant is counted in its own table', async () => {
      const { client: session } = await signUp(gw.url);
      const { accessToken } = await connectApp(gw.url, session, 'Poisoner');
      const key = (await session.post('/api/api-keys', { name: 'k' })).body;
      const asToken = await rpc(new Client(gw.url), initializeMessage, { authorization: `Bearer ${accessToken}` });
      expect(asToken.status, asToken.text).to.equal(200);
      for (let i = 0; i < 3; i++) expect((await new Client(gw.url).withKey(key.key).get('/api/auth/get-session')).status).to.equal(200);

      const from = gw.logs.length;
      await ticker.runAll();
      expect(await keyRows(gw, key.id)).to.deep.equal([{ day: day(gw.clock.now()), requests: '3', refused: '0' }]);
      const grantRows = (await gw.pool.query('SELECT g.requests::int FROM grant_usage_daily g JOIN oauth_grants o ON o.id = g.grant_id WHERE o.user_id = (SELECT user_id FROM apikeys WHERE id = $1)', [key.id])).rows;
      expect(grantRows).to.deep.equal([{ requests: 1 }]);
      expect(gw.logs.slice(from).join('')).to.not.match(/usage tall/);

      // And the next flush writes the next requests: nothing is stuck.
      await new Client(gw.url).withKey(key.key).get('/api/auth/get-session');
      await ticker.runAll();
      expect((await keyRows(gw, key.id))[0]!.requests).to.equal('4');
    });
  });

  describe('when one tally cannot be written (its total would overflow)', () => {
    it('then that tally is dropped and logged, and the others of the batch are written', async () => {
      const { client: session } = await signUp(gw.url);
      const bad = (await session.post('/api/api-keys', { name: 'bad' })).body;
      const good = (await session.post('/api/api-keys', { name: 'good' })).body;
      await ticker.runAll();
      const today = day(gw.clock.now());
      await gw.pool.query('INSERT INTO key_usage_daily (key_id, day, requests, refused) VALUES ($1, $2, 9223372036854775807, 0)', [bad.id, today]);
      for (const k of [bad, good, bad, good]) await new Client(gw.url).withKey(k.key).get('/api/auth/get-session');

      const from = gw.logs.length;
      await ticker.runAll();
      expect(await keyRows(gw, good.id)).to.deep.equal([{ day: today, requests: '2', refused: '0' }]);
      expect((await keyRows(gw, bad.id))[0]!.requests).to.equal('9223372036854775807');
      const dropped = gw.logs.slice(from).filter((l) => /dropped/.test(l));
      expect(dropped).to.have.length(1);
      expect(dropped[0]).to.contain(bad.id).and.to.contain('"level":50');

      // Dropped means gone: the next flush does not try it again, and the good key goes on.
      await new Client(gw.url).withKey(good.key).get('/api/auth/get-session');
      const next = gw.logs.length;
      await ticker.runAll();
      expect((await keyRows(gw, good.id))[0]!.requests).to.equal('3');
      expect(gw.logs.slice(next).join('')).to.not.match(/dropped/);
    });
  });

  describe('when a key owner reads usage while tallies are pending', () => {
    it('then the read writes nothing; the counts appear with the next periodic flush', async () => {
      const { client: session } = await signUp(gw.url);
      const key = (await session.post('/api/api-keys', { name: 'reader' })).body;
      await ticker.runAll();
      const asKey = new Client(gw.url).withKey(key.key);
      for (let i = 0; i < 2; i++) await asKey.get('/api/auth/get-session');

      const writes = await writesMetric(gw);
      const bySession = await session.get(`/api/api-keys/${key.id}/usage?days=1`);
      const byKey = await asKey.get(`/api/api-keys/${key.id}/usage?days=1`);
      expect(bySession.status).to.equal(200);
      expect(byKey.status).to.equal(200);
      expect(await writesMetric(gw)).to.equal(writes);
      expect(await keyRows(gw, key.id)).to.deep.equal([]);

      await ticker.runAll();
      // The two requests and the key's own read.
      expect((await session.get(`/api/api-keys/${key.id}/usage?days=1`)).body.days[0].requests).to.equal(3);
    });
  });
});
