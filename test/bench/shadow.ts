// What shadow evaluation (a candidate policy decided beside the live one) adds to a
// request's policy decision, and what the per-request usage tally costs. Both run in-process on the
// decision bench's request mix: no server, no network, so the figures are of the code alone.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import pino from 'pino';
import { packageRoot } from '../../src/config.ts';
import { createPolicyEngine, type PolicyEngine } from '../../src/policy/engine.ts';
import { createDecisionObserver } from '../../src/services/policy/index.ts';
import { createUsageService } from '../../src/services/usage.ts';
import type { Pool } from '../../src/store/db.ts';
import { load, MIX, run, sequence, shippedScopes } from './policy.ts';

export interface ShadowBenchResult {
  calls: number;
  /** µs per decide, amortized (first decisions included), median of the rounds. */
  plainMicros: number;
  /** Through the decision observer, no candidate: what every gateway pays for the decision metrics. */
  observedMicros: number;
  /** Through the observer with a candidate: the live decision plus the candidate's, compared and counted. */
  shadowMicros: number;
  /** Share of the calls on which the candidate decided otherwise (each one counted as a divergence). */
  divergentShare: number;
}

export interface UsageTallyResult { calls: number; keys: number; micros: number }

// Two lines a preview might add: anonymous callers lose /healthz, keys lose task deletions. Both
// match requests of the mix, so the divergence path (count, rate-limited log line) is measured too.
const CANDIDATE_LINES = ['p, anonymous, *, .*, /healthz, deny, anon.no-healthz', 'p, key, *, ^DELETE$, /api/tasks/**, deny, key.no-task-deletes'];
const loadCandidate = () => {
  const base = readFileSync(resolve(packageRoot, 'policies/variant-a.csv'), 'utf8');
  return createPolicyEngine(readFileSync(resolve(packageRoot, 'policies/model.conf'), 'utf8'), `${base}\n${CANDIDATE_LINES.join('\n')}\n`, { scopes: shippedScopes() });
};

const timed = (engine: PolicyEngine, seq: Uint16Array): number => {
  const started = process.hrtime.bigint();
  run(engine, MIX, seq);
  return Number(process.hrtime.bigint() - started) / 1e3 / seq.length;
};

const middle = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * `pool` is handed to the observer and never queried: counts reach the database only on `flush`,
 * which the bench never calls. Rounds alternate the three ways, so a drift of a shared machine falls
 * on all of them, and each round starts from fresh engines.
 */
export async function benchShadow(pool: Pool, calls = 500_000, rounds = 3): Promise<ShadowBenchResult> {
  const seq = sequence(MIX, calls);
  // Info level, written nowhere: the divergence log line is built and rate-limited as in a gateway.
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const observer = () => createDecisionObserver({ pool, clock: () => new Date(), logger });
  const ways = {
    plain: async () => load(),
    observed: async () => observer().observe(await load(), null),
    shadow: async () => observer().observe(await load(), { id: 1, engine: await loadCandidate() }),
  };
  for (const make of Object.values(ways)) run(await make(), MIX, seq.subarray(0, 200_000));
  const figures = { plain: [] as number[], observed: [] as number[], shadow: [] as number[] };
  let divergentShare = 0;
  for (let r = 0; r < rounds; r++) {
    for (const way of ['plain', 'observed', 'shadow'] as const) {
      if (way !== 'shadow') {
        figures[way].push(timed(await ways[way](), seq));
        continue;
      }
      const obs = observer();
      const engine = obs.observe(await load(), { id: 1, engine: await loadCandidate() });
      figures.shadow.push(timed(engine, seq));
      divergentShare = obs.divergenceCounts().reduce((n, d) => n + d.count, 0) / calls;
    }
  }
  return { calls, plainMicros: middle(figures.plain), observedMicros: middle(figures.observed), shadowMicros: middle(figures.shadow), divergentShare };
}

/** `record` as the quota middleware calls it, once per key request, over `keys` distinct keys. */
export async function benchUsageTally(pool: Pool, calls = 1_000_000, keys = 1_000): Promise<UsageTallyResult> {
  const ids = Array.from({ length: keys }, (_, i) => ({ subject: 'key' as const, id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` }));
  // Never flushed: the timer is a no-op and close is never called, so nothing reaches the pool.
  const usage = createUsageService({ pool, clock: () => new Date(), every: () => () => {} });
  const at = new Date();
  for (let i = 0; i < 100_000; i++) usage.record(ids[i % keys]!, at, false);
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) usage.record(ids[(i * 7919) % keys]!, at, i % 50 === 0);
  return { calls, keys, micros: Number(process.hrtime.bigint() - started) / 1e3 / calls };
}
