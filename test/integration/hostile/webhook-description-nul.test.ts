import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';

// An admin's webhook description holding NUL: PostgreSQL text refuses it, so it must be refused as
// bad input (an RFC 9457 problem naming the field) before anything is written, not end in a 500.

describe('hostile: a webhook description holding NUL', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;

  before(async () => {
    gw = await startTestGateway({});
    const s = await signUpAdmin(gw, { name: 'Admin' });
    admin = s.client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
  });

  const count = async (sql: string) => (await gw.pool.query(sql)).rows[0].n as number;
  const expectRefused = (r: { status: number; headers: Record<string, unknown>; body: { code: string; errors: unknown } }) => {
    expect(r.status).to.equal(400);
    expect(r.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(r.body.code).to.equal('VALIDATION_FAILED');
    expect(r.body.errors).to.deep.equal([{ path: 'description', message: 'must not contain NUL' }]);
  };

  it('on create: 400, and no endpoint or audit entry is written', async () => {
    const before = await count("SELECT count(*)::int AS n FROM audit_log WHERE type LIKE 'WEBHOOK_%'");
    expectRefused(await admin.post('/api/admin/webhooks', { url: 'https://example.com/hook', description: 'billing\u0000' }));
    expect(await count('SELECT count(*)::int AS n FROM webhook_endpoints')).to.equal(0);
    expect(await count("SELECT count(*)::int AS n FROM audit_log WHERE type LIKE 'WEBHOOK_%'")).to.equal(before);
  });

  it('on update: 400, and the endpoint is unchanged (its other fields too)', async () => {
    const ep = (await admin.post('/api/admin/webhooks', { url: 'https://example.com/hook', description: 'billing' })).body;
    const patch = JSON.stringify({ description: 'x\u0000y', enabled: false });
    expectRefused(await admin.request('PATCH', `/api/admin/webhooks/${ep.id}`, patch, { 'content-type': 'application/json' }));
    const { rows } = await gw.pool.query('SELECT description, enabled FROM webhook_endpoints WHERE id = $1', [ep.id]);
    expect(rows).to.deep.equal([{ description: 'billing', enabled: true }]);
    expect(await count("SELECT count(*)::int AS n FROM audit_log WHERE type = 'WEBHOOK_UPDATED'")).to.equal(0);
  });
});
