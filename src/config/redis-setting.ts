import { ConfigError } from './parse.ts';

// The Redis topologies are described here, not in src/store/quota/redis-client.ts: config may be used by anything and
// imports nothing above it, so the client that connects to a setting depends on it, not the other way.
export type RedisSetting =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: HostPort[] }
  | { kind: 'sentinel'; sentinels: HostPort[]; name: string };

export interface HostPort { host: string; port: number }

/** `host:port,host:port` as the environment spells it; throws naming the bad entry. */
export function parseHostPorts(text: string, variable: string): HostPort[] {
  const out = text.split(',').map((s) => s.trim()).filter(Boolean).map((entry) => {
    const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(entry);
    const port = m ? Number(m[2]) : NaN;
    if (!m || port < 1 || port > 65535) throw new Error(`${variable}: "${entry}" is not host:port`);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
  });
  if (!out.length) throw new Error(`${variable}: no host:port given`);
  return out;
}

/** Exactly one Redis topology, or none; several at once would leave it unclear where the counters live. */
export function redisSettingFrom(env: NodeJS.ProcessEnv): RedisSetting | null {
  const set = ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'].filter((v) => env[v]);
  if (set.length > 1) throw new ConfigError(`${set.join(', ')}: set exactly one of REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS`);
  if (env.REDIS_SENTINEL_NAME && !env.REDIS_SENTINELS) throw new ConfigError('REDIS_SENTINEL_NAME: only meaningful with REDIS_SENTINELS');
  try {
    if (env.REDIS_URL) return { kind: 'single', url: env.REDIS_URL };
    if (env.REDIS_CLUSTER_NODES) return { kind: 'cluster', nodes: parseHostPorts(env.REDIS_CLUSTER_NODES, 'REDIS_CLUSTER_NODES') };
    if (env.REDIS_SENTINELS) {
      if (!env.REDIS_SENTINEL_NAME) throw new Error('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS (the monitored master\'s name)');
      return { kind: 'sentinel', sentinels: parseHostPorts(env.REDIS_SENTINELS, 'REDIS_SENTINELS'), name: env.REDIS_SENTINEL_NAME };
    }
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  return null;
}
