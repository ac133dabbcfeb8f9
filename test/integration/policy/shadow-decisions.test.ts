import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPolicyEngine, type PolicyEngine, type PolicySubject } from '../../../src/policy/engine.ts';
import { createDecisionObserver } from '../../../src/services/policy/index.ts';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { shippedPolicies } from '../../unit/policy/helpers.ts';
import { testClock } from '../../support/gateway.ts';

// The shadow path decides every request under both engines, remembering no request: paths are
// caller-chosen, so a memo of them would miss and could be pushed out by one caller for everyone.
// Every repetition and divergence is counted, and the log stays at one line a second per pair.

const ANON: PolicySubject = { kind: 'anonymous', permissions: [], role: null };
const KEY: PolicySubject = { kind: 'key', permissions: ['reports:read', 'ai'], role: 'user' };
const PREVIEW = 'p, anonymous, *, .*, /healthz, deny, anon.no-healthz';

/** The real engine, with its `decide` calls counted. */
function counted(engine: PolicyEngine): { engine: PolicyEngine; calls: () => number } {
  let n = 0;
  return { engine: { ...engine, decide: (s, m, p) => (n++, engine.decide(s, m, p)) }, calls: () => n };
}

describe('shadow evaluation: both engines decide every request, nothing remembered per path', () => {
  let pool: Pool;
  let live: PolicyEngine;
  let candidate: PolicyEngine;
  before(async () => {
    // Never queried: nothing here flushes.
    pool = createPool(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    const model = await readFile(join(shippedPolicies, 'model.conf'), 'utf8');
    const policy = await readFile(join(shippedPolicies, 'variant-a.csv'), 'utf8');
    live = await createPolicyEngine(model, policy);
    candidate = await createPolicyEngine(model, `${policy}\n${PREVIEW}\n`);
  });
  after(() => pool?.end());

  it('asks each engine on every request, and counts every repetition and divergence', () => {
    const clock = testClock('2030-01-01T00:00:00Z');
    const lines: unknown[] = [];
    const logger = { info: (o: unknown) => void lines.push(o), warn: () => {} };
    const observer = createDecisionObserver({ pool, clock: clock.now, logger, logEveryMs: 1000 });
    const l = counted(live);
    const c = counted(candidate);
    const engine = observer.observe(l.engine, { id: 7, engine: c.engine });
    // Permissions in another order are the same request.
    const keyAgain: PolicySubject = { ...KEY, permissions: ['ai', 'reports:read'] };
    for (let i = 0; i < 100; i++) {
      expect(engine.decide(ANON, 'GET', '/healthz').allowed).to.equal(true);
      engine.decide(i % 2 ? KEY : keyAgain, 'GET', '/api/projects');
    }
    expect(l.calls()).to.equal(200);
    expect(c.calls()).to.equal(200);
    expect(observer.divergenceCounts()).to.deep.equal([{ liveRule: 'public.healthz', shadowRule: 'anon.no-healthz', outcome: 'would-deny', count: 100 }]);
    const healthz = observer.decisionCounts().find((d) => d.rule === 'public.healthz');
    expect(healthz).to.deep.equal({ rule: 'public.healthz', effect: 'allow', count: 100 });
    // One line a second per pair: the clock has not moved, so one line for the hundred.
    expect(lines).to.have.length(1);
    clock.advance(1000);
    engine.decide(ANON, 'GET', '/healthz');
    expect(lines).to.have.length(2);
    expect(lines[1]).to.include({ alsoSince: 99, path: '/healthz', subject: 'anonymous' });
  });

  it('remembers nothing across engines: a new pair decides afresh', () => {
    const observer = createDecisionObserver({ pool, clock: testClock().now });
    const l = counted(live);
    observer.observe(l.engine, { id: 7, engine: candidate }).decide(ANON, 'GET', '/healthz');
    observer.observe(l.engine, null).decide(ANON, 'GET', '/healthz');
    expect(l.calls()).to.equal(2);
    expect(observer.divergenceCounts()).to.have.length(1);
  });
});
