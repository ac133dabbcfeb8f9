import { expect } from 'chai';
import type { Pool } from '../../src/store/db.ts';
import type { TestGateway } from '../support/gateway.ts';
import { twoInstances, type TwoInstances } from '../integration/policy/support.ts';
import { POLICY_CHECK_MS } from '../../src/services/policy/index.ts';

// A reload that fails is retried on the instance's periodic version check, and while it cannot load
// the live version the instance says so (LAGGING with the reason) instead of silently enforcing an
// older one. The fault: a live version whose stored lines are malformed, written straight to the
// store with no signal (as an apply whose NOTIFY was lost), then repaired.

describe('faults: a policy reload that fails', () => {
  let pool: Pool;
  let a: TestGateway;
  let b: TestGateway;
  let cli: TwoInstances['cli'];
  twoInstances('kg_reload_fault', (s) => ({ pool, a, b, cli } = s));

  it('is retried on the version check; meanwhile the instance shows LAGGING with the reason, logged once', async () => {
    expect(b.periodic.intervals.some((ms) => ms <= POLICY_CHECK_MS), 'a version check at least every 5 s').to.equal(true);
    await cli('apply');
    await b.runPeriodic();
    expect(b.policy.service.loaded).to.include({ version: 1, lagReason: null });

    // Version 2 is live in the store, but one of its lines cannot be read, and nobody was told.
    await pool.query(`INSERT INTO policy_versions (version, sha256, model_text, policy_text, scopes_text, applied_at, applied_by, message)
      SELECT 2, sha256, model_text, policy_text, scopes_text, now(), 'tester', 'broken on purpose' FROM policy_versions WHERE version = 1`);
    const { rows } = await pool.query<{ id: number }>(`INSERT INTO casbin (ptype, rule) VALUES ('p', '["key"]') RETURNING id`);

    const from = b.logs.length;
    for (let i = 0; i < 3; i += 1) await b.runPeriodic();
    expect(b.policy.service.loaded.version, 'the last version loaded stays in force').to.equal(1);
    expect(b.policy.service.loaded.lagReason).to.match(/malformed/);
    const reasonLines = b.logs.slice(from).filter((l) => l.includes('policy reload failed'));
    expect(reasonLines, 'the reason is logged once, not on every retry').to.have.length(1);
    expect(reasonLines[0]).to.match(/malformed/);

    await a.runPeriodic();
    await a.policy.heartbeat.beat();
    await b.policy.heartbeat.beat();
    const status = await cli('status');
    expect(status.code).to.equal(1);
    for (const g of [a, b]) expect(status.out).to.match(new RegExp(`^${g.policy.heartbeat.instanceId.slice(0, 8)} .* version 1 seen \\S+ LAGGING: .*malformed`, 'm'));
    const json = JSON.parse((await cli('status', '--json')).out) as { instances: { lagReason: string | null; lagging: boolean }[] };
    expect(json.instances.every((i) => i.lagging && /malformed/.test(i.lagReason ?? ''))).to.equal(true);

    // Repaired: the next check loads version 2 and the fleet is whole again.
    await pool.query('DELETE FROM casbin WHERE id = $1', [rows[0]!.id]);
    await b.runPeriodic();
    await a.runPeriodic();
    expect(b.policy.service.loaded).to.include({ version: 2, lagReason: null });
    expect(b.logs.slice(from).some((l) => l.includes('policy reload recovered'))).to.equal(true);
    await a.policy.heartbeat.beat();
    await b.policy.heartbeat.beat();
    const healed = await cli('status');
    expect(healed.code, healed.out + healed.err).to.equal(0);
    expect(healed.out).to.not.include('LAGGING');
  });

  it('catches up on a version applied while its signal was lost, without any signal', async () => {
    await pool.query(`INSERT INTO policy_versions (version, sha256, model_text, policy_text, scopes_text, applied_at, applied_by, message)
      VALUES (1, 'x', $1, '', '', now(), 'tester', 'no signal')`, [await modelText(b)]);
    expect(b.policy.service.loaded.version).to.equal(0);
    await b.runPeriodic();
    expect(b.policy.service.loaded.version).to.equal(1);
  });
});

async function modelText(g: TestGateway): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  return readFile(g.config.policy.model, 'utf8');
}
