import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './redis-server.ts';
import { tempDir } from './tmp.ts';
import { until as poll } from './until.ts';

// Real engines a scale-out test starts on loopback and stops after: a Redis Cluster, a Sentinel
// set, a PgBouncer, and a TCP proxy that can go silent like a NAT that forgot a connection.

/** `until` (./until.ts) paced for engines: each question opens a connection, so ask less often. */
export const until = (what: string, probe: () => Promise<boolean>, deadlineMs = 20_000, everyMs = 100): Promise<number> =>
  poll(what, probe, deadlineMs, everyMs);

export function commandExists(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

class Proc {
  child: ChildProcess | null = null;
  constructor(readonly port: number, private readonly args: () => string[], private readonly cmd = 'redis-server') {}
  start(): void {
    this.child = spawn(this.cmd, this.args(), { stdio: 'ignore' });
  }
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    await killChild(child);
  }
}

/** SIGKILLs a child and waits for it to be gone; a stopped (SIGSTOP) child is woken first so it can die. */
export async function killChild(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((ok) => {
    child.once('exit', () => ok());
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  });
}

async function redisAnswers(port: number, check: (r: Redis) => Promise<boolean> = async (r) => (await r.ping()) === 'PONG'): Promise<boolean> {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  r.on('error', () => {});
  try {
    await r.connect();
    return await check(r);
  } finally {
    r.disconnect();
  }
}

export interface RedisCluster {
  nodes: string;
  ports: number[];
  kill(port: number): Promise<void>;
  /** Starts a killed master again on its old port, empty (no persistence), with its old node id and slots. */
  restart(port: number): Promise<void>;
  /** `cluster-require-full-coverage` on every node that is running, changed live (CONFIG SET). */
  setRequireFullCoverage(on: boolean): Promise<void>;
  /** `cluster_state` (`ok` or `fail`) as the node on `port` sees it. */
  state(port: number): Promise<string>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  masters?: number;
  /**
   * `cluster-require-full-coverage`. Off unless asked, as docs/scale-out.md sets it: a master down
   * then costs only its own slots. On (Redis's default), a cluster missing any slot refuses every key.
   */
  requireFullCoverage?: boolean;
}

async function clusterInfo(port: number, field: string): Promise<string> {
  let value = '';
  await redisAnswers(port, async (r) => {
    value = new RegExp(`^${field}:(\\S+)`, 'm').exec(String(await r.call('CLUSTER', 'INFO')))?.[1] ?? '';
    return true;
  });
  return value;
}

/** Masters without replicas (three unless asked), every slot covered. */
export async function startRedisCluster({ masters = 3, requireFullCoverage = false }: RedisClusterOptions = {}): Promise<RedisCluster> {
  const dir = tempDir('kg-cluster-');
  const ports = await Promise.all(Array.from({ length: masters }, () => freePort()));
  const procs = ports.map((p) => new Proc(p, () => ['--port', String(p), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
    '--cluster-config-file', join(dir, `nodes-${p}.conf`), '--cluster-node-timeout', '3000',
    '--cluster-require-full-coverage', requireFullCoverage ? 'yes' : 'no', '--save', '', '--appendonly', 'no', '--dir', dir]));
  procs.forEach((p) => p.start());
  const stop = async () => void (await Promise.all(procs.map((p) => p.kill())));
  const state = (port: number) => clusterInfo(port, 'cluster_state');
  try {
    for (const p of ports) await until(`cluster node ${p}`, () => redisAnswers(p), 10_000);
    const made = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`redis-cli --cluster create failed: ${made.stdout}${made.stderr}`);
    for (const p of ports) await until(`cluster state ok on ${p}`, async () => (await state(p)) === 'ok', 10_000);
  } catch (e) {
    await stop();
    throw e;
  }
  const proc = (port: number) => procs.find((p) => p.port === port)!;
  return {
    ports,
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    kill: (port) => proc(port).kill(),
    async restart(port) {
      proc(port).start();
      await until(`cluster node ${port} answers again`, () => redisAnswers(port), 10_000);
    },
    async setRequireFullCoverage(on) {
      for (const p of procs.filter((p) => p.child)) {
        const set = await redisAnswers(p.port, async (r) => (await r.call('CONFIG', 'SET', 'cluster-require-full-coverage', on ? 'yes' : 'no')) === 'OK');
        if (!set) throw new Error(`CONFIG SET cluster-require-full-coverage refused on ${p.port}`);
      }
    },
    state,
    stop,
  };
}

export interface SentinelSet {
  sentinels: string;
  name: string;
  masterPort: number;
  replicaPort: number;
  /** The port the sentinel currently names as master. */
  currentMaster(): Promise<number>;
  killMaster(): Promise<void>;
  /** Starts the killed master again, empty (no persistence), on its old port. */
  restartOldMaster(): Promise<void>;
  stop(): Promise<void>;
}

/** A master and its replica on free ports, both started; `inSync` resolves once the replica has caught up. */
async function masterAndReplica(dir: string) {
  const [masterPort, replicaPort] = [await freePort(), await freePort()];
  const base = (p: number) => ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const master = new Proc(masterPort, () => base(masterPort));
  const replica = new Proc(replicaPort, () => [...base(replicaPort), '--replicaof', '127.0.0.1', String(masterPort)]);
  master.start();
  replica.start();
  const inSync = () => until('replica in sync', () => redisAnswers(replicaPort, async (r) => String(await r.info('replication')).includes('master_link_status:up')), 15_000);
  return { masterPort, replicaPort, master, replica, inSync };
}

export interface ReplicatedRedis { url: string; masterPort: number; replicaPort: number; stop(): Promise<void> }

/** One master with one replica in sync, no Sentinel: what `redis.waitReplicas` waits for, at its simplest. */
export async function startReplicatedRedis(): Promise<ReplicatedRedis> {
  const { masterPort, replicaPort, master, replica, inSync } = await masterAndReplica(tempDir('kg-replicated-'));
  const stop = async () => void (await Promise.all([master.kill(), replica.kill()]));
  try {
    await inSync();
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `redis://127.0.0.1:${masterPort}`, masterPort, replicaPort, stop };
}

/** One master, one replica, one sentinel that fails over a second after the master stops answering. */
export async function startSentinelSet(name = 'keygate'): Promise<SentinelSet> {
  const dir = tempDir('kg-sentinel-');
  const { masterPort, replicaPort, master, replica, inSync } = await masterAndReplica(dir);
  const sentinelPort = await freePort();
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(conf, [
    `port ${sentinelPort}`, 'bind 127.0.0.1', `dir ${dir}`,
    `sentinel monitor ${name} 127.0.0.1 ${masterPort} 1`,
    `sentinel down-after-milliseconds ${name} 1000`,
    `sentinel failover-timeout ${name} 3000`,
    `sentinel parallel-syncs ${name} 1`, '',
  ].join('\n'));
  const sentinel = new Proc(sentinelPort, () => [conf, '--sentinel']);
  const procs = [master, replica, sentinel];
  sentinel.start();
  const stop = async () => void (await Promise.all(procs.map((p) => p.kill())));
  const currentMaster = async () => {
    const r = new Redis({ port: sentinelPort, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {});
    try {
      const addr = (await r.call('SENTINEL', 'get-master-addr-by-name', name)) as [string, string];
      return Number(addr[1]);
    } finally {
      r.disconnect();
    }
  };
  try {
    await inSync();
    await until('sentinel sees the replica', () => redisAnswers(sentinelPort, async (r) => {
      const replicas = (await r.call('SENTINEL', 'replicas', name)) as unknown[];
      return replicas.length === 1;
    }), 15_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    sentinels: `127.0.0.1:${sentinelPort}`, name, masterPort, replicaPort, currentMaster,
    killMaster: () => master.kill(),
    async restartOldMaster() {
      master.start();
      await until('old master answers', () => redisAnswers(masterPort), 10_000);
    },
    stop,
  };
}

export interface PgBouncer { port: number; urlFor(database: string): string; stop(): Promise<void> }

/**
 * PgBouncer in transaction mode in front of the PostgreSQL of `serverUrl`. It refuses to run as
 * root, so as root it is started with `-u postgres`, and its files must be readable by that user.
 */
export async function startPgBouncer(serverUrl: string): Promise<PgBouncer> {
  const dir = tempDir('kg-pgbouncer-');
  chmodSync(dir, 0o755);
  const port = await freePort();
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  writeFileSync(join(dir, 'users.txt'), `"${user}" "${decodeURIComponent(server.password)}"\n`);
  writeFileSync(join(dir, 'pgbouncer.ini'), [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    `listen_addr = 127.0.0.1`, `listen_port = ${port}`, 'unix_socket_dir =',
    'auth_type = trust', `auth_file = ${join(dir, 'users.txt')}`,
    'pool_mode = transaction', 'default_pool_size = 10', 'max_client_conn = 500',
    'ignore_startup_parameters = extra_float_digits',
  ].join('\n'));
  for (const f of ['users.txt', 'pgbouncer.ini']) chmodSync(join(dir, f), 0o644);
  const asRoot = process.getuid?.() === 0;
  const proc = new Proc(port, () => [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], 'pgbouncer');
  proc.start();
  const answers = () => new Promise<boolean>((ok) => {
    const s = createConnection({ port, host: '127.0.0.1' }, () => (s.destroy(), ok(true)));
    s.on('error', () => ok(false));
  });
  try {
    await until('pgbouncer listens', answers, 10_000);
  } catch (e) {
    await proc.kill();
    throw e;
  }
  return {
    port,
    urlFor: (database) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`,
    stop: () => proc.kill(),
  };
}

export interface SilenceableProxy {
  port: number;
  /** Every connection open now stops passing bytes, without closing; new ones still work. */
  silenceOpen(): void;
  stop(): Promise<void>;
}

/** A TCP proxy that can go silent the way a NAT or pooler that forgot a connection does. */
export async function startSilenceableProxy(targetHost: string, targetPort: number): Promise<SilenceableProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket; silent: boolean }>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: targetHost, port: targetPort });
    const pair = { client, upstream, silent: false };
    pairs.add(pair);
    client.on('data', (b) => void (pair.silent || upstream.write(b)));
    upstream.on('data', (b) => void (pair.silent || client.write(b)));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    // A silenced pair also ignores the far side's close: the peer must find out by itself.
    client.on('close', () => pair.silent || end()).on('error', () => {});
    upstream.on('close', () => pair.silent || end()).on('error', () => {});
  });
  const port = await freePort();
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  return {
    port,
    silenceOpen: () => pairs.forEach((p) => (p.silent = true)),
    async stop() {
      pairs.forEach((p) => (p.client.destroy(), p.upstream.destroy()));
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
