import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { applyPolicy, createPolicyService, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { failedStart } from '../../support/serve-child.ts';
import { tempDir } from '../../support/tmp.ts';

// A path pattern that is not linear-time never loads. An operator's
// `^/api/reports/(a+)+b$`, once applied, let one 30-character request path block the event loop for
// seconds. The one bundle check refuses it, so the start and apply do as lint does.

const root = resolve(import.meta.dirname, '../../..');
const MODEL = resolve(root, 'policies/model.conf');
const SLOW = 'p, key, *, .*, ^/api/reports/(a+)+b$, deny, key.reports-slow';

function policyWithSlowLine(): string {
  const file = join(tempDir('kg-linear-'), 'variant-a.csv');
  writeFileSync(file, `${readFileSync(resolve(root, 'policies/variant-a.csv'), 'utf8')}${SLOW}\n`);
  return file;
}

describe('a path pattern that is not linear-time', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: Pool;
  beforeEach(async () => {
    db = await createTestDatabase('kg_linear');
    pool = createPool(db.url);
    await migrate(pool, resolve(root, 'migrations'));
  });
  afterEach(async () => {
    await pool.end();
    await db.drop();
  });

  it('stops the start with exit 1, naming the file, the line and why', async () => {
    const file = policyWithSlowLine();
    const cwd = tempDir('kg-linear-start-');
    writeFileSync(join(cwd, 'keygate.yaml'), `policy:\n  file: ${file}\n`);
    const { code, stderr } = await failedStart({ cwd, env: { ...process.env, DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'warn' } });
    expect(code).to.equal(1);
    expect(stderr).to.match(/variant-a\.csv/);
    expect(stderr).to.match(/not linear-time: nested quantifiers/);
  });

  it('is refused by apply, which stores nothing', async () => {
    const svc = createPolicyService({ pool, files: { model: MODEL, file: resolve(root, 'policies/variant-a.csv') } });
    await svc.bootstrap();
    const before = (await pool.query('SELECT rule FROM casbin ORDER BY id')).rows;
    const failure = await applyPolicy(pool, await readPolicyFiles({ model: MODEL, file: policyWithSlowLine() }), { by: 'test', message: '' }).then(() => null, (e: Error) => e);
    expect(failure?.message).to.match(/not linear-time: nested quantifiers/);
    expect((await pool.query('SELECT rule FROM casbin ORDER BY id')).rows).to.deep.equal(before);
  });
});
