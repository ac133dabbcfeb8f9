import type { Logger } from 'pino';
import type { HostPort, RedisSetting } from '../../config.ts';
import { logOutages, outageWatchOf } from '../outage.ts';
import { replicaGateOf, type ReplicaWait } from './replica-wait.ts';
import type { CounterEngine } from './engine.ts';
import { createRedisQuotaBlocks } from './redis-blocks.ts';
import { createRedisClient } from './redis-client.ts';
import { createRedisCounters } from './redis-counters.ts';

export interface RedisEngineOptions {
  /** keygate.yaml's `redis.waitReplicas` and `redis.waitTimeoutMs`. */
  wait: ReplicaWait;
  /** Paces the engine's upkeep (its fail-fast window, its sweep of old windows); a test may hand in its own. */
  nowMs: () => number;
  logger: Pick<Logger, 'error' | 'warn'>;
}

/** The counters and blocks on Redis, in the topology `setting` names, over one client of their own. */
export function openRedisEngine(setting: RedisSetting, o: RedisEngineOptions): CounterEngine {
  const client = createRedisClient(setting);
  const counters = createRedisCounters(client, { nowMs: o.nowMs, wait: o.wait });
  const watch = outageWatchOf(client);
  watch?.on(logOutages(o.logger));
  // Counting on the master alone while no replica acknowledges (redis.waitReplicas): told once each way.
  if (o.wait.waitReplicas > 0) replicaGateOf(client).on((e) => {
    if (e.state === 'alone') {
      o.logger.error({ since: e.since, acknowledged: e.acknowledged, wanted: e.wanted },
        'no Redis replica acknowledges counter writes: counting on the master alone (a failover now may lose counts) until one does');
    } else {
      o.logger.warn({ since: e.since, aloneMs: e.aloneMs }, 'Redis replicas acknowledge counter writes again');
    }
  });
  return {
    counters,
    blocks: createRedisQuotaBlocks(client, { wait: o.wait }),
    probe: { name: 'redis', check: () => counters.ping() },
    describe: describeRedis(setting),
    postgresConnections: 0,
    async close() {
      watch?.close();
      await counters.close();
    },
  };
}

/** Where the counters live, for the start log: no password from a URL. */
export function describeRedis(setting: RedisSetting): string {
  const list = (hs: HostPort[]) => hs.map((h) => `${h.host}:${h.port}`).join(',');
  if (setting.kind === 'cluster') return `redis-cluster(${list(setting.nodes)})`;
  if (setting.kind === 'sentinel') return `redis-sentinel(${setting.name}@${list(setting.sentinels)})`;
  const u = new URL(setting.url);
  return `redis(${u.host})`;
}
