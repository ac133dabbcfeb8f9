import { failedStart } from '../../support/serve-child.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { applyPolicy, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { tempDir } from '../../support/tmp.ts';
import { startTestGateway, useGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { startEcho, TRACE, type Echo } from '../../support/echo.ts';
import { operatorPolicySet, shipped } from './scopes-support.ts';
import { until } from '../../support/until.ts';

// Operator scopes end to end: an operator declares scopes in a policy set of their own and writes the
// lines that use them; no TypeScript changes. Everything goes through the real server.

async function createKey(client: Client, body: Record<string, unknown>): Promise<string> {
  const res = await client.post('/api/api-keys', { name: 'k', ...body });
  expect(res.status, res.text).to.equal(201);
  return res.body.key as string;
}

describe('scopes declared as data: an operator adds reports and exports (Variant A)', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let echo: Echo;
  let session: Client;

  before(async () => {
    echo = await startEcho();
    const set = operatorPolicySet();
    gw = await startTestGateway({ config: { upstream: { url: echo.url }, policy: { model: set.model, file: set.file, scopes: set.scopes } } });
    session = (await signUp(gw.url)).client;
  });
  after(async () => {
    await gw?.stop();
    await echo?.close();
  });

  it('GET /api/scopes lists every declared scope in file order, with available false while its feature is off', async () => {
    const res = await session.get('/api/scopes');
    expect(res.status).to.equal(200);
    expect(res.body.scopes).to.deep.equal([
      { name: 'ai', label: 'Allow AI access', description: 'Lets the key use the AI features: chat, capabilities and automations.', actions: ['access'], available: false },
      { name: 'mcp', label: 'Allow MCP access', description: 'Lets an AI agent connect to the MCP server with this key and act as you.', actions: ['access'], available: true },
      { name: 'reports', label: 'Reports', description: 'The reporting API.', actions: ['read', 'write'], available: true },
      { name: 'exports', label: 'Exports', description: 'Bulk data exports.', actions: ['access'], available: true },
    ]);
    const anonymous = await new Client(gw.url).get('/api/scopes');
    expect(anonymous.status).to.equal(401);
  });

  describe('when a create asks for what the file does not declare, then it is refused with the field named and nothing is created', () => {
    const cases: { what: string; body: Record<string, unknown>; path: string }[] = [
      { what: 'an undeclared scope', body: { permissions: { billing: ['access'] } }, path: 'permissions.billing' },
      { what: 'an undeclared action', body: { permissions: { reports: ['delete'] } }, path: 'permissions.reports' },
      { what: 'an empty action list', body: { permissions: { reports: [] } }, path: 'permissions.reports' },
      { what: 'the access action of a scope without it', body: { permissions: { reports: ['access'] } }, path: 'permissions.reports' },
    ];
    for (const c of cases) {
      it(`${c.what}: 400 VALIDATION_FAILED at ${c.path}`, async () => {
        const before = (await session.get('/api/api-keys')).body.keys.length as number;
        const res = await session.post('/api/api-keys', { name: 'bad', ...c.body });
        expect(res.status).to.equal(400);
        expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
        expect(res.body.errors.map((e: { path: string }) => e.path)).to.deep.equal([c.path]);
        expect((await session.get('/api/api-keys')).body.keys.length).to.equal(before);
      });
    }

    it('a scope whose requires feature is off (ai, with ai.enabled false): 400 FEATURE_DISABLED, by shorthand and by map alike', async () => {
      for (const body of [{ ai: true }, { permissions: { ai: ['access'] } }]) {
        const res = await session.post('/api/api-keys', { name: 'ai', ...body });
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('FEATURE_DISABLED');
      }
    });
  });

  it('a key with reports:read is forwarded on reads, and the upstream sees x-keygate-permissions: reports:read', async () => {
    const client = new Client(gw.url).withKey(await createKey(session, { permissions: { reports: ['read'] } }));
    const res = await client.request('GET', '/api/reports/r-1', undefined, { [TRACE]: 'read-1' });
    expect(res.status).to.equal(200);
    const [seen] = echo.received('read-1');
    expect(seen?.headers['x-keygate-permissions']).to.equal('reports:read');
  });

  it('the same key is refused a write with 403 naming reports:write in requiredPermission and in words from the label; the upstream never hears of it', async () => {
    const client = new Client(gw.url).withKey(await createKey(session, { permissions: { reports: ['read'] } }));
    const res = await client.request('POST', '/api/reports', { title: 'q3' }, { [TRACE]: 'write-1' });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('FORBIDDEN');
    expect(res.body.requiredPermission).to.equal('reports:write');
    expect(res.body.detail).to.include('"reports:write"').and.include('Reports (write)');
    expect(echo.received('write-1')).to.deep.equal([]);
  });

  it('a key without the scope is told the least that opens each route: reports:read for a read, exports for exports', async () => {
    const client = new Client(gw.url).withKey(await createKey(session, {}));
    expect((await client.get('/api/reports')).body.requiredPermission).to.equal('reports:read');
    expect((await client.get('/api/exports/e-1')).body.requiredPermission).to.equal('exports');
  });

  it('a key with both actions, exports and the mcp shorthand writes reports, and the upstream sees every held permission in x-keygate-permissions', async () => {
    const key = await createKey(session, { mcp: true, permissions: { reports: ['write', 'read'], exports: ['access'] } });
    const created = await session.get('/api/api-keys');
    expect(created.body.keys[0].permissions).to.deep.equal({ mcp: ['access'], reports: ['read', 'write'], exports: ['access'] });
    expect(created.body.keys[0].mcp).to.equal(true);
    const res = await new Client(gw.url).withKey(key).request('POST', '/api/reports', { title: 'q3' }, { [TRACE]: 'write-2' });
    expect(res.status).to.equal(200);
    expect(echo.received('write-2')[0]?.headers['x-keygate-permissions']).to.equal('exports,mcp,reports:read,reports:write');
  });
});

describe('scopes declared as data: a new scope reaches a running second instance after policy apply', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let gw1: TestGateway;
  let gw2: TestGateway;
  let echo: Echo;

  before(async () => {
    db = await createTestDatabase();
    echo = await startEcho();
    gw1 = await startTestGateway({ database: db, config: { upstream: { url: echo.url } } });
    gw2 = await startTestGateway({ database: db, config: { upstream: { url: echo.url } } });
  });
  after(async () => {
    await gw1?.stop();
    await gw2?.stop();
    await echo?.close();
    await db?.drop();
  });

  it('within 1000 ms: GET /api/scopes, the create body and the decisions on instance 2 know reports', async () => {
    const session = (await signUp(gw2.url)).client;
    const names = async () => ((await session.get('/api/scopes')).body.scopes as { name: string }[]).map((s) => s.name);
    expect(await names()).to.deep.equal(['ai', 'mcp']);
    expect((await session.post('/api/api-keys', { name: 'early', permissions: { reports: ['read'] } })).status).to.equal(400);

    const set = operatorPolicySet();
    const applied = await applyPolicy(gw1.pool, await readPolicyFiles({ model: set.model, file: set.file, scopes: set.scopes }), { by: 'test', message: '' });
    expect(applied).to.include({ status: 'applied', scopes: 4 });
    await until('instance 2 picks up the new scope', async () => (await names()).includes('reports'), 1000);
    const key = await createKey(session, { permissions: { reports: ['read'] } });
    const refused = await new Client(gw2.url).withKey(key).post('/api/reports', {});
    expect(refused.status).to.equal(403);
    expect(refused.body.requiredPermission).to.equal('reports:write');
    expect((await new Client(gw2.url).withKey(key).get('/api/reports')).status).to.equal(200);
  });

  it('the scopes text is stored beside the casbin rows, and a removed scope then opens nothing for a key that still holds it', async () => {
    const session = (await signUp(gw1.url)).client;
    const key = await createKey(session, { permissions: { exports: ['access'] } });
    expect((await new Client(gw1.url).withKey(key).get('/api/exports/e-1')).status).to.equal(200);
    const { rows } = await gw1.pool.query<{ text: string }>('SELECT text FROM policy_scopes');
    expect(rows[0]?.text).to.include('exports:');

    // Back to the shipped files: exports is no longer declared; the key keeps its stored permission.
    await applyPolicy(gw1.pool, await readPolicyFiles({ model: shipped('model.conf'), file: shipped('variant-a.csv'), scopes: shipped('scopes.yaml') }), { by: 'test', message: '' });
    await until('reloaded with the shipped scopes', async () => ((await session.get('/api/scopes')).body.scopes as unknown[]).length === 2, 1000);
    const res = await new Client(gw1.url).withKey(key).request('GET', '/api/exports/e-1', undefined, { [TRACE]: 'removed-1' });
    expect(res.status).to.equal(200);
    expect(echo.received('removed-1')[0]?.headers['x-keygate-permissions']).to.equal('');
    expect((await session.get('/api/api-keys')).body.keys[0].permissions).to.deep.equal({ exports: ['access'] });
  });
});

describe('scopes declared as data: Variant B offers and accepts none', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  useGateway({ config: { apiKeys: { enabled: true, variant: 'B' }, ai: { enabled: true } } }, (g) => (gw = g));

  it('GET /api/scopes answers { scopes: [] } to a session and to a key, and a create with permissions is 400', async () => {
    const session = (await signUp(gw.url)).client;
    expect((await session.get('/api/scopes')).body).to.deep.equal({ scopes: [] });
    const key = await createKey(session, {});
    expect((await new Client(gw.url).withKey(key).get('/api/scopes')).body).to.deep.equal({ scopes: [] });
    const res = await session.post('/api/api-keys', { name: 'scoped', permissions: { ai: ['access'] } });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('VALIDATION_FAILED');
  });
});

describe('scopes declared as data: an invalid scopes file stops the start', function () {
  this.timeout(60_000);
  it('exits 1 with one line naming the file, line and field', async () => {
    const db = await createTestDatabase();
    try {
      const dir = tempDir('kg-bad-scopes-');
      writeFileSync(join(dir, 'scopes.yaml'), 'scopes:\n  reports:\n    label: Reports\n    actions: [Read]\n');
      writeFileSync(join(dir, 'keygate.yaml'), 'policy:\n  scopes: scopes.yaml\n');
      const { code, stderr } = await failedStart({ cwd: dir, env: { ...process.env, DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'warn' } });
      expect(code).to.equal(1);
      expect(stderr.trim().split('\n')).to.have.length(1);
      expect(stderr).to.match(/scopes\.yaml:4: scopes\.reports\.actions\.0: lower-case/);
    } finally {
      await db.drop();
    }
  });
});
