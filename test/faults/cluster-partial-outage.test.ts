import { expect } from 'chai';
import { commandExists, startRedisCluster, type RedisCluster } from '../support/engines.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { until } from '../support/until.ts';
import { nodesHolding } from '../integration/scale/cluster-support.ts';

// A Redis Cluster run with cluster-require-full-coverage no loses one master under traffic: keys
// counted on the live masters are still served, so the outage is told as the part that is out (the
// dead master's address), not as the whole counter store; and once the master answers again its end
// is told with no request needed.

interface Line { msg: string; store?: string; part?: string; refused?: number }

describe('faults: one master of a Redis Cluster down, told as part of the store', function () {
  this.timeout(90_000);
  let cluster: RedisCluster;
  let gw: TestGateway;
  before(async function () {
    if (!commandExists('redis-server') || !commandExists('redis-cli')) this.skip();
    cluster = await startRedisCluster({ requireFullCoverage: false });
    gw = await startTestGateway({ env: { REDIS_CLUSTER_NODES: cluster.nodes }, quotaLease: { floor: Number.MAX_SAFE_INTEGER }, config: { apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 50 } } });
  });
  after(async () => {
    await gw?.stop();
    await cluster?.stop();
  });

  it('names the dead master, keeps serving the others, and tells the end unasked', async () => {
    const { client } = await signUp(gw.url);
    const keys: { id: string; key: string }[] = [];
    for (let i = 0; i < 9; i++) keys.push((await client.post('/api/api-keys', { name: `k${i}` })).body);
    const ask = (k: { key: string }) => new Client(gw.url).withKey(k.key).get('/api/auth/get-session');
    for (const k of keys) expect((await ask(k)).status).to.equal(200);
    const where = await nodesHolding(cluster, 'keygate:quota:*');
    const home = new Map(keys.map((k) => [k.id, [...where].find(([name]) => name.includes(k.id))?.[1]]));
    const victim = home.get(keys[0]!.id)!;
    const onLive = keys.filter((k) => home.get(k.id) !== victim);
    expect(onLive, 'keys counted on the other masters').to.not.be.empty;

    const from = gw.logs.length;
    await cluster.kill(victim);
    let refused = 0;
    for (let round = 0; round < 3; round++) {
      for (const k of keys) {
        const status = (await ask(k)).status;
        if (status === 503) refused += 1;
        else expect(status, 'a key on a live master').to.equal(200);
        if (home.get(k.id) !== victim) expect(status, 'a key on a live master').to.equal(200);
      }
    }
    expect(refused, 'keys on the dead master refused').to.be.greaterThan(0);
    const lines = () => gw.logs.slice(from).map((l) => JSON.parse(l) as Line);
    const began = lines().filter((l) => /unavailable/.test(l.msg));
    expect(began, 'lines saying the outage began: ' + JSON.stringify(began.map((l) => [l.msg, l.part]))).to.have.length(1);
    expect(began[0]!.part, 'the part of the store that is out').to.be.a('string').and.include(`:${victim}`);
    expect(began[0]!.msg).to.include('partly unavailable');

    await cluster.restart(victim);
    await until('the end told with no request', () => lines().some((l) => l.msg.includes('available again')), 15_000, 50);
    const ended = lines().filter((l) => l.msg.includes('available again'));
    expect(ended).to.have.length(1);
    expect(ended[0]!.refused, 'requests answered 503 meanwhile').to.equal(refused);
  });
});
