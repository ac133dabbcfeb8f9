import { expect } from 'chai';
import pg from 'pg';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { serverUrl } from '../../support/db.ts';
import { Client, signUp } from '../../support/http.ts';

describe('errors the client did not cause', () => {
  let gw: TestGateway;
  useGateway({}, (g) => (gw = g), 'each');

  it('an unexpected error is a 500 problem with no stack or SQL, logged with the request id', async () => {
    const { client } = await signUp(gw.url);
    // Break the schema under the running gateway: the next query fails in a way no route expects.
    await gw.pool.query('ALTER TABLE organizations RENAME TO organizations_gone');
    const res = await client.get('/api/auth/organization/list');
    expect(res.status).to.equal(500);
    expect(res.headers['content-type']).to.match(/application\/problem\+json/);
    expect(res.body).to.include({ status: 500, code: 'INTERNAL' });
    expect(res.text).to.not.match(/organizations|SELECT|relation|at \w+ \(/);
    const requestId = res.headers['x-request-id']!;
    expect(requestId).to.match(/^[0-9a-f-]{36}$/);
    const line = gw.logs.find((l) => l.includes(requestId) && l.includes('unexpected error'));
    expect(line, 'a log line with the request id').to.be.a('string');
    expect(line).to.include('organizations');
  });

  it('a database that stops accepting connections fails the request closed with 503, and recovers', async () => {
    const { client } = await signUp(gw.url);
    const admin = new pg.Client({ connectionString: await serverUrl() });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${gw.database.name} WITH ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [gw.database.name]);
      const res = await client.get('/api/auth/get-session');
      expect(res.status).to.equal(503);
      expect(res.body.code).to.equal('SERVICE_UNAVAILABLE');
      expect((await client.get('/readyz')).status).to.equal(503);
      await admin.query(`ALTER DATABASE ${gw.database.name} WITH ALLOW_CONNECTIONS true`);
      // The pool kept no broken connection and holds no back-off: the very next request connects anew.
      expect((await client.get('/api/auth/get-session')).status).to.equal(200);
      expect((await client.get('/readyz')).status).to.equal(200);
    } finally {
      await admin.query(`ALTER DATABASE ${gw.database.name} WITH ALLOW_CONNECTIONS true`).catch(() => {});
      await admin.end();
    }
  });

  it('an unknown path under the prefix with no upstream is a 404 problem; a known path with another method is 405', async () => {
    const { client } = await signUp(gw.url);
    const missing = await client.get('/api/nothing-here');
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal('NOT_FOUND');
    const wrong = await client.put('/api/api-keys', {});
    expect(wrong.status).to.equal(405);
    expect((await new Client(gw.url).get('/nowhere')).status).to.equal(401);
  });
});
