import { expect } from 'chai';
import { createTestDatabase, serverUrl, type TestDatabase } from '../support/db.ts';
import { startEcho, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { ANSWER_BOUND_MS, drive, holdDown, summary, type Request } from './support.ts';
import { startFreezableProxy, type FreezableProxy } from './freeze-proxy.ts';

// Counters kept in PostgreSQL (no Redis) and PostgreSQL stops answering without closing its
// connections, under traffic from more callers than the counter pool has connections. A request
// that queues for a pool connection and then runs its query must still answer within 2 s: the wait
// for the connection and the query share one deadline rather than each having its own.

const KEYS = 20;
const WORKERS = 20;
const FROZEN_MS = 4_000;

describe('faults: PostgreSQL frozen while it keeps the counters', function () {
  this.timeout(90_000);
  let db: TestDatabase;
  let proxy: FreezableProxy;
  let echo: Echo;
  let gw: TestGateway;
  before(async () => {
    db = await createTestDatabase('kg_pgcount');
    const server = new URL(await serverUrl());
    proxy = await startFreezableProxy(server.hostname, Number(server.port || 5432));
    echo = await startEcho();
    gw = await startTestGateway({
      database: { url: proxy.urlFor(db.url), name: db.name, drop: async () => {} }, counters: 'postgres',
      // Every request counts in the store (no leased block to spend from while it is frozen).
      quotaLease: { floor: Number.MAX_SAFE_INTEGER },
      config: { upstream: { url: echo.url }, defaultApiRateLimit: 1_000_000, apiKeys: { enabled: true, variant: 'A', prefix: 'key_', maxKeysPerUser: 100 } },
    });
  });
  after(async () => {
    proxy?.thaw();
    await gw?.stop();
    await echo?.close();
    await proxy?.stop();
    await db?.drop();
  });

  it('answers every key request within 2 s while frozen, pool wait included', async () => {
    const { client } = await signUp(gw.url);
    const keys: string[] = [];
    for (let i = 0; i < KEYS; i++) keys.push((await client.post('/api/api-keys', { name: `k${i}` })).body.key as string);
    // Each key verified once before the fault: in the instance's cache, so only its count needs the database.
    for (const k of keys) expect((await new Client(gw.url).withKey(k).get('/api/projects')).status).to.equal(200);
    const requests: Request[] = keys.map((k) => ({
      kind: 'key', send: async (signal) => (await fetch(`${gw.url}/api/projects`, { headers: { 'x-api-key': k }, signal }).then(async (r) => (await r.text(), r))).status,
    }));
    const d = drive(requests, WORKERS);
    await d.untilServed('key', 40, 0);
    const frozenAt = d.now();
    await holdDown(FROZEN_MS, { hold: () => proxy.freeze(), release: () => proxy.thaw() });
    const thawedAt = d.now();
    await d.untilServed('key', 20, thawedAt, 20_000);
    await d.stop();

    const during = d.answers.filter((a) => a.at >= frozenAt + 200 && a.at + a.ms <= thawedAt);
    expect(during.filter((a) => a.status === 503).length, `refused while frozen (${summary(during)})`).to.be.greaterThan(0);
    expect(d.answers.filter((a) => a.status !== 200 && a.status !== 503), summary(d.answers)).to.deep.equal([]);
    const slow = d.answers.filter((a) => a.ms > ANSWER_BOUND_MS);
    const slowest = Math.max(...d.answers.map((a) => a.ms));
    expect(slow.length, `answers over ${ANSWER_BOUND_MS} ms of ${d.answers.length} (slowest ${slowest} ms)`).to.equal(0);
    console.log(`      ${WORKERS} callers over ${KEYS} keys, frozen ${FROZEN_MS} ms: ${summary(during)}; slowest answer ${slowest} ms`);
  });
});
