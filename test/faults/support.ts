import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { freePort } from '../support/redis-server.ts';
import { killChild, until } from '../support/engines.ts';
import { tempDir } from '../support/tmp.ts';
import { paced } from './pace.ts';

// Engines a fault test owns, so it can break them: a Redis it may kill or freeze, a PostgreSQL it
// may kill and start again. And a traffic driver that records every answer with its duration.

/** A request that needs a store which is down answers 503 within 2 s. */
export const ANSWER_BOUND_MS = 2_000;
/** Service resumes within 5 s of the store returning. */
export const RECOVERY_BOUND_MS = 5_000;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Holds a store down (frozen or stopped) under traffic for the fault's length, then lets it go: the
 * fault tests' one fixed wait, since how long a store stays down is the scenario, not a condition.
 */
export async function holdDown(ms: number, fault: { hold(): void; release(): void }): Promise<void> {
  fault.hold();
  try {
    await sleep(ms);
  } finally {
    fault.release();
  }
}

/** A Redis of the test's own. `appendfsync always`: an acknowledged increment survives a kill. */
export class FaultRedis {
  private child: ChildProcess | null = null;
  private readonly dir = tempDir('kg-fault-redis-');
  private constructor(readonly port: number) {}
  get url() { return `redis://127.0.0.1:${this.port}`; }

  static async start(): Promise<FaultRedis> {
    const r = new FaultRedis(await freePort());
    await r.start();
    return r;
  }

  async start(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes',
      '--appendfsync', 'always', '--dir', this.dir], { stdio: 'ignore' });
    await until(`redis on ${this.port}`, () => this.answers(), 10_000, 50);
  }

  async answers(): Promise<boolean> {
    const r = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500, commandTimeout: 500 });
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

  /** Reads one value without the gateway's client. */
  async get(key: string): Promise<number> {
    const r = new Redis(this.url, { maxRetriesPerRequest: 0 });
    try {
      return Number((await r.get(key)) ?? 0);
    } finally {
      r.disconnect();
    }
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.child?.kill(sig);
  }

  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    await killChild(child);
  }
}

function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin/initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0]!, 'bin') : null;
}

/**
 * A PostgreSQL cluster of the test's own (initdb, pg_ctl). PostgreSQL will not run as root, so as
 * root every command runs as the `postgres` user, in a directory that user can reach.
 */
export class FaultPostgres {
  private constructor(private readonly bin: string, private readonly dir: string, readonly port: number) {}
  get url() { return `postgres://postgres@127.0.0.1:${this.port}/postgres`; }
  private get data() { return join(this.dir, 'data'); }

  static available(): boolean {
    return postgresBin() !== null;
  }

  static async start(): Promise<FaultPostgres> {
    const bin = postgresBin();
    if (!bin) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
    const dir = tempDir('kg-fault-pg-');
    chmodSync(dir, 0o755);
    const p = new FaultPostgres(bin, dir, await freePort());
    mkdirSync(p.data, { mode: 0o700 });
    // The log and the socket live beside the data: the whole directory is the postgres user's.
    if (process.getuid?.() === 0) for (const d of [dir, p.data]) chownSync(d, uidOf('postgres'), gidOf('postgres'));
    p.run('initdb', ['-D', p.data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    await p.start();
    return p;
  }

  private run(tool: string, args: string[]): void {
    const asRoot = process.getuid?.() === 0;
    const cmd = asRoot ? 'runuser' : join(this.bin, tool);
    const all = asRoot ? ['-u', 'postgres', '--', join(this.bin, tool), ...args] : args;
    const done = spawnSync(cmd, all, { encoding: 'utf8', cwd: this.dir });
    if (done.status !== 0) throw new Error(`${tool} failed: ${done.stdout}${done.stderr}`);
  }

  async start(): Promise<void> {
    this.run('pg_ctl', ['-D', this.data, '-l', join(this.dir, 'log'), '-w', '-t', '60', '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
    await until(`postgres on ${this.port}`, () => this.answers(), 30_000, 100);
  }

  async answers(): Promise<boolean> {
    const c = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 1000 });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** SIGKILL to the postmaster and every process of the cluster at once, as a crash would. */
  async kill(): Promise<void> {
    const pidFile = join(this.data, 'postmaster.pid');
    if (!existsSync(pidFile)) return;
    const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    // A pid file left by an earlier kill names a process that is gone.
    if (!existsSync(`/proc/${postmaster}`)) return;
    const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    for (const pid of [postmaster, ...children]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await until('postgres processes gone', async () => [postmaster, ...children].every((pid) => !existsSync(`/proc/${pid}`)), 10_000, 50);
  }

  async stop(): Promise<void> {
    try {
      this.run('pg_ctl', ['-D', this.data, '-m', 'immediate', 'stop']);
    } catch {
      await this.kill();
    }
  }
}

const idOf = (file: string, name: string) => Number(readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${name}:`))!.split(':')[2]);
const uidOf = (name: string) => idOf('/etc/passwd', name);
const gidOf = (name: string) => Number(readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`))!.split(':')[3]);

/** One answer the driver saw: when the request started (ms since the drive began), status, duration. */
export interface Answer { kind: string; at: number; status: number; ms: number }

export interface Request { kind: string; send(signal: AbortSignal): Promise<number> }

export interface Drive {
  answers: Answer[];
  /** Milliseconds since the drive began. */
  now(): number;
  /** Resolves once `n` answers to requests started at or after `since` are in. */
  untilAnswers(n: number, since: number, boundMs?: number): Promise<void>;
  /**
   * Resolves once `n` requests of `kind` started at or after `since` succeeded. After a store comes
   * back, answers that fail fast can outnumber any fixed count before the first success.
   */
  untilServed(kind: string, n: number, since: number, boundMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Sends the requests in turn from `workers` loops until stopped, recording each answer. An answer
 * that does not come within 10 s is recorded as status 0: the hang the suite exists to catch.
 * `pauseMs`: each loop rests this long after an answer, so a test can set the pace of its traffic.
 */
export function drive(requests: Request[], workers = 3, pauseMs = 0): Drive {
  const started = Date.now();
  const answers: Answer[] = [];
  let stopped = false;
  const now = () => Date.now() - started;
  const loop = async (w: number) => {
    for (let i = w; !stopped; i++) {
      const r = requests[i % requests.length]!;
      const at = now();
      let status: number;
      try {
        status = await r.send(AbortSignal.timeout(10_000));
      } catch {
        status = 0;
      }
      answers.push({ kind: r.kind, at, status, ms: now() - at });
      if (pauseMs > 0) await paced(pauseMs);
    }
  };
  const loops = Array.from({ length: workers }, (_, w) => loop(w));
  return {
    answers,
    now,
    untilAnswers: (n, since, boundMs = 30_000) => until(`${n} answers`, async () => answers.filter((a) => a.at >= since).length >= n, boundMs, 20).then(() => {}),
    untilServed: (kind, n, since, boundMs = 30_000) =>
      until(`${n} ${kind} requests served`, async () => answers.filter((a) => a.kind === kind && a.at >= since && a.status >= 200 && a.status < 300).length >= n, boundMs, 20).then(() => {}),
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** A compact account of answers for an assertion message. */
export const summary = (answers: Answer[]) => {
  const by = new Map<string, number>();
  for (const a of answers) by.set(`${a.kind} ${a.status}`, (by.get(`${a.kind} ${a.status}`) ?? 0) + 1);
  return [...by].map(([k, n]) => `${k}: ${n}`).join(', ');
};
