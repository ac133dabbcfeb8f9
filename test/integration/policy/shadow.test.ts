import { expect } from 'chai';
import type { Pool } from '../../../src/store/db.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { twoInstances, type TwoInstances } from './support.ts';
import { until } from '../../support/until.ts';

// A candidate policy decided beside the live one on two instances sharing a database.

const HOUR = 3_600_000;
// Closes /healthz to anonymous callers, which the live policy lets in.
const PREVIEW = 'p, anonymous, *, .*, /healthz, deny, anon.no-healthz';
const ANON = { kind: 'anonymous', permissions: [], role: null } as const;

describe('shadow evaluation', () => {
  let pool: Pool;
  let files: TwoInstances['files'];
  let a: TestGateway;
  let b: TestGateway;
  let cli: TwoInstances['cli'];
  twoInstances('kg_shadow', (s) => ({ pool, files, a, b, cli } = s));
  const both = () => [a, b];
  const candidateOn = (id: number | null) => () => both().every((g) => g.policy.service.loaded.candidateId === id);

  beforeEach(async () => {
    await cli('apply');
    await files.append(PREVIEW);
    const stored = await cli('apply', '--shadow', '--force', '--message', 'preview projects');
    expect(stored.code).to.equal(0);
    const id = Number(/as candidate (\d+)/.exec(stored.out)?.[1]);
    await until('the candidate on both', candidateOn(id), 1000);
  });

  describe('when the candidate would decide differently', () => {
    it('then the live decision is enforced, and each instance counts, logs and reports the divergence', async () => {
      for (const g of [a, a, b]) expect((await fetch(`${g.url}/healthz`)).status).to.equal(200);
      const metrics = await (await fetch(`${a.url}/metrics`)).text();
      expect(metrics).to.match(/^keygate_policy_shadow_divergences_total\{live_rule="[a-z0-9.-]+",shadow_rule="anon\.no-healthz",outcome="would-deny"\} 2$/m);

      // Once a second per pair: the second request on a is counted, not logged.
      const logged = a.logs.filter((l) => l.includes('the candidate policy decides differently'));
      expect(logged).to.have.length(1);
      expect(JSON.parse(logged[0]!)).to.include({ method: 'GET', path: '/healthz', subject: 'anonymous', shadowRule: 'anon.no-healthz', outcome: 'would-deny' });

      await a.policy.observer.flush();
      await b.policy.observer.flush();
      const report = await cli('shadow', 'report');
      expect(report.out).to.match(/^candidate \d+ [0-9a-f]{12} stored \S+ by tester: preview projects$/m);
      expect(report.out).to.match(/^3 would-deny live [a-z0-9.-]+ -> candidate anon\.no-healthz {2}e\.g\. GET \/healthz as anonymous$/m);
      // A second flush adds only what came since.
      await a.policy.observer.flush();
      expect((await cli('shadow', 'report')).out).to.match(/^3 would-deny/m);
    });
  });

  describe('when the candidate is promoted', () => {
    it('then it is live as a new version on both instances and no longer a candidate', async () => {
      const r = await cli('promote', '--force');
      expect(r.out).to.include('promoted candidate');
      expect(r.out).to.include('as version 2');
      await until('version 2 on both', () => both().every((g) => g.policy.service.loaded.version === 2), 1000);
      await until('no candidate', candidateOn(null), 1000);
      for (const g of both()) expect(g.policy.service.holder.current.decide(ANON, 'GET', '/healthz').ruleId).to.equal('anon.no-healthz');
      expect((await cli('history', '--limit', '1')).out).to.match(/^\* 2 .* promote: preview projects$/m);
    });
  });

  describe('when promote finds the candidate failing the suites', () => {
    it('then it refuses and the candidate stays', async () => {
      await pool.query(`UPDATE policy_shadow SET policy_text = policy_text || $1`, ['\np, key, *, .*, /api/projects/**, deny, key.projects-closed\n']);
      const r = await cli('promote');
      expect(r.code).to.equal(1);
      expect(r.err).to.include('fails lint or the suites');
      expect((await pool.query('SELECT count(*)::int n FROM policy_versions WHERE version > 0')).rows[0].n).to.equal(1);
    });
  });

  describe('when shadow evaluation is turned off', () => {
    it('then both instances stop evaluating the candidate', async () => {
      expect((await cli('shadow', 'off')).out).to.include('dropped the candidate');
      await until('no candidate', candidateOn(null), 1000);
      await fetch(`${a.url}/healthz`);
      expect(await (await fetch(`${a.url}/metrics`)).text()).to.not.match(/^keygate_policy_shadow_divergences_total\{/m);
      expect((await cli('shadow', 'report')).out).to.include('no candidate policy');
    });
  });

  describe('when 400 requests are decided with and without a candidate', () => {
    it('then the candidate adds no database query', async () => {
      // Counted on the gateway's own pool: every query it sends goes through query() or a client from connect().
      let queries = 0;
      type Passthrough = (...args: unknown[]) => unknown;
      const real = { query: a.pool.query.bind(a.pool) as Passthrough, connect: a.pool.connect.bind(a.pool) as Passthrough };
      Object.assign(a.pool, {
        query: (...args: unknown[]) => (queries++, real.query(...args)),
        connect: (...args: unknown[]) => (queries++, real.connect(...args)),
      });
      const fourHundred = async () => {
        const before = queries;
        for (let i = 0; i < 400; i++) await (await fetch(`${a.url}/healthz`)).arrayBuffer();
        return queries - before;
      };
      const withCandidate = await fourHundred();
      await cli('shadow', 'off');
      await until('no candidate', candidateOn(null), 1000);
      const without = await fourHundred();
      expect(withCandidate).to.equal(without);
      expect(a.policy.observer.divergenceCounts()[0]?.count).to.equal(400);
    });
  });
});
