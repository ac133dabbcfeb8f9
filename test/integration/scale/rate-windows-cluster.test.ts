import { expect } from 'chai';
import type { RedisCluster } from '../../support/engines.ts';
import { testClock, type TestGateway } from '../../support/gateway.ts';
import type { TestDatabase } from '../../support/db.ts';
import { Client, signUp } from '../../support/http.ts';
import { clusterPair, nodesHolding } from './cluster-support.ts';

// Rate windows on a 3-master Redis Cluster: a key's day and windows are counted by one script,
// so they must share a slot (a Cluster refuses a script across slots); two gateways racing keys
// that hash to different shards serve exactly each window's limit.

const config = {
  plans: { free: {}, bursty: { apiRateLimit: 1000, rateLimits: [{ window: '1s', limit: 50 }, { window: '1m', limit: 10 }] } },
  apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 50, maxCreatesPerDay: 20 },
};

const portsHolding = async (cluster: RedisCluster, id: string): Promise<Set<number>> => new Set((await nodesHolding(cluster, `*${id}*`)).values());

describe('rate windows on a 3-master Redis Cluster, two gateways', function () {
  let cluster: RedisCluster;
  let database: TestDatabase;
  let a: TestGateway;
  let b: TestGateway;
  const clock = testClock('2026-06-02T09:00:05.000Z');

  clusterPair({ config, clock }, (p) => ({ cluster, database, a, b } = p));

  it('eight keys race 30 requests each over both gateways against a 1m limit of 10: exactly 10 each served, every counter of a key on one shard', async function () {
    this.timeout(60_000);
    const { client, user } = await signUp(a.url);
    await a.pool.query("UPDATE users SET plan = 'bursty' WHERE id = $1", [user.id]);
    const keys: { id: string; key: string }[] = [];
    for (let i = 0; i < 8; i++) keys.push((await client.post('/api/api-keys', { name: `w${i}` })).body);
    const results = await Promise.all(keys.flatMap((k) => Array.from({ length: 30 }, (_, i) =>
      new Client(i % 2 ? a.url : b.url).withKey(k.key).get('/api/auth/get-session').then((r) => ({ id: k.id, status: r.status, window: r.body?.window })))));
    const shards = new Set<number>();
    for (const k of keys) {
      const mine = results.filter((r) => r.id === k.id);
      expect(mine.filter((r) => r.status === 200), `key ${k.id}`).to.have.length(10);
      expect(mine.filter((r) => r.status === 429 && r.window === '1m'), `key ${k.id}`).to.have.length(20);
      const held = await portsHolding(cluster, k.id);
      expect(held.size, `key ${k.id}'s day and windows on one shard`).to.equal(1);
      shards.add([...held][0]!);
    }
    expect(shards.size, 'the keys span several shards').to.be.at.least(2);
  });
});
