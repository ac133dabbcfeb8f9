import { Redis } from 'ioredis';
import { commandExists, startRedisCluster, type RedisCluster } from '../../support/engines.ts';
import { startTestGateway, type TestGatewayOptions, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

/** Which master holds each counter key matching `pattern`. */
export async function nodesHolding(cluster: RedisCluster, pattern: string): Promise<Map<string, number>> {
  const where = new Map<string, number>();
  for (const port of cluster.ports) {
    const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {});
    try {
      for (const k of await r.keys(pattern)) where.set(k, port);
    } catch {
      // A killed node holds nothing we can read.
    } finally {
      r.disconnect();
    }
  }
  return where;
}

export interface ClusterPair { cluster: RedisCluster; database: TestDatabase; a: TestGateway; b: TestGateway }

/**
 * A 3-master Redis Cluster and two gateways counting in it over one database, for the suite; the
 * suite is skipped, by name, where redis-server or redis-cli is missing.
 */
export function clusterPair(opts: Pick<TestGatewayOptions, 'config' | 'clock'>, use: (p: ClusterPair) => void): void {
  let p: Partial<ClusterPair> = {};
  before(async function () {
    this.timeout(60_000);
    if (!commandExists('redis-server') || !commandExists('redis-cli')) {
      this.test!.parent!.title += ' (skipped: redis-server or redis-cli not installed)';
      this.skip();
    }
    const cluster = await startRedisCluster();
    p.cluster = cluster;
    const database = await createTestDatabase();
    p.database = database;
    const env = { REDIS_CLUSTER_NODES: cluster.nodes };
    const a = await startTestGateway({ ...opts, database, env });
    p.a = a;
    const b = await startTestGateway({ ...opts, database, env });
    p = { cluster, database, a, b };
    use({ cluster, database, a, b });
  });
  after(async () => {
    await p.a?.stop();
    await p.b?.stop();
    await p.database?.drop();
    await p.cluster?.stop();
  });
}
