import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';

// GET /api/admin/api-keys filtered by owner e-mail, state and scope: the filters
// reach the query, so a page holds only matching keys, and a bad value is a 400 that names it.

describe('API keys: the admin list filters', () => {
  let gw: TestGateway;
  useGateway({ config: { mcpServer: { enabled: true } } }, (g) => (gw = g));

  async function world() {
    const admin = await signUp(gw.url, { name: 'Admin' });
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
    const ann = await signUp(gw.url, { email: `Ann-${Date.now()}@example.test` });
    const bob = await signUp(gw.url);
    const make = async (who: typeof ann, body: Record<string, unknown>) => (await who.client.post('/api/api-keys', body)).body as { id: string };
    const annPlain = await make(ann, { name: 'ann plain' });
    const annMcp = await make(ann, { name: 'ann mcp', mcp: true });
    const bobRevoked = await make(bob, { name: 'bob revoked' });
    const bobExpired = await make(bob, { name: 'bob expired' });
    const bobDisabled = await make(bob, { name: 'bob disabled' });
    await bob.client.delete(`/api/api-keys/${bobRevoked.id}`);
    await gw.pool.query("UPDATE apikeys SET expires_at = now() - interval '1 hour' WHERE id = $1", [bobExpired.id]);
    await gw.pool.query('UPDATE apikeys SET enabled = false WHERE id = $1', [bobDisabled.id]);
    return { admin, ann, bob, annPlain, annMcp, bobRevoked, bobExpired, bobDisabled };
  }

  const names = async (client: Awaited<ReturnType<typeof signUp>>['client'], query: string) => {
    const r = await client.get(`/api/admin/api-keys${query}`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return (r.body.keys as { name: string; state: string; revokedAt: string | null }[]).map((k) => `${k.name}:${k.state}${k.revokedAt ? ':r' : ''}`).sort();
  };

  it('owner e-mail (any case), state and scope each narrow the list; together they combine', async () => {
    const w = await world();
    expect(await names(w.admin.client, `?owner=${encodeURIComponent(w.ann.user.email.toUpperCase())}`)).to.deep.equal(['ann mcp:active', 'ann plain:active']);
    const bob = `owner=${encodeURIComponent(w.bob.user.email)}`;
    expect(await names(w.admin.client, `?${bob}`)).to.deep.equal(['bob disabled:disabled', 'bob expired:expired']);
    expect(await names(w.admin.client, `?${bob}&state=revoked`)).to.deep.equal(['bob revoked:revoked:r']);
    expect(await names(w.admin.client, `?${bob}&state=expired`)).to.deep.equal(['bob expired:expired']);
    expect(await names(w.admin.client, `?${bob}&state=disabled`)).to.deep.equal(['bob disabled:disabled']);
    expect(await names(w.admin.client, `?${bob}&state=active`)).to.deep.equal([]);
    expect(await names(w.admin.client, `?owner=${encodeURIComponent(w.ann.user.email)}&scope=mcp`)).to.deep.equal(['ann mcp:active']);
    // Across every owner: the scope filter holds only keys granting it.
    const mcpAll = (await w.admin.client.get('/api/admin/api-keys?scope=mcp&limit=100')).body.keys as { permissions: Record<string, string[]> }[];
    expect(mcpAll.length).to.be.greaterThan(0);
    for (const k of mcpAll) expect(k.permissions).to.have.property('mcp');
    // Blank fields, as a GET form sends them, are no filter.
    expect(await names(w.admin.client, `?${bob}&state=&scope=`)).to.deep.equal(['bob disabled:disabled', 'bob expired:expired']);
  });

  it('bad filter values are a 400 problem naming the field, and a user is refused', async () => {
    const w = await world();
    for (const [q, field] of [['state=gone', 'state'], ['state=rate-limited', 'state'], ['scope=MCP', 'scope'], ['scope=a%20b', 'scope'], ['limit=0x10', 'limit'], ['limit=05', 'limit'], ['owner=' + 'a'.repeat(300), 'owner'], ['color=red', '']] as const) {
      const r = await w.admin.client.get(`/api/admin/api-keys?${q}`);
      expect(r.status, q).to.equal(400);
      expect(r.body.code, q).to.equal('VALIDATION_FAILED');
      if (field) expect(JSON.stringify(r.body.errors), q).to.include(field);
    }
    expect((await w.ann.client.get('/api/admin/api-keys?state=revoked')).status).to.equal(403);
  });
});
