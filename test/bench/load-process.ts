import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoadOptions, LoadResult, LoadTarget } from './load.ts';

// The parent's side of loader.ts: load() and hangUps() run in a process of their own, one request
// to it at a time.

export type LoaderRequest =
  | { type: 'load'; id: number; target: LoadTarget; opts: LoadOptions }
  | { type: 'hangUps'; id: number; target: LoadTarget; count: number };
export type LoaderReply =
  | { type: 'ready' }
  | { type: 'done'; id: number; result: LoadResult | null }
  | { type: 'failed'; id: number; message: string };

export interface LoadProcess {
  load(target: LoadTarget, opts: LoadOptions): Promise<LoadResult>;
  hangUps(target: LoadTarget, count: number): Promise<void>;
  stop(): Promise<void>;
}

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
/** Only what the loader needs: the bench's targets also carry their server's handle. */
const plain = ({ name, url, headers, randomIdsUnder }: LoadTarget): LoadTarget => ({ name, url, headers, randomIdsUnder });

const ENTRY = fileURLToPath(new URL('./loader.ts', import.meta.url));

export async function startLoadProcess(): Promise<LoadProcess> {
  const child = fork(ENTRY, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map<number, { resolve(r: LoadResult | null): void; reject(e: Error): void }>();
  let nextId = 0;
  const failAll = (why: string) => {
    for (const p of pending.values()) p.reject(new Error(why));
    pending.clear();
  };
  // Before 'ready' these end the start; after it, whatever was asked fails instead of waiting for ever.
  let starting: ((e: Error) => void) | null = null;
  const gone = (why: string) => {
    starting?.(new Error(why));
    failAll(why);
  };
  child.on('exit', (code, signal) => gone(`the load generator exited (${signal ?? code})`));
  child.on('error', (e) => gone(`the load generator failed: ${e.message}`));
  await new Promise<void>((ready, fail) => {
    starting = fail;
    child.once('message', () => ready());
  });
  starting = null;
  child.on('message', (m: LoaderReply) => {
    if (m.type === 'ready') return;
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (m.type === 'done') p?.resolve(m.result);
    else p?.reject(new Error(m.message));
  });
  const ask = (m: WithoutId<LoaderRequest>) =>
    new Promise<LoadResult | null>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ ...m, id } as LoaderRequest);
    });
  return {
    load: async (target, opts) => (await ask({ type: 'load', target: plain(target), opts }))!,
    hangUps: async (target, count) => void (await ask({ type: 'hangUps', target: plain(target), count })),
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', () => done());
        child.disconnect();
      }),
  };
}
