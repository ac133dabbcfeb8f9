import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ServerStats, ParentMessage, ServerKind, ServerOptions } from './protocol.ts';

const SERVER_ENTRY = fileURLToPath(new URL('./server.ts', import.meta.url));

/**
 * The node flags `npm start` gives keygate (package.json's start script), so the bench measures
 * keygate as it is run. Bare Koa and the plain proxy run with node's defaults.
 */
export function startFlags(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
  const m = /\bnode((?:\s+--[\w-]+(?:=\S+)?)*)\s+bin\/keygate\.js\b/.exec(pkg.scripts.start);
  if (!m) throw new Error(`package.json's start script does not run node bin/keygate.js: ${pkg.scripts.start}`);
  return m[1]!.trim().split(/\s+/).filter(Boolean);
}
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

export interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  stats(): Promise<ServerStats>;
  /** Writes a heap snapshot of the server to `path` (a full GC first, as V8 does for any snapshot). */
  snapshot(path: string): Promise<string>;
  /** Asks the server to close, then kills it if it has not exited in time. Safe to call twice. */
  stop(): Promise<void>;
}

function waitForMessage<T extends ChildMessage['type']>(child: ChildProcess, type: T, timeoutMs: number, what: string): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (m: ChildMessage) => {
      if (m.type === 'failed') {
        done();
        reject(new Error(`${what} failed: ${m.message}`));
      } else if (m.type === type) {
        done();
        resolve(m as Extract<ChildMessage, { type: T }>);
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      done();
      reject(new Error(`${what} exited (${signal ?? code}) before answering`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what} did not answer '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Forks the server and waits until it listens; `profileDir` gets its CPU profile. `compiled`: the
 * server.ts compiled by compile.ts, run by plain node as `npm start` runs keygate; else server.ts
 * under tsx.
 */
export async function startServer(name: string, kind: ServerKind, opts: ServerOptions = {}, profileDir: string | null = null, compiled: string | null = null): Promise<ServerProcess> {
  const child = fork(compiled ?? SERVER_ENTRY, [kind, JSON.stringify(opts)], {
    // CPU profiles, written when the server exits, for `--profile`: one per thread (tsx's loader,
    // when used, runs in a thread of its own), so each server gets a folder.
    execArgv: [...(compiled ? [] : ['--import', 'tsx']), ...(kind === 'keygate' ? startFlags() : []), ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const post = (m: ParentMessage) => {
    if (child.connected) child.send(m);
  };
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= new Promise<void>((resolve) => {
      if (exited(child)) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      post({ type: 'stop' });
    }));
  try {
    const ready = await waitForMessage(child, 'ready', START_TIMEOUT_MS, `server ${name}`);
    return {
      name,
      url: ready.url,
      pid: ready.pid,
      stop,
      async stats() {
        const reply = waitForMessage(child, 'stats', 5000, `server ${name}`);
        post({ type: 'stats' });
        const { type: _type, ...stats } = await reply;
        return stats;
      },
      async snapshot(path: string) {
        const reply = waitForMessage(child, 'snapshot', 120_000, `server ${name}`);
        post({ type: 'snapshot', path });
        return (await reply).path;
      },
    };
  } catch (e) {
    if (!exited(child)) child.kill('SIGKILL');
    throw e;
  }
}
