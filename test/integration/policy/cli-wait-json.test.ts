import { expect } from 'chai';
import type { Pool } from '../../../src/store/db.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { twoInstances, type TwoInstances } from './support.ts';
import { until } from '../../support/until.ts';

// The policy CLI on a fleet of two: `status --wait` and `apply --wait`, version 0 kept by the first
// apply over a seeded store, and the live commands' --json.

const CLOSE_PROJECTS = 'p, key, *, .*, /api/projects/**, deny, key.projects-closed';
const KEY = { kind: 'key', permissions: [], role: 'user' } as const;

describe('policy commands on a fleet: --wait, version 0 and --json', () => {
  let pool: Pool;
  let files: TwoInstances['files'];
  let a: TestGateway;
  let b: TestGateway;
  let cli: TwoInstances['cli'];
  twoInstances('kg_cli_wait', (s) => ({ pool, files, a, b, cli } = s));

  /** The heartbeats run an hour apart here: beat each instance once it has loaded `version`. */
  const beatWhenLoaded = async (version: number, ...gs: TestGateway[]) => {
    for (const g of gs) {
      await until(`version ${version} loaded`, () => g.policy.service.loaded.version === version, 5000);
      await g.policy.heartbeat.beat();
    }
  };

  describe('when status waits', () => {
    it('then it exits 1 once the time is up while an instance lags, and 0 as soon as every instance has reported the live version', async () => {
      expect((await cli('apply')).code).to.equal(0);
      // Both last reported version 0 (at their start).
      const late = await cli('status', '--wait', '1');
      expect(late.code).to.equal(1);
      expect(late.out.match(/ LAGGING: version 0 loaded, live is 1;/gm)).to.have.length(2);
      expect(late.err).to.include('2 instances not running live version 1 after waiting 1 s');

      const waiting = cli('status', '--wait', '60');
      await beatWhenLoaded(1, a, b);
      const settled = await waiting;
      expect(settled.code, settled.err).to.equal(0);
      expect(settled.out).to.match(/^live version 1\n/);
      expect(settled.out).to.not.include('LAGGING');
    });
  });

  describe('when apply waits', () => {
    it('then it applies, and exits 0 once both instances run the new version, or 1 when one never does', async () => {
      await cli('apply');
      await beatWhenLoaded(1, a, b);
      await files.append(CLOSE_PROJECTS);
      const applying = cli('apply', '--force', '--wait', '60');
      await beatWhenLoaded(2, a, b);
      const applied = await applying;
      expect(applied.code, applied.err).to.equal(0);
      expect(applied.out).to.include('as version 2');
      expect(applied.out).to.match(/^live version 2$/m);

      // b stops reporting (an instance stopped on purpose would leave the list): it last said
      // version 2, so version 3 waits for it in vain.
      b.policy.heartbeat.stop();
      await files.append('p, key, *, .*, /api/orgs/**, deny, key.orgs-closed');
      const applyingAlone = cli('apply', '--force', '--wait', '2');
      await beatWhenLoaded(3, a);
      const timedOut = await applyingAlone;
      expect(timedOut.code).to.equal(1);
      expect(timedOut.out).to.include('as version 3');
      expect(timedOut.err).to.include('1 instance not running live version 3 after waiting 2 s');
      expect(a.policy.service.holder.current.decide(KEY, 'GET', '/api/orgs').allowed).to.equal(false);
    });

    it('then --wait is refused beside --dry-run or --shadow, and takes whole seconds only', async () => {
      for (const args of [['--dry-run', '--wait', '5'], ['--shadow', '--wait', '5'], ['--wait', 'soon']]) {
        let error: unknown = null;
        await cli('apply', ...args).catch((e: unknown) => (error = e));
        expect(String(error), args.join(' ')).to.match(/--wait/);
      }
      expect((await pool.query('SELECT count(*)::int n FROM policy_versions WHERE version > 0')).rows[0].n).to.equal(0);
    });
  });

  describe('when the first apply replaces what the store was seeded with', () => {
    it('then the seed is kept as version 0, and rollback 0 brings its decisions back', async () => {
      const seededRules = (await pool.query('SELECT rule FROM casbin ORDER BY id')).rows;
      await files.append(CLOSE_PROJECTS);
      expect((await cli('apply', '--force', '--message', 'close projects')).code).to.equal(0);
      const history = await cli('history');
      expect(history.out).to.match(/^\* 1 [0-9a-f]{12} \S+ tester close projects$/m);
      expect(history.out).to.match(/^ {2}0 [0-9a-f]{12} \S+ keygate seeded from files at first start$/m);
      await until('version 1 on b', () => b.policy.service.loaded.version === 1, 5000);
      expect(b.policy.service.holder.current.decide(KEY, 'GET', '/api/projects').allowed).to.equal(false);

      const back = await cli('rollback', '0');
      expect(back.code, back.out + back.err).to.equal(0);
      expect(back.out).to.include('rolled back to version 0 as version 2');
      expect((await pool.query('SELECT rule FROM casbin ORDER BY id')).rows).to.deep.equal(seededRules);
      await until('version 2 on b', () => b.policy.service.loaded.version === 2, 5000);
      expect(b.policy.service.holder.current.decide(KEY, 'GET', '/api/projects').allowed).to.equal(true);
      // Version 0 is kept once: later applies add after it.
      expect((await pool.query('SELECT version FROM policy_versions ORDER BY version')).rows.map((r) => r.version)).to.deep.equal([0, 1, 2]);
    });
  });

  describe('when history, status and shadow report are asked for --json', () => {
    it('then each prints one JSON document', async () => {
      const seeded = JSON.parse((await cli('history', '--json')).out);
      expect(seeded).to.deep.include({ live: 0, seededOnly: false });
      expect(seeded.versions.map((v: { version: number; message: string }) => [v.version, v.message])).to.deep.equal([[0, 'seeded from files at first start']]);

      await cli('apply', '--message', 'first');
      const history = JSON.parse((await cli('history', '--json')).out);
      expect(history.live).to.equal(1);
      expect(history.versions.map((v: { version: number; message: string }) => [v.version, v.message])).to.deep.equal([[1, 'first'], [0, 'seeded from files at first start']]);
      expect(history.versions[0].sha256).to.match(/^[0-9a-f]{64}$/);

      await beatWhenLoaded(1, a, b);
      const status = await cli('status', '--json');
      expect(status.code).to.equal(0);
      const s = JSON.parse(status.out);
      expect(s).to.include({ liveVersion: 1, candidateId: null, lagging: 0 });
      expect(s.instances.map((i: { instanceId: string }) => i.instanceId).sort()).to.deep.equal([a.policy.heartbeat.instanceId, b.policy.heartbeat.instanceId].sort());

      expect(JSON.parse((await cli('shadow', 'report', '--json')).out)).to.deep.equal({ candidate: null, divergences: [] });
      await files.append(CLOSE_PROJECTS);
      expect((await cli('apply', '--shadow', '--force')).code).to.equal(0);
      const report = JSON.parse((await cli('shadow', 'report', '--json')).out);
      expect(report.candidate.id).to.be.a('number');
      expect(report.divergences).to.be.an('array');
    });
  });
});
