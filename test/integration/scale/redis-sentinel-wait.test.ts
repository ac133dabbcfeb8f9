import { expect } from 'chai';
import { Redis } from 'ioredis';
import { commandExists, startSentinelSet, until, type SentinelSet } from '../../support/engines.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';

// With redis.waitReplicas 1 every counter write waits for the replica, so a planned
// failover (SENTINEL FAILOVER) under traffic loses no count and the limit is never exceeded.

const LIMIT = 400;

describe('a planned Sentinel failover under traffic with redis.waitReplicas 1', function () {
  this.timeout(120_000);
  let set: SentinelSet;
  let gw: TestGateway;

  before(async function () {
    if (!commandExists('redis-server')) {
      this.test!.parent!.title += ' (skipped: redis-server not installed)';
      this.skip();
    }
    set = await startSentinelSet();
    gw = await startTestGateway({
      env: { REDIS_SENTINELS: set.sentinels, REDIS_SENTINEL_NAME: set.name },
      config: { redis: { waitReplicas: 1, waitTimeoutMs: 200 }, plans: { free: {}, capped: { apiRateLimit: LIMIT } } },
    });
  });
  after(async () => {
    await gw?.stop();
    await set?.stop();
  });

  it('serves no request over the limit', async () => {
    const { client, user } = await signUp(gw.url);
    await gw.pool.query("UPDATE users SET plan = 'capped' WHERE id = $1", [user.id]);
    const key = (await client.post('/api/api-keys', { name: 'failover' })).body.key as string;
    const [host, port] = set.sentinels.split(',')[0]!.split(':');
    const sentinel = new Redis({ host, port: Number(port) });
    let served = 0;
    let refused = 0;
    let failedOver = false;
    const worker = async () => {
      while (refused < 20) {
        const res = await fetch(`${gw.url}/api/auth/get-session`, { headers: { 'x-api-key': key } });
        await res.arrayBuffer();
        if (res.status === 200) served++;
        else if (res.status === 429 && failedOver) refused++;
        else if (res.status !== 503 && res.status !== 429) throw new Error(`unexpected ${res.status}`);
        if (served >= LIMIT / 2 && !failedOver) {
          failedOver = true;
          await sentinel.call('SENTINEL', 'FAILOVER', set.name);
        }
      }
    };
    try {
      await Promise.all([worker(), worker(), worker(), worker()]);
      await until('the replica promoted', async () => (await set.currentMaster()) === set.replicaPort, 20_000);
    } finally {
      sentinel.disconnect();
    }
    expect(served).to.be.at.most(LIMIT);
  });
});
