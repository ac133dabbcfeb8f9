import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';

// JSON can carry half of a UTF-16 surrogate pair ("\ud800"), which is no character at all. Stored,
// it silently became U+FFFD: the admin's description changed without a word. It is bad input:
// refused with a problem naming the field, nothing written. A whole pair (an emoji) is fine.

describe('hostile: a webhook description holding a lone surrogate', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let admin: Client;

  before(async () => {
    gw = await startTestGateway({});
    admin = (await signUpAdmin(gw, { name: 'Admin' })).client;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
  });

  const raw = (path: string, method: string, json: string) => admin.request(method, path, json, { 'content-type': 'application/json' });
  const expectRefused = (r: { status: number; headers: Record<string, unknown>; body: { errors: unknown } }) => {
    expect(r.status).to.equal(400);
    expect(r.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(r.body.errors).to.deep.equal([{ path: 'description', message: 'must be well-formed Unicode' }]);
  };

  it('on create and on update: 400, nothing written; a whole surrogate pair is kept as sent', async () => {
    for (const d of ['\\ud800', 'a\\udfff', '\\ude00\\ud83d']) {
      expectRefused(await raw('/api/admin/webhooks', 'POST', `{"url":"https://example.com/hook","description":"${d}"}`));
    }
    expect((await gw.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n).to.equal(0);

    const ep = await raw('/api/admin/webhooks', 'POST', '{"url":"https://example.com/hook","description":"alerts \\ud83d\\ude00"}');
    expect(ep.status, ep.text).to.equal(201);
    expect(ep.body.description).to.equal('alerts 😀');
    expectRefused(await raw(`/api/admin/webhooks/${ep.body.id}`, 'PATCH', '{"description":"x\\ud800","enabled":false}'));
    const { rows } = await gw.pool.query('SELECT description, enabled FROM webhook_endpoints WHERE id = $1', [ep.body.id]);
    expect(rows).to.deep.equal([{ description: 'alerts 😀', enabled: true }]);
    expect((await gw.pool.query("SELECT count(*)::int AS n FROM audit_log WHERE type = 'WEBHOOK_UPDATED'")).rows[0].n).to.equal(0);
  });
});
