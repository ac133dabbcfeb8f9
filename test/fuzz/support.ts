import fc from 'fast-check';

// Fuzzed edges run in `npm test`: a fixed number of runs keeps the suite's time bounded, and a
// failure prints fast-check's seed and path, so `FUZZ_SEED=<seed>` replays it exactly.

export function fuzzParams<T>(numRuns: number): fc.Parameters<T> {
  const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
  // FUZZ_RUNS raises the count for a longer hunt by hand; the suite keeps its own small bound.
  const runs = process.env.FUZZ_RUNS === undefined ? numRuns : Number(process.env.FUZZ_RUNS);
  return { numRuns: runs, ...(seed === undefined ? {} : { seed }), verbose: 1 };
}

/** Spells `text` with every letter in a random case. */
export const anyCase = (text: string) =>
  fc.array(fc.boolean(), { minLength: text.length, maxLength: text.length }).map((upper) => [...text].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''));
