import { expect } from 'chai';
import { applyPolicy, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { createPool } from '../../../src/store/db.ts';
import { commandExists, startPgBouncer, until, type PgBouncer } from '../../support/engines.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, serverUrl, type TestDatabase } from '../../support/db.ts';
import { Client, signUp } from '../../support/http.ts';

// DATABASE_URL through a transaction-pooling PgBouncer, DATABASE_DIRECT_URL for what
// needs a session (LISTEN, migrations and their lock, policy apply). Three gateways start
// together on an empty database; the request path holds no session state, and signals still
// reach every instance within a second.

const config = { apiKeys: { enabled: true, variant: 'A', maxKeysPerUser: 10, maxCreatesPerDay: 20 } };

describe('three gateways through PgBouncer in transaction mode', function () {
  let bouncer: PgBouncer;
  let database: TestDatabase;
  let gateways: TestGateway[] = [];

  before(async function () {
    this.timeout(90_000);
    if (!commandExists('pgbouncer')) {
      this.test!.parent!.title += ' (skipped: pgbouncer not installed; .ci/run installs it)';
      this.skip();
    }
    bouncer = await startPgBouncer(await serverUrl());
    database = await createTestDatabase();
    const env = { DATABASE_URL: bouncer.urlFor(database.name), DATABASE_DIRECT_URL: database.url };
    // Together, on a database no migration has touched: one takes the migration lock, the others
    // wait on it and find nothing left to do.
    gateways = await Promise.all([0, 1, 2].map(() => startTestGateway({ database, env, config })));
  });
  after(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await database?.drop();
    await bouncer?.stop();
  });

  it('when they started together on an empty database, then every migration ran once and no advisory lock is left held', async () => {
    const { rows } = await gateways[0]!.pool.query<{ name: string; n: string }>('SELECT name, count(*) n FROM schema_migrations GROUP BY name');
    expect(rows.length).to.be.at.least(5);
    expect(rows.every((r) => r.n === '1')).to.equal(true);
    const direct = createPool(database.url, 1);
    try {
      const locks = await direct.query("SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = $1", [database.name]);
      expect(locks.rowCount).to.equal(0);
    } finally {
      await direct.end();
    }
  });

  it('when 60 keys are used for the first time at once across the three, then every answer is a 200', async function () {
    this.timeout(60_000);
    const keys: string[] = [];
    for (let u = 0; u < 6; u++) {
      const { client } = await signUp(gateways[u % 3]!.url);
      for (let i = 0; i < 10; i++) keys.push((await client.post('/api/api-keys', { name: `k${i}` })).body.key);
    }
    const statuses = await Promise.all(keys.map((k, i) => new Client(gateways[i % 3]!.url).withKey(k).get('/api/auth/get-session').then((r) => r.status)));
    expect(statuses.filter((s) => s !== 200)).to.deep.equal([]);
  });

  it('when a key is revoked on one, then the other two refuse it within 1 s', async function () {
    this.timeout(30_000);
    const { client } = await signUp(gateways[0]!.url);
    const created = (await client.post('/api/api-keys', { name: 'revoke-me' })).body;
    const users = gateways.map((g) => new Client(g.url).withKey(created.key));
    for (const u of users) expect((await u.get('/api/auth/get-session')).status).to.equal(200);
    expect((await client.delete(`/api/api-keys/${created.id}`)).status).to.equal(204);
    const times = await Promise.all(users.slice(1).map((u) => until('revocation reaches the instance', async () => (await u.get('/api/auth/get-session')).status === 401, 1000, 20)));
    console.log(`      (revocation reached the other instances after ${times.join(' and ')} ms)`);
  });

  it('when a policy is applied over the direct URL, then every instance decides by it within 1 s', async function () {
    this.timeout(30_000);
    const { client } = await signUp(gateways[0]!.url);
    const key = (await client.post('/api/api-keys', { name: 'policy' })).body.key as string;
    const users = gateways.map((g) => new Client(g.url).withKey(key));
    for (const u of users) expect((await u.get('/api/projects')).status).to.not.equal(403);
    const cfg = gateways[0]!.config;
    const texts = await readPolicyFiles(cfg.policy);
    const direct = createPool(database.url, 2);
    try {
      await applyPolicy(direct, { ...texts, policy: `${texts.policy}\np, key, *, .*, /api/projects/**, deny, test.no-projects\n` }, { by: 'test', message: '' });
    } finally {
      await direct.end();
    }
    const times = await Promise.all(users.map((u) => until('the policy reaches the instance', async () => (await u.get('/api/projects')).status === 403, 1000, 20)));
    console.log(`      (policy apply reached the instances after ${times.join(', ')} ms)`);
  });
});
