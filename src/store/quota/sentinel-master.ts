import { isIP } from 'node:net';
import { Redis } from 'ioredis';

// Before the counters count on a master alone (replica-wait.ts), the sentinels are asked
// whether that master is still the one: during a planned failover the old master loses its replica
// (just promoted) some time before the client is told to move, and what it counts meanwhile is lost.

/**
 * Whether the master the client writes to is still the one to count on alone. A master whose
 * replica was just promoted (a failover under way, the client not moved yet) has lost its replica
 * too, and what it counts alone is lost with it. None: always.
 */
export type MasterCheck = () => Promise<boolean>;

/**
 * For a client that finds its master through Sentinel: whether a sentinel names the very server
 * the client is connected to as master (by port alone where it names a host, not an address), with
 * no failover under way. Asked on its own connection; the first sentinel that answers decides, and
 * when none does, the check says yes (it never keeps counts refused by itself).
 */
export function sentinelsNameMasterOf(redis: Redis): MasterCheck | null {
  const { sentinels, name, sentinelUsername: username, sentinelPassword: password } = redis.options;
  if (!sentinels?.length || !name) return null;
  return async () => {
    const here = redis.stream;
    const at = { host: here?.remoteAddress?.replace(/^::ffff:/, ''), port: here?.remotePort };
    for (const s of sentinels) {
      const r = new Redis({ host: s.host, port: s.port, username, password, lazyConnect: true, connectTimeout: 500,
        commandTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        await r.connect();
        const flat = (await r.call('SENTINEL', 'MASTER', name)) as string[];
        const field = (k: string) => flat[flat.indexOf(k) + 1];
        const host = field('ip') ?? '';
        return (host === at.host || !isIP(host)) && Number(field('port')) === at.port && !field('flags')?.includes('failover');
      } catch {
        // the next sentinel
      } finally {
        r.disconnect();
      }
    }
    return true;
  };
}
