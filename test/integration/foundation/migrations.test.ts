import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { migrationsDir } from '../../../src/services/database.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { tempDir } from '../../support/tmp.ts';

const files = readdirSync(migrationsDir).filter((f) => f.endsWith('.sql')).sort();

describe('migrations', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeEach(async () => {
    db = await createTestDatabase('mig');
    pool = createPool(db.url);
  });
  afterEach(async () => {
    await pool.end();
    await db.drop();
  });

  it('from an empty database, applies every file in order and records each', async () => {
    const { applied } = await migrate(pool, migrationsDir);
    expect(applied).to.deep.equal(files);
    const { rows } = await pool.query('SELECT name FROM schema_migrations ORDER BY name');
    expect(rows.map((r) => r.name)).to.deep.equal(files);
    const tables = await pool.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
    expect(tables.rows.map((r) => r.table_name)).to.include.members(['users', 'sessions', 'organizations', 'members', 'apikeys', 'audit_log', 'counters', 'casbin']);
  });

  it('a second run is a no-op', async () => {
    await migrate(pool, migrationsDir);
    const again = await migrate(pool, migrationsDir);
    expect(again.applied).to.deep.equal([]);
  });

  it('two runners started at once do not collide: each file is applied exactly once', async () => {
    const other = createPool(db.url);
    try {
      const [a, b] = await Promise.all([migrate(pool, migrationsDir), migrate(other, migrationsDir)]);
      expect([...a.applied, ...b.applied].sort()).to.deep.equal(files);
      const { rows } = await pool.query('SELECT count(*)::int n FROM schema_migrations');
      expect(rows[0].n).to.equal(files.length);
    } finally {
      await other.end();
    }
  });

  it('a failing file rolls back whole and is not recorded', async () => {
    const { writeFileSync, copyFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const dir = tempDir('kg-mig-');
    for (const f of files) copyFileSync(join(migrationsDir, f), join(dir, f));
    writeFileSync(join(dir, '999_broken.sql'), 'CREATE TABLE half_done (id int); SELECT no_such_function();');
    let error: Error | null = null;
    try {
      await migrate(pool, dir);
    } catch (e) {
      error = e as Error;
    }
    expect(error?.message).to.match(/999_broken\.sql/);
    const { rows } = await pool.query("SELECT to_regclass('half_done') AS t, (SELECT count(*)::int FROM schema_migrations WHERE name = '999_broken.sql') AS n");
    expect(rows[0]).to.deep.equal({ t: null, n: 0 });
  });
});
