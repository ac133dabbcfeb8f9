import type { Logger } from 'pino';
import type { Every } from './clock.ts';

// The gateway's background work, in one list: what runs beside the requests is started in order
// once the instance is ready, and stopped in reverse once the last request is done, each stop
// waited for (a sender drains its attempts, a buffer writes its last tallies) and its failure logged.

export interface Worker {
  name: string;
  start?(): void | Promise<void>;
  stop?(): void | Promise<void>;
}

export function createWorkers(list: Worker[]) {
  const started: Worker[] = [];
  return {
    names: () => list.map((w) => w.name),
    async start(): Promise<void> {
      for (const w of list) {
        await w.start?.();
        started.push(w);
      }
    },
    async stop(logger: Logger): Promise<void> {
      for (const w of started.splice(0).reverse()) {
        try {
          await w.stop?.();
        } catch (err) {
          logger.error({ err, worker: w.name }, 'a background worker failed to stop cleanly');
        }
      }
    },
  };
}
export type Workers = ReturnType<typeof createWorkers>;

/** Work run every `ms` from start to stop. */
export function everyWorker(name: string, every: Every, ms: number, task: () => Promise<void> | void): Worker {
  let stop: (() => void) | null = null;
  return { name, start: () => void (stop = every(ms, task)), stop: () => stop?.() };
}
