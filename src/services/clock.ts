/** Time is a dependency, so tests can move it (a UTC day boundary, an expiry) without sleeping. */
export type Clock = () => Date;
export const systemClock: Clock = () => new Date();

/**
 * Runs `task` every `ms` until the returned function is called. A dependency like the clock, so a
 * test runs periodic work (the last-use writer) when it chooses instead of waiting for a timer.
 */
export type Every = (ms: number, task: () => Promise<void> | void) => () => void;

export const systemEvery: Every = (ms, task) => {
  const timer = setInterval(() => void task(), ms);
  // Periodic bookkeeping never keeps a finished process alive.
  timer.unref();
  return () => clearInterval(timer);
};
