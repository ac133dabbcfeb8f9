import { expect } from 'chai';
import type { Pool } from '../../../src/store/db.ts';
import type { Config } from '../../../src/config.ts';
import { testClock, type TestGateway } from '../../support/gateway.ts';
import { policyCli, twoInstances, type TwoInstances } from './support.ts';
import { until } from '../../support/until.ts';

// Two gateways on one database: what an operator sees and changes across a fleet.

const HOUR = 3_600_000;
const CLOSE_PROJECTS = 'p, key, *, .*, /api/projects/**, deny, key.projects-closed';
const KEY = { kind: 'key', permissions: [], role: 'user' } as const;

async function readyVersion(g: TestGateway): Promise<number> {
  return ((await (await fetch(`${g.url}/readyz`)).json()) as { policyVersion: number }).policyVersion;
}

describe('policy across a fleet', () => {
  let pool: Pool;
  let config: Config;
  let files: TwoInstances['files'];
  let a: TestGateway;
  let b: TestGateway;
  let cli: TwoInstances['cli'];
  twoInstances('kg_fleet', (s) => ({ pool, config, files, a, b, cli } = s));

  describe('when a version is rolled back', () => {
    it('then the second instance runs the rollback within a second', async () => {
      expect(await readyVersion(b)).to.equal(0);
      await cli('apply');
      await files.append(CLOSE_PROJECTS);
      await cli('apply', '--force');
      await until('version 2 on b', async () => (await readyVersion(b)) === 2, 1000);
      expect(b.policy.service.holder.current.decide(KEY, 'GET', '/api/projects').allowed).to.equal(false);

      expect((await cli('rollback', '1')).code).to.equal(0);
      await until('the rollback on b', async () => (await readyVersion(b)) === 3, 1000);
      expect(b.policy.service.holder.current.decide(KEY, 'GET', '/api/projects').allowed).to.equal(true);
      expect(await (await fetch(`${b.url}/metrics`)).text()).to.match(/^keygate_policy_version 3$/m);
    });
  });

  describe('when the fleet status is asked for', () => {
    it('then it lists both instances, exits 1 while one lags, and keeps one that stopped beating listed as silent', async () => {
      await cli('apply');
      await until('version 1 on both', () => a.policy.service.loaded.version === 1 && b.policy.service.loaded.version === 1, 1000);
      await a.policy.heartbeat.beat();
      await b.policy.heartbeat.beat();
      const ok = await cli('status');
      expect(ok.code).to.equal(0);
      expect(ok.out).to.match(/^live version 1\n/);
      for (const g of [a, b]) expect(ok.out).to.include(`${g.policy.heartbeat.instanceId.slice(0, 8)} `);
      expect(ok.out.match(/ version 1 seen /g)).to.have.length(2);

      // b stops reporting before version 2 (an instance stopped on purpose would leave the list):
      // it is the last thing it said that counts.
      b.policy.heartbeat.stop();
      await files.append(CLOSE_PROJECTS);
      await cli('apply', '--force');
      await until('version 2 on a', () => a.policy.service.loaded.version === 2, 1000);
      await a.policy.heartbeat.beat();
      const lagging = await cli('status');
      expect(lagging.code).to.equal(1);
      expect(lagging.out).to.match(new RegExp(`^${b.policy.heartbeat.instanceId.slice(0, 8)} .* version 1 seen \\S+ LAGGING: version 1 loaded, live is 2;`, 'm'));
      expect(lagging.err).to.include('1 instance not running live version 2');

      // 31 s later (the clocks moved, not waited for) only a has beaten again.
      a.clock.advance(31_000);
      await a.policy.heartbeat.beat();
      const later = testClock();
      later.advance(31_000);
      const after = await policyCli(pool, config, ['status'], later.now);
      // Silent past the horizon: still listed with what it last said, and never taken as converged.
      expect(after.code).to.equal(1);
      expect(after.out).to.match(new RegExp(`^${b.policy.heartbeat.instanceId.slice(0, 8)} .* version 1 seen \\S+ LAGGING: silent since `, 'm'));
      expect(after.out).to.include(a.policy.heartbeat.instanceId.slice(0, 8));
    });
  });

  describe('when requests are decided', () => {
    it('then /metrics counts them by the deciding rule and effect', async () => {
      await fetch(`${a.url}/healthz`);
      await fetch(`${a.url}/api/no-such-thing-for-anyone`);
      const metrics = await (await fetch(`${a.url}/metrics`)).text();
      expect(metrics).to.match(/^keygate_policy_decisions_total\{rule="public\.healthz",effect="allow"\} 1$/m);
      expect(metrics).to.match(/^keygate_policy_decisions_total\{rule="[a-z0-9.-]+",effect="deny"\} [1-9]/m);
      expect(metrics).to.match(/^keygate_policy_version 0$/m);
    });
  });
});
