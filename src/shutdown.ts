import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

// Stopping well: stop accepting, say "not ready", let the requests in flight finish
// within a grace period, then write what is buffered in memory before the pools close.

/** Requests in flight get up to 10 s to finish once a stop signal arrives. */
export const SHUTDOWN_GRACE_MS = 10_000;
/** One flush may not hold the exit for ever: a database that is down at exit loses what was buffered. */
const HOOK_BOUND_MS = 5_000;

/**
 * Work to do once no request is in flight any more and before the pools close: last-use times,
 * usage counts, leased quota. Every buffered writer registers here, so a stop never drops its buffer.
 */
export interface CloseHooks {
  add(name: string, flush: () => Promise<void>): void;
  /** Runs every hook, each bounded; a failing hook is logged and does not stop the others. */
  run(logger: Logger): Promise<void>;
}

export function createCloseHooks(): CloseHooks {
  const hooks: { name: string; flush: () => Promise<void> }[] = [];
  return {
    add: (name, flush) => void hooks.push({ name, flush }),
    async run(logger) {
      await Promise.all(hooks.map(async ({ name, flush }) => {
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise<never>((_, fail) => {
          timer = setTimeout(() => fail(new Error(`not done within ${HOOK_BOUND_MS} ms`)), HOOK_BOUND_MS);
        });
        try {
          await Promise.race([flush(), bound]);
        } catch (err) {
          logger.error({ hook: name, err: { message: (err as Error).message } }, 'flush on close failed');
        } finally {
          clearTimeout(timer);
        }
      }));
    },
  };
}

/** Counts the requests in flight on a server, and turns keep-alive off once stopping began. */
export interface RequestTracker {
  /** Wraps the application's handler. */
  listener(handler: RequestListener): RequestListener;
  readonly inFlight: number;
  readonly stopping: boolean;
  /** Stop accepting, close idle connections, and wait for the requests in flight, up to `graceMs`. */
  drain(server: Server, graceMs: number): Promise<{ cutOff: number }>;
}

export function createRequestTracker(): RequestTracker {
  let inFlight = 0;
  let stopping = false;
  let settled: (() => void) | null = null;
  const done = () => {
    inFlight--;
    if (inFlight === 0) settled?.();
  };
  return {
    listener: (handler) => (req: IncomingMessage, res: ServerResponse) => {
      inFlight++;
      res.once('close', done);
      // A client on a kept-alive connection must open its next request elsewhere.
      if (stopping) res.shouldKeepAlive = false;
      handler(req, res);
    },
    get inFlight() { return inFlight; },
    get stopping() { return stopping; },
    async drain(server, graceMs) {
      stopping = true;
      // close() refuses new connections and ends the idle kept-alive ones; the callback only fires
      // once every connection is gone, which the cut-off below guarantees.
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      if (inFlight > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          new Promise<void>((ok) => (settled = ok)),
          new Promise<void>((ok) => (timer = setTimeout(ok, graceMs))),
        ]);
        clearTimeout(timer);
        settled = null;
      }
      const cutOff = inFlight;
      // Whatever still runs after the grace period is cut; connections that carry no request
      // (a kept-alive one between requests, one still sending headers) go too.
      server.closeAllConnections();
      await closed;
      return { cutOff };
    },
  };
}

/**
 * How long after a signal the same signal again is the same press. Ctrl-C under `npm start` reaches
 * keygate twice: the terminal sends SIGINT to its whole process group, npm among it, and npm passes
 * it on.
 */
export const SIGNAL_ECHO_MS = 500;

/**
 * Runs `stop` once on the first SIGTERM or SIGINT and exits 0 when it is done (1 if it failed).
 * The same signal within SIGNAL_ECHO_MS of the first is its echo, and passes unsaid. A later one
 * while stopping is noted and ignored: the grace period already bounds the wait.
 */
export function exitOnSignals(stop: () => Promise<void>, log: (line: string) => void): void {
  let first: { signal: NodeJS.Signals; at: number } | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    const at = performance.now();
    if (first) {
      if (signal === first.signal && at - first.at < SIGNAL_ECHO_MS) return;
      return log(`keygate: ${signal} again; already stopping (at most ${SHUTDOWN_GRACE_MS / 1000} s for requests in flight)`);
    }
    first = { signal, at };
    log(`keygate: ${signal}: stopping`);
    stop().then(() => process.exit(0), (err: Error) => {
      log(`keygate: stopping failed: ${err.message}`);
      process.exit(1);
    });
  };
  process.on('SIGTERM', onSignal).on('SIGINT', onSignal);
}
