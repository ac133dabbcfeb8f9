// One way for a test to wait for a condition it cannot hear as an event: ask the condition itself,
// again and again, for at most a bound. The bound is what the test allows (often a bound the gateway
// promises); the pause between two questions only spares the machine, and never decides a result.

/** Default pause between two questions: short next to every bound used with it. */
const PACE_MS = 10;

/**
 * Asks `check` until it holds and answers how many milliseconds that took; throws after `boundMs`,
 * naming `what` and the last error `check` threw (a throw counts as "not yet").
 */
export async function until(what: string, check: () => boolean | Promise<boolean>, boundMs = 20_000, paceMs = PACE_MS): Promise<number> {
  const started = Date.now();
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return Date.now() - started;
    } catch (e) {
      last = e;
    }
    if (Date.now() - started > boundMs) {
      const why = last instanceof Error ? ` (last error: ${last.message})` : '';
      throw new Error(`${what}: not within ${boundMs} ms${why}`);
    }
    await new Promise((r) => setTimeout(r, paceMs));
  }
}
