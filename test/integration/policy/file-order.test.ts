import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { createPolicyService } from '../../../src/services/policy/index.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { tempDir } from '../../support/tmp.ts';
import { root } from './support.ts';

// Two deny lines match one request; the first in the file names the decision (and so the 403's
// wording). The store must hand the lines back in file order even after PostgreSQL moved rows.

const KEY = { kind: 'key', permissions: [], role: 'user' } as const;

describe('policy lines built from the database', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeEach(async () => {
    db = await createTestDatabase('kg_order');
    pool = createPool(db.url);
    await migrate(pool, join(root, 'migrations'));
  });
  afterEach(async () => {
    await pool.end();
    await db.drop();
  });

  describe('when the table stores the first matching deny after the second', () => {
    it('then the engine still names the line that comes first in the file', async () => {
      const file = join(tempDir('kg-order-'), 'ordered.csv');
      await writeFile(file, `${await readFile(join(root, 'policies/variant-a.csv'), 'utf8')}
p, key, *, .*, /api/projects/**, deny, key.projects-first
p, key, *, .*, /api/projects/**, deny, key.projects-second
`);
      const files = { model: join(root, 'policies/model.conf'), file };
      const svc = createPolicyService({ pool, files });
      await svc.bootstrap();
      expect(svc.holder.current.decide(KEY, 'GET', '/api/projects').ruleId).to.equal('key.projects-first');

      // An update writes a new row version at the end of the page, as reused space after VACUUM would.
      await pool.query(`UPDATE casbin SET ptype = ptype WHERE rule->>5 = 'key.projects-first'`);
      const unordered = (await pool.query<{ rule: string[] }>('SELECT ptype, rule FROM casbin')).rows.map((r) => r.rule[5]);
      expect(unordered.indexOf('key.projects-first')).to.be.greaterThan(unordered.indexOf('key.projects-second'), 'what casbin-pg-adapter reads');

      await svc.reload();
      expect(svc.holder.current.decide(KEY, 'GET', '/api/projects').ruleId).to.equal('key.projects-first');
      const fresh = createPolicyService({ pool, files });
      await fresh.bootstrap();
      expect(fresh.holder.current.decide(KEY, 'GET', '/api/projects').ruleId).to.equal('key.projects-first');
    });
  });
});
