// The messages between the bench (parent) and its server processes (server.ts).

/** What the bare server (a) answers on GET /api/projects, and so what (c) and (d) relay. */
export const PROJECTS = { projects: [{ id: 'p_1', name: 'Alpha' }, { id: 'p_2', name: 'Beta' }] };

export type ServerKind = 'bare' | 'keygate' | 'proxy';

export interface ServerOptions {
  /** keygate: its database; the others ignore it. */
  databaseUrl?: string;
  redisUrl?: string;
  /** keygate and the plain proxy: where to forward. */
  upstream?: string;
  /** keygate: counters in PostgreSQL (no REDIS_URL), so a run's many counters go with its database. */
  postgresCounters?: boolean;
  /** keygate: the policy file and scopes file it starts with (the shipped ones when absent). */
  policyFile?: string;
  scopesFile?: string;
  /** keygate: `redis.waitReplicas` (WAIT after each counter write); keygate's default when absent. */
  waitReplicas?: number;
}

export interface ServerStats {
  rssNow: number;
  /** Largest RSS seen by sampling every 50 ms. */
  rssSampledPeak: number;
  /** The kernel's peak RSS (VmHWM), exact; null off Linux. */
  vmHwm: number | null;
  /**
   * Uncaught 'error' events of an aborted upstream body (undici UND_ERR_ABORTED). Each would have
   * ended the process: the server counts them instead, so that the run still yields figures.
   */
  uncaughtAborts: number;
  /** V8 heap in use and reserved, and memory outside it (Buffers), at the time of asking. */
  heapUsed: number;
  heapTotal: number;
  external: number;
}

export type ChildMessage =
  | { type: 'ready'; url: string; pid: number }
  | { type: 'failed'; message: string }
  | ({ type: 'stats' } & ServerStats)
  | { type: 'snapshot'; path: string };

/** snapshot: write a heap snapshot (test/bench/memory.ts) to `path` and answer when written. */
export type ParentMessage = { type: 'stats' } | { type: 'stop' } | { type: 'snapshot'; path: string };
