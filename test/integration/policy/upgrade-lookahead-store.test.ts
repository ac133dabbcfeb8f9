import { expect } from 'chai';
import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../../src/config.ts';
import { migrationsDir } from '../../../src/services/database.ts';
import { readStoredRules } from '../../../src/store/casbin.ts';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { startTestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { tempDir } from '../../support/tmp.ts';

// A store seeded from the policy files of an earlier release holds the shipped lookahead lines,
// which a gateway now refuses to load. Upgrading must not stop every start: the migration rewrites
// exactly those lines in their linear form, and the gateway then decides as before.

const LOOKAHEADS: Record<string, string> = {
  'anon.needs-caller': '^/api(/(?!(auth/sign-(up|in)/email|openapi\\.json)$).*)?$',
  'key.ai-needs-ai': '^/api/ai(/(?!automations(/|$)).*)?$',
  'key.auth-layer': '^/api/auth(/(?!(get-session|api-key/get|api-key/list|organization/list|organization/get-active-member)$).*)?$',
};

/** The shipped Variant A lines, with the paths the earlier release shipped for the lookahead lines. */
function earlierReleaseRows(): string[][] {
  return readFileSync(resolve(packageRoot, 'policies/variant-a.csv'), 'utf8').split('\n')
    .filter((l) => l.startsWith('p,'))
    .map((l) => {
      const fields = l.split(',').map((f) => f.trim()).slice(1);
      const old = LOOKAHEADS[fields[5]!];
      return old ? [...fields.slice(0, 3), old, ...fields.slice(4)] : fields;
    });
}

describe('upgrading a store that holds the earlier shipped lookahead lines', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: Pool;
  before(async () => {
    db = await createTestDatabase('kg_upgrade');
    pool = createPool(db.url);
    // The schema as the earlier release left it: every migration before the rewrite.
    const earlier = tempDir('kg-mig-');
    for (const f of readdirSync(migrationsDir).filter((f) => f.endsWith('.sql') && f < '012')) copyFileSync(join(migrationsDir, f), join(earlier, f));
    await migrate(pool, earlier);
    for (const rule of earlierReleaseRows()) await pool.query("INSERT INTO casbin (ptype, rule) VALUES ('p', $1::jsonb)", [JSON.stringify(rule)]);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('then the migration rewrites those lines, the gateway starts on the store and decides as the files do', async () => {
    const stored = (await pool.query<{ rule: string[] }>('SELECT rule FROM casbin')).rows.map((r) => r.rule[3]);
    expect(stored).to.include(LOOKAHEADS['key.auth-layer']);
    const gw = await startTestGateway({ database: db });
    try {
      const paths = (await readStoredRules(pool)).map((r) => r.path);
      expect(paths.filter((p) => p.includes('(?!'))).to.deep.equal([]);
      expect(paths).to.include('/api/auth/** except /api/auth/get-session /api/auth/api-key/get /api/auth/api-key/list /api/auth/organization/list /api/auth/organization/get-active-member');
      // The decisions those lines make: anonymous may sign up, a key reads its session but not the rest of the auth layer.
      expect((await new Client(gw.url).get('/api/projects')).status).to.equal(401);
      const { client } = await signUp(gw.url);
      const key = (await client.post('/api/api-keys', { name: 'upgrade' })).body.key as string;
      const asKey = new Client(gw.url).withKey(key);
      expect((await asKey.get('/api/auth/get-session')).status).to.equal(200);
      expect((await asKey.get('/api/auth/list-sessions')).status).to.equal(403);
    } finally {
      await gw.stop();
    }
  });
});
