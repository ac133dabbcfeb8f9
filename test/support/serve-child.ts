import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { packageRoot } from '../../src/config.ts';

// `keygate serve` as its own process, the way `npm start` runs it: for the tests of what only a
// real process shows (the embedded PostgreSQL, the compiled build, exit codes, signals).

export interface ServeChild {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** The URL from the `listening on` line; rejects if the process exits first. */
  url: Promise<string>;
  exited: Promise<number | null>;
  /** SIGTERM (or the signal named), then the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /**
   * Ctrl-C as a terminal sends it: SIGINT to the whole process group, every child in it included.
   * Only for a server started with `ownGroup`, so that the group is not the test's own.
   */
  interrupt(): Promise<number | null>;
}

export interface ServeOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The entry point, relative to `cwd` or absolute; default this checkout's bin/keygate.js. */
  entry?: string;
  /** In a process group of its own, as a shell runs a foreground command: see `interrupt`. */
  ownGroup?: boolean;
}

export function startServe({ cwd, env, entry = resolve(packageRoot, 'bin/keygate.js'), ownGroup = false }: ServeOptions): ServeChild {
  // The checkout's .keygate/ belongs to whoever runs `npm start` there: a test server on it would
  // meet that server's postmaster.pid, or take its data.
  if (!env.DATABASE_URL && resolve(cwd) === resolve(packageRoot)) {
    throw new Error('a test server started in the checkout with DATABASE_URL unset would use the checkout\'s own data: give it a database or a directory of its own');
  }
  const child = spawn(process.execPath, [entry, 'serve'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: ownGroup });
  let seen = '';
  const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
  const url = new Promise<string>((ok, fail) => {
    const onData = (d: Buffer) => {
      seen += d.toString();
      const m = /listening on (http:\/\/\S+)\n/.exec(seen);
      if (m) ok(m[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => fail(new Error(`exited with ${code} before listening; output:\n${seen}`)));
  });
  // A start expected to fail is never asked for its URL; its rejection must not go unhandled.
  url.catch(() => undefined);
  return {
    child, url, exited,
    output: () => seen,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    async interrupt() {
      if (!ownGroup) throw new Error('interrupt() needs a server started with ownGroup: the group would be the test\'s own');
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
      return exited;
    },
  };
}

/** A start that must fail: its exit code and what it wrote to stderr. */
export async function failedStart(opts: ServeOptions): Promise<{ code: number | null; stderr: string }> {
  const s = startServe(opts);
  let stderr = '';
  s.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return { code: await s.exited, stderr };
}
