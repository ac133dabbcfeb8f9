import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Config } from '../../../src/config.ts';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { createPolicyAdmin, createPolicyService, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { systemClock } from '../../../src/services/clock.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { configFor, policyCli, policyCopy, root } from './support.ts';

// `keygate policy apply|history|rollback` against a real database, through the CLI's own dispatch.

const CLOSE_PROJECTS = 'p, key, *, .*, /api/projects/**, deny, key.projects-closed';

describe('policy versions', () => {
  let db: TestDatabase;
  let pool: Pool;
  let files: Awaited<ReturnType<typeof policyCopy>>;
  let config: Config;
  const cli = (...args: string[]) => policyCli(pool, config, args);
  // The numbered versions applies made; version 0 (the seed, kept by the first apply) is tested on its own.
  const versions = async () => (await pool.query<{ version: number; message: string; applied_by: string }>('SELECT version, message, applied_by FROM policy_versions WHERE version > 0 ORDER BY version')).rows;
  const storedRules = async () => (await pool.query('SELECT rule FROM casbin ORDER BY id')).rows;

  beforeEach(async () => {
    db = await createTestDatabase('kg_versions');
    pool = createPool(db.url);
    await migrate(pool, join(root, 'migrations'));
    files = await policyCopy();
    config = configFor(db.url, files);
    // A gateway's first start seeds the store from the files, as version 0.
    await createPolicyService({ pool, files }).bootstrap();
  });
  afterEach(async () => {
    await pool.end();
    await db.drop();
  });

  describe('when the store was only seeded', () => {
    it('then history lists it as version 0, and the first apply stores version 1 although the lines are the same', async () => {
      // What the first start seeded is version 0 from that moment, listed like any other.
      expect((await cli('history')).out).to.match(/^\* 0 [0-9a-f]{12} \S+ keygate seeded from files at first start\n$/);
      const r = await cli('apply', '--message', 'first');
      expect(r.code).to.equal(0);
      expect(r.out).to.include('as version 1 (');
      expect(await versions()).to.deep.equal([{ version: 1, message: 'first', applied_by: 'tester' }]);
    });
  });

  describe('when the live engine is asked for again (each explain the console makes)', () => {
    it('then it is built once per version, and anew once another version is live', async () => {
      await cli('apply', '--message', 'open');
      const service = createPolicyAdmin({ pool, clock: systemClock }).versions;
      const texts = await readPolicyFiles(files);
      const first = await service.liveEngine(texts);
      expect(first.version).to.equal(1);
      expect((await service.liveEngine(texts)).engine).to.equal(first.engine);
      await files.append(CLOSE_PROJECTS);
      await cli('apply', '--force', '--message', 'close projects');
      const second = await service.liveEngine(texts);
      expect(second.version).to.equal(2);
      expect(second.engine).to.not.equal(first.engine);
      expect(second.engine.decide({ kind: 'key', permissions: [], role: 'user' }, 'GET', '/api/projects/1').allowed).to.equal(false);
    });
  });

  describe('when what is live is applied again', () => {
    it('then it says already live as version N and stores nothing', async () => {
      await cli('apply');
      const r = await cli('apply', '--by', 'ops');
      expect(r.code).to.equal(0);
      expect(r.out).to.include('already live as version 1');
      expect(await versions()).to.have.length(1);
    });
  });

  describe('when changes are applied and one is rolled back', () => {
    it('then history lists them newest first with the live one marked, and the rollback is a new version', async () => {
      await cli('apply', '--message', 'open');
      await files.append(CLOSE_PROJECTS);
      expect((await cli('apply', '--force', '--by', 'ops', '--message', 'close projects')).out).to.include('as version 2');
      const closed = await storedRules();
      const r = await cli('rollback', '1');
      expect(r.code).to.equal(0);
      expect(r.out).to.include('rolled back to version 1 as version 3');
      expect(await storedRules()).to.have.length(closed.length - 1);
      const lines = (await cli('history')).out.trimEnd().split('\n');
      expect(lines).to.have.length(4);
      expect(lines[3]).to.match(/^ {2}0 [0-9a-f]{12} \S+ keygate seeded from files at first start$/);
      expect(lines[0]).to.match(/^\* 3 [0-9a-f]{12} \d{4}-\d\d-\d\dT[\d:.]+Z tester rollback to 1$/);
      expect(lines[1]).to.match(/^ {2}2 [0-9a-f]{12} \S+ ops close projects$/);
      expect(lines[2]).to.match(/^ {2}1 [0-9a-f]{12} \S+ tester open$/);
      // Versions 1 and 3 hold the same texts, so the same digest.
      expect(lines[0]!.split(' ')[2]).to.equal(lines[2]!.split(' ')[3]);
      expect((await cli('history', '--limit', '1')).out.trimEnd().split('\n')).to.have.length(1);
      // A why, as the console's rollback takes one.
      expect((await cli('rollback', '2', '--message', 'projects closed again')).out).to.include('as version 4');
      expect((await versions()).at(-1)).to.deep.equal({ version: 4, message: 'projects closed again', applied_by: 'tester' });
    });
  });

  describe('when a suite beside the policy fails', () => {
    it('then apply says why, writes nothing and exits 1; --force applies it and says so', async () => {
      await cli('apply');
      await files.append(CLOSE_PROJECTS);
      const before = await storedRules();
      const refused = await cli('apply');
      expect(refused.code).to.equal(1);
      expect(refused.out).to.match(/FAIL .*variant-a\.yaml:\d+ .*\/api\/projects.*decided deny by key\.projects-closed/);
      expect(refused.err).to.include('nothing was written');
      expect(await versions()).to.have.length(1);
      expect(await storedRules()).to.deep.equal(before);

      const forced = await cli('apply', '--force');
      expect(forced.code).to.equal(0);
      expect(forced.out).to.include('--force: lint and the suites were skipped');
      expect(await versions()).to.have.length(2);
    });
  });

  describe('when lint finds a problem', () => {
    it('then apply refuses before the suites matter', async () => {
      await files.append('p, key, *, .*, /api/projects/**, deny, key.api');
      const r = await cli('apply');
      expect(r.code).to.equal(1);
      expect(r.out).to.match(/lint .*variant-a\.csv:\d+: rule id "key\.api" is already used/);
      expect(await versions()).to.have.length(0);
    });
  });

  describe('when apply is a dry run', () => {
    it('then it prints the checks and the decisions that would change, and writes nothing', async () => {
      await cli('apply');
      await writeFile(join(files.dir, 'tests', 'closed.yaml'), 'policy: ../variant-a.csv\ncases:\n  - { subject: key, method: GET, path: /api/projects, expect: deny, rule: key.projects-closed }\n');
      await files.append(CLOSE_PROJECTS);
      const r = await cli('apply', '--dry-run');
      expect(r.code).to.equal(1, 'the shipped suite still expects projects open');
      expect(r.out).to.include('changes from live version 1 to');
      expect(r.out).to.match(/GET \/api\/projects {2}key(, key\[\w+\])*.*: allow \(key\.api\) -> deny \(key\.projects-closed\)/);
      expect(r.out).to.include('dry run: nothing written; the checks failed');
      expect(await versions()).to.have.length(1);
    });
  });

  describe('when a flag is unknown or flags contradict each other', () => {
    it('then the command fails and nothing is applied', async () => {
      await files.append(CLOSE_PROJECTS);
      let error: unknown = null;
      await cli('apply', '--dryrun').catch((e: unknown) => (error = e));
      expect((error as { code?: string } | null)?.code).to.equal('ERR_PARSE_ARGS_UNKNOWN_OPTION');
      error = null;
      await cli('apply', '--dry-run', '--shadow').catch((e: unknown) => (error = e));
      expect(String(error)).to.include('do not go together');
      expect(await versions()).to.have.length(0);
    });
  });

  describe('when a version that does not exist is rolled back to', () => {
    it('then it fails naming it', async () => {
      let error: unknown = null;
      await cli('rollback', '7').catch((e: unknown) => (error = e));
      expect(String(error)).to.include('There is no policy version 7');
    });
  });
});
