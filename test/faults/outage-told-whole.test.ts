import { expect } from 'chai';
import { createTestDatabase, serverUrl, type TestDatabase } from '../support/db.ts';
import { startEcho, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { until } from '../support/until.ts';
import { FaultRedis } from './support.ts';
import { startFreezableProxy, type FreezableProxy } from './freeze-proxy.ts';

// An outage told whole: its end is logged when the store answers again even if no request follows
// (the store is probed while it is out), the end counts the requests clients saw refused, and the
// instance's background work (heartbeat, usage tallies, policy checks) adds no line of its own per
// round while the store is out.

interface Line { level: number; msg: string; store?: string; lastedMs?: number; refused?: number }
const parse = (logs: string[]) => logs.map((l) => JSON.parse(l) as Line);
const began = (lines: Line[], store: string) => lines.filter((l) => l.store === store && / unavailable/.test(l.msg));
const ended = (lines: Line[], store: string) => lines.filter((l) => l.store === store && l.msg.includes('available again'));

describe('faults: an outage is told whole', function () {
  this.timeout(90_000);
  let echo: Echo;
  before(async () => void (echo = await startEcho()));
  after(async () => echo?.close());

  describe("the counters' Redis killed, started, and then no request", () => {
    let redis: FaultRedis;
    let gw: TestGateway;
    before(async () => {
      redis = await FaultRedis.start();
      gw = await startTestGateway({ counters: 'redis', redisUrl: redis.url, quotaLease: { floor: Number.MAX_SAFE_INTEGER }, config: { upstream: { url: echo.url } } });
    });
    after(async () => {
      await gw?.stop();
      await redis?.kill();
    });

    it('logs the end once Redis answers, counting every 503 the clients saw', async () => {
      const { client } = await signUp(gw.url);
      const key = new Client(gw.url).withKey((await client.post('/api/api-keys', { name: 'k' })).body.key as string);
      expect((await key.get('/api/projects')).status).to.equal(200);
      const from = gw.logs.length;
      await redis.kill();
      // Requests in parallel: several of them fail fast without reaching Redis, and each is a 503 a client saw.
      const statuses = (await Promise.all(Array.from({ length: 30 }, () => key.get('/api/projects')))).map((r) => r.status);
      for (let i = 0; i < 10; i++) statuses.push((await key.get('/api/projects')).status);
      expect(statuses.every((s) => s === 503), String(statuses)).to.equal(true);
      await redis.start();
      const answeredAt = Date.now();
      // No request now: the end is the store check's to notice.
      await gw.waitForLog(/available again/, { from, timeoutMs: 3_000 });
      const lines = parse(gw.logs.slice(from));
      const store = 'counter store (Redis)';
      expect(began(lines, store), 'lines saying it began').to.have.length(1);
      expect(ended(lines, store), 'lines saying it ended').to.have.length(1);
      expect(ended(lines, store)[0]!.refused, 'requests answered 503 during the outage').to.equal(statuses.length);
      console.log(`      end logged ${Date.now() - answeredAt} ms after Redis was started, refused ${statuses.length}`);
    });
  });

  describe('PostgreSQL frozen while the background work runs', () => {
    let db: TestDatabase;
    let proxy: FreezableProxy;
    let redis: FaultRedis;
    let gw: TestGateway;
    before(async () => {
      db = await createTestDatabase('kg_told');
      const server = new URL(await serverUrl());
      proxy = await startFreezableProxy(server.hostname, Number(server.port || 5432));
      redis = await FaultRedis.start();
      gw = await startTestGateway({
        database: { url: proxy.urlFor(db.url), name: db.name, drop: async () => {} }, counters: 'redis', redisUrl: redis.url,
        heartbeatMs: 250, quotaLease: { floor: Number.MAX_SAFE_INTEGER }, config: { upstream: { url: echo.url } },
      });
    });
    after(async () => {
      proxy?.thaw();
      await gw?.stop();
      await redis?.kill();
      await proxy?.stop();
      await db?.drop();
    });

    it('one line when it begins, one when it ends, none per round of background work', async () => {
      const { client } = await signUp(gw.url);
      const key = new Client(gw.url).withKey((await client.post('/api/api-keys', { name: 'k' })).body.key as string);
      expect((await key.get('/api/projects')).status).to.equal(200);
      // A round of background work done while the database answers, so the rounds below are the outage's.
      await gw.runPeriodic();
      const from = gw.logs.length;
      proxy.freeze();
      // A cached key is served meanwhile and leaves usage tallies to write; each round flushes them,
      // checks the policy version and (every 250 ms) records the heartbeat, and each fails.
      for (let round = 0; round < 2; round++) {
        expect((await key.get('/api/projects')).status).to.equal(200);
        await gw.runPeriodic();
      }
      const whileFrozen = parse(gw.logs.slice(from));
      // The policy's own state is told once each way (it could not be checked, then it could).
      const loud = whileFrozen.filter((l) => l.level >= 40 && l.store === undefined && !/policy reload/.test(l.msg)).map((l) => l.msg);
      expect(loud, 'warnings and errors beside the outage lines').to.deep.equal([]);
      expect(whileFrozen.filter((l) => /policy reload failed/.test(l.msg)).length, 'policy lag lines').to.be.at.most(1);
      proxy.thaw();
      // No request now: the end is the store check's to notice.
      await until('the outage told as ended', () => ended(parse(gw.logs.slice(from)), 'database').length > 0, 5_000);
      // Two more rounds of background work, each of which would tell the outage again if it were to.
      await gw.runPeriodic();
      await gw.runPeriodic();
      const lines = parse(gw.logs.slice(from));
      expect(began(lines, 'database'), 'lines saying it began').to.have.length(1);
      expect(ended(lines, 'database'), 'lines saying it ended').to.have.length(1);
    });
  });
});
