import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { OutageWatch, rejectAsOutage, type Probe } from '../outage.ts';
import type { RedisSetting } from '../../config.ts';

// The counters' Redis, in whichever topology the operator runs: one server, a Cluster, or a
// Sentinel-watched master. Every shape fails fast rather than queueing, so a request that needs a
// counter the store cannot give answers 503 within about a second instead of hanging.

export type RedisClient = Redis | Cluster;

// No offline queue and one attempt per command: a Redis that does not answer makes the command
// fail within a second instead of queueing requests behind it.
const failFast: RedisOptions = {
  enableOfflineQueue: false,
  // Concurrent requests' counter commands share one write to the socket; with per-key GETs (a
  // Cluster refuses MGET across slots) this keeps a list of keys near one round trip per shard.
  enableAutoPipelining: true,
  // Except the counters' scripts: each is one call for a whole group of requests already (a key's
  // requests of one turn of the event loop, src/services/quota/spend.ts), so it goes out at once rather
  // than a turn of the loop later with the next automatic pipeline.
  autoPipeliningIgnoredCommands: ['eval', 'evalsha'],
  maxRetriesPerRequest: 1,
  // Auto-pipelined commands wait while the previous pipeline to the same node is unanswered, so a
  // Redis that stops answering makes a command wait up to two timeouts. A key create also spends
  // database time around its counter call, so 2 x 500 ms leaves room for it within the 2 s of
  // which every answer is due (750 ms let a create on a loaded machine take 2.4 s, test/faults/redis.test.ts).
  commandTimeout: 500,
  connectTimeout: 1000,
  retryStrategy: (times) => Math.min(times * 100, 1000),
};

// A master demoted by a failover answers writes with READONLY. Reconnecting makes the client ask
// the sentinels (or the cluster) again where the master is now; the refused write was not applied.
const reconnectOnReadonly = (err: Error) => err.message.startsWith('READONLY');

/** How an outage of the counters' Redis names it to the caller. */
export const REDIS_STORE = 'counter store (Redis)';

/**
 * Every command of the client rejects with StoreUnavailableError when it fails: the counters send
 * only commands whose failure means Redis did not answer (a timeout, a closed or unwritable
 * connection, a shard without a master), and failing closed is right for anything else too.
 */
export function createRedisClient(setting: RedisSetting): RedisClient {
  const client = build(setting);
  // Errors surface on the commands that hit them (and so as 503s); the event must not crash us.
  client.on('error', () => {});
  // CLIENT is left out: ioredis tags each new connection with CLIENT SETINFO, which a Redis before
  // 7.2 refuses; that refusal is no outage (ioredis ignores it) and must not be reported as one.
  const commands = client.getBuiltinCommands().filter((name) => name !== 'client').flatMap((name) => [name, `${name}Buffer`]);
  rejectAsOutage(client, [...commands, 'call'], REDIS_STORE, () => true, new OutageWatch(REDIS_STORE, probeOf(client)));
  return client;
}

/**
 * Whether the counters' Redis answers, asked while it is in an outage. A Cluster's masters are each
 * asked: with `cluster-require-full-coverage no` the live ones serve their keys while one is down,
 * and the outage is told as that part of the store, not the whole.
 */
function probeOf(client: RedisClient): Probe {
  const ping = client.ping.bind(client) as () => Promise<string>;
  if (!(client instanceof Cluster)) {
    return async () => {
      await ping();
      return null;
    };
  }
  return async () => {
    // The masters that own slots, as the client last learnt them; each asked on a connection of the
    // probe's own (the client's may not be open yet, or already dropped for a dead node).
    const masters = [...new Set(client.slots.map((owners) => owners[0]).filter((k): k is string => !!k))];
    const answers = await Promise.all(masters.map((m) => answersPing(m, client.options.redisOptions ?? {})));
    const down = masters.filter((_, i) => !answers[i]);
    if (!masters.length || down.length === masters.length) throw new Error('no master answers');
    return down.length ? `${down.length} of ${masters.length} masters not answering: ${down.join(', ')}` : null;
  };
}

async function answersPing(nodeKey: string, options: RedisOptions): Promise<boolean> {
  const at = nodeKey.lastIndexOf(':');
  const r = new Redis({
    ...options, host: nodeKey.slice(0, at), port: Number(nodeKey.slice(at + 1)),
    lazyConnect: true, connectTimeout: 500, commandTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

function build(setting: RedisSetting): RedisClient {
  switch (setting.kind) {
    case 'single':
      return new Redis(setting.url, { ...failFast, reconnectOnError: reconnectOnReadonly });
    case 'sentinel':
      return new Redis({
        ...failFast,
        sentinels: setting.sentinels,
        name: setting.name,
        role: 'master',
        // Listen for the sentinels' +switch-master and leave the old master at once, rather than
        // waiting for it to die or refuse a write.
        failoverDetector: true,
        sentinelRetryStrategy: (times) => Math.min(times * 100, 1000),
        reconnectOnError: reconnectOnReadonly,
      });
    case 'cluster':
      return new Cluster(setting.nodes, {
        enableOfflineQueue: false,
        // Scripts stay automatically pipelined on a Cluster: that path waits for the slot map
        // while the client is not ready yet, where a direct command would be refused at once.
        enableAutoPipelining: true,
        autoPipeliningIgnoredCommands: [],
        // Follows MOVED/ASK a bounded number of times; a shard without a master then fails the
        // command (503) instead of retrying until the cluster heals.
        maxRedirections: 6,
        retryDelayOnFailover: 100,
        retryDelayOnClusterDown: 100,
        retryDelayOnTryAgain: 100,
        slotsRefreshTimeout: 1000,
        clusterRetryStrategy: (times) => Math.min(times * 100, 1000),
        redisOptions: { ...failFast, reconnectOnError: reconnectOnReadonly },
      });
  }
}
