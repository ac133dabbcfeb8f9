import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp, signUpAdmin } from '../../support/http.ts';

// An admin answering a secret-scanning alert: find the key by the start shown for it, or by its
// id, then disable, enable or change its expiry. The change goes through the owner's rules and is
// audited API_KEY_UPDATED with the admin as actor; a non-admin and a key are refused.

describe('API keys: an admin finds and changes anyone\'s key', () => {
  let gw: TestGateway;
  useGateway({}, (g) => (gw = g));

  async function world() {
    const admin = await signUpAdmin(gw, { name: 'Admin' });
    const ann = await signUp(gw.url);
    const created = (await ann.client.post('/api/api-keys', { name: 'leaked' })).body as { id: string; start: string; key: string };
    const other = (await ann.client.post('/api/api-keys', { name: 'other' })).body as { id: string; start: string };
    return { admin, ann, created, other };
  }

  it('GET ?q= finds a key by the start shown for it, by the first characters of its id, and refuses a too-short q', async () => {
    const w = await world();
    const byStart = await w.admin.client.get(`/api/admin/api-keys?q=${encodeURIComponent(w.created.start)}`);
    expect(byStart.status, JSON.stringify(byStart.body)).to.equal(200);
    expect(byStart.body.keys.map((k: { id: string }) => k.id)).to.deep.equal([w.created.id]);
    // The alert carries the whole key: its first characters find it as well.
    const byKey = await w.admin.client.get(`/api/admin/api-keys?q=${encodeURIComponent(w.created.key.slice(0, w.created.start.length))}`);
    expect(byKey.body.keys.map((k: { id: string }) => k.id)).to.deep.equal([w.created.id]);
    // Copied from a page, where the start is followed by an ellipsis.
    for (const shown of [`${w.created.start}\u2026`, `${w.created.start}...`]) {
      const r = await w.admin.client.get(`/api/admin/api-keys?q=${encodeURIComponent(shown)}`);
      expect(r.status, shown).to.equal(200);
      expect(r.body.keys.map((k: { id: string }) => k.id), shown).to.deep.equal([w.created.id]);
    }
    const byId = await w.admin.client.get(`/api/admin/api-keys?q=${w.created.id.slice(0, 8).toUpperCase()}`);
    expect(byId.body.keys.map((k: { id: string }) => k.id)).to.include(w.created.id);
    // A LIKE wildcard is a literal character here, not "anything".
    expect((await w.admin.client.get('/api/admin/api-keys?q=%25%25%25%25')).status).to.equal(400);
    expect((await w.admin.client.get('/api/admin/api-keys?q=ab')).status).to.equal(400);
  });

  it('PATCH disables and enables the key, each audited with the admin as actor; the key stops and works again', async () => {
    const w = await world();
    const keyed = w.ann.client.withKey(w.created.key);
    expect((await keyed.get('/api/auth/get-session')).status).to.equal(200);
    const off = await w.admin.client.request('PATCH', `/api/admin/api-keys/${w.created.id}`, { enabled: false });
    expect(off.status, JSON.stringify(off.body)).to.equal(200);
    expect(off.body).to.include({ id: w.created.id, enabled: false });
    expect((await keyed.get('/api/auth/get-session')).status).to.equal(401);
    expect((await w.admin.client.request('PATCH', `/api/admin/api-keys/${w.created.id}`, { enabled: true })).status).to.equal(200);
    expect((await keyed.get('/api/auth/get-session')).status).to.equal(200);
    const audit = (await gw.pool.query("SELECT actor_user_id, owner_user_id, detail FROM audit_log WHERE type = 'API_KEY_UPDATED' AND key_id = $1 ORDER BY id", [w.created.id])).rows;
    expect(audit).to.have.length(2);
    for (const a of audit) expect(a).to.deep.include({ actor_user_id: w.admin.user.id, owner_user_id: w.ann.user.id, detail: { changes: ['enabled'] } });
  });

  it('PATCH sets an expiry under the owner\'s rules: a bad one is a 400 that changes nothing', async () => {
    const w = await world();
    const soon = new Date(Date.now() + 86_400_000).toISOString();
    const r = await w.admin.client.request('PATCH', `/api/admin/api-keys/${w.created.id}`, { expiresAt: soon });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(Date.parse(r.body.expiresAt)).to.equal(Date.parse(soon));
    for (const bad of [{}, { expiresAt: 'tomorrow' }, { name: 'renamed' }, { enabled: 'no' }]) {
      const refused = await w.admin.client.request('PATCH', `/api/admin/api-keys/${w.created.id}`, bad);
      expect(refused.status, JSON.stringify(bad)).to.equal(400);
    }
    const row = (await gw.pool.query('SELECT name, enabled, expires_at FROM apikeys WHERE id = $1', [w.created.id])).rows[0];
    expect(row).to.deep.include({ name: 'leaked', enabled: true });
    expect(row.expires_at.toISOString()).to.equal(new Date(soon).toISOString());
    expect((await w.admin.client.request('PATCH', '/api/admin/api-keys/00000000-0000-4000-8000-000000000000', { enabled: false })).status).to.equal(404);
  });

  it('a non-admin session and a key (an admin\'s too) are refused, and nothing changes', async () => {
    const w = await world();
    const adminKey = (await w.admin.client.post('/api/api-keys', { name: 'admin key' })).body.key as string;
    for (const client of [w.ann.client, w.admin.client.withKey(adminKey)]) {
      expect((await client.request('PATCH', `/api/admin/api-keys/${w.created.id}`, { enabled: false })).status).to.equal(403);
      expect((await client.get(`/api/admin/api-keys?q=${w.created.start}`)).status).to.equal(403);
    }
    expect((await gw.pool.query('SELECT enabled FROM apikeys WHERE id = $1', [w.created.id])).rows[0].enabled).to.equal(true);
  });
});
