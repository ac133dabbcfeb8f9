import { expect } from 'chai';
import { Redis } from 'ioredis';
import { commandExists, startSentinelSet, until, type SentinelSet } from '../../support/engines.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

// With REDIS_SENTINELS the counters follow a failover without a restart, and the
// old master, back empty, is never written to: counts go on from where they were.

describe('a gateway on a Redis Sentinel set', function () {
  let set: SentinelSet;
  let gw: TestGateway;

  before(async function () {
    this.timeout(60_000);
    if (!commandExists('redis-server')) {
      this.test!.parent!.title += ' (skipped: redis-server not installed)';
      this.skip();
    }
    set = await startSentinelSet();
    gw = await startTestGateway({ env: { REDIS_SENTINELS: set.sentinels, REDIS_SENTINEL_NAME: set.name }, config: { plans: { free: {}, ten: { apiRateLimit: 10 } } } });
  });
  after(async () => {
    await gw?.stop();
    await set?.stop();
  });

  it('when the master is killed, then service comes back without a restart, the count goes on, and the old master back empty does not reset it', async function () {
    this.timeout(60_000);
    const { client, user } = await signUp(gw.url);
    await gw.pool.query("UPDATE users SET plan = 'ten' WHERE id = $1", [user.id]);
    const created = (await client.post('/api/api-keys', { name: 'failover' })).body;
    const key = new Client(gw.url).withKey(created.key);
    for (const left of [9, 8, 7, 6]) expect((await key.get('/api/auth/get-session')).headers['ratelimit-remaining']).to.equal(String(left));

    // Acknowledged by the replica before the kill: the bound on lost counts covers only what reached it.
    const master = new Redis({ port: set.masterPort, host: '127.0.0.1' });
    expect(await master.call('WAIT', '1', '2000')).to.equal(1);
    master.disconnect();

    await set.killMaster();
    const killedAt = Date.now();
    const statuses: number[] = [];
    let back: Awaited<ReturnType<Client['get']>> | null = null;
    const took = await until('service back after failover', async () => {
      const res = await key.get('/api/auth/get-session');
      statuses.push(res.status);
      if (res.status === 200) back = res;
      return res.status === 200;
    }, 30_000, 200);
    console.log(`      (failover: served again ${took} ms after the master was killed; ${statuses.length - 1} requests answered 503 meanwhile)`);
    expect(statuses.slice(0, -1).every((s) => s === 503)).to.equal(true);
    expect(await set.currentMaster()).to.equal(set.replicaPort);
    // 5 if no refused request was counted; an increment whose reply was lost may count one more.
    const remaining = Number(back!.headers['ratelimit-remaining']);
    expect(remaining).to.be.at.most(5).and.at.least(5 - (statuses.length - 1));
    expect(Date.now() - killedAt).to.be.below(30_000);

    await set.restartOldMaster();
    await until('the old master is demoted to a replica', async () => {
      const r = new Redis({ port: set.masterPort, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        return String(await r.info('replication')).includes('role:slave');
      } finally {
        r.disconnect();
      }
    }, 30_000, 200);
    const next = await key.get('/api/auth/get-session');
    expect(next.status).to.equal(200);
    expect(Number(next.headers['ratelimit-remaining'])).to.equal(remaining - 1);
  });
});
