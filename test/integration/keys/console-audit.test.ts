import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { runUserCommand } from '../../../src/cli/accounts.ts';
import { createAccountService } from '../../../src/services/accounts.ts';
import { systemClock } from '../../../src/services/clock.ts';

// The audit kinds the console added, each written with its change, and the export of the log.

async function signUpAdmin(gw: TestGateway) {
  const admin = await signUp(gw.url, { name: 'Admin' });
  await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
  return admin;
}

const cookieOf = (c: { cookies: Map<string, string> }) => ({ cookie: [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ') });

const entriesFor = async (gw: TestGateway, ownerId: string) =>
  (await gw.pool.query('SELECT type, actor_user_id, actor, detail FROM audit_log WHERE owner_user_id = $1 ORDER BY id', [ownerId])).rows;

describe('the console: audit kinds, users and the audit export', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ config: { plans: { free: {}, pro: { apiRateLimit: 1000 } } } });
  });
  after(async () => gw?.stop());

  it('ban, unban, role and plan from the API are audited with the admin as actor; an unknown plan changes nothing', async () => {
    const admin = await signUpAdmin(gw);
    const target = await signUp(gw.url);
    const id = target.user.id;
    expect((await admin.client.post(`/api/admin/users/${id}/ban`, {})).status).to.equal(204);
    expect((await admin.client.post(`/api/admin/users/${id}/unban`, {})).status).to.equal(204);
    const role = await admin.client.post(`/api/admin/users/${id}/role`, { role: 'admin' });
    expect(role.status).to.equal(200);
    expect(role.body.user).to.include({ role: 'admin', banned: false });
    expect((await admin.client.post(`/api/admin/users/${id}/plan`, { plan: 'pro' })).body.user.plan).to.equal('pro');
    const bad = await admin.client.post(`/api/admin/users/${id}/plan`, { plan: 'gold' });
    expect(bad.status).to.equal(400);
    expect((await admin.client.post('/api/admin/users/00000000-0000-4000-8000-000000000000/role', { role: 'user' })).status).to.equal(404);
    const rows = await entriesFor(gw, id);
    expect(rows.map((r) => r.type)).to.deep.equal(['USER_BANNED', 'USER_UNBANNED', 'USER_ROLE_CHANGED', 'USER_PLAN_CHANGED']);
    for (const r of rows) expect(r).to.include({ actor_user_id: admin.user.id, actor: null });
    expect(rows[2].detail).to.deep.equal({ from: 'user', to: 'admin' });
    expect(rows[3].detail).to.deep.equal({ from: null, to: 'pro' });
  });

  it('the CLI creating, banning and changing a user is audited with the actor cli', async () => {
    const accounts = createAccountService({ pool: gw.pool, clock: systemClock, sessionTtlDays: 1 });
    const io = { stdout: () => {}, stderr: () => {} };
    const email = `cli-${Date.now()}@example.com`;
    expect(await runUserCommand(accounts, gw.config, ['create', '--email', email, '--password', 'long enough pw'], io)).to.equal(0);
    expect(await runUserCommand(accounts, gw.config, ['ban', '--email', email], io)).to.equal(0);
    expect(await runUserCommand(accounts, gw.config, ['set-role', '--email', email, '--role', 'admin'], io)).to.equal(0);
    expect(await runUserCommand(accounts, gw.config, ['set-plan', '--email', email, '--plan', 'free'], io)).to.equal(0);
    const { rows: [u] } = await gw.pool.query('SELECT id FROM users WHERE email = $1', [email]);
    const rows = await entriesFor(gw, u.id);
    expect(rows.map((r) => r.type)).to.deep.equal(['USER_CREATED', 'USER_BANNED', 'USER_ROLE_CHANGED', 'USER_PLAN_CHANGED']);
    for (const r of rows) expect(r).to.include({ actor: 'cli', actor_user_id: null });
  });

  it('a key update records API_KEY_UPDATED listing the fields that changed, and nothing when none did', async () => {
    const owner = await signUp(gw.url);
    const key = (await owner.client.post('/api/api-keys', { name: 'k' })).body;
    await owner.client.post('/api/auth/api-key/update', { keyId: key.id, name: 'renamed', enabled: false });
    await owner.client.post('/api/auth/api-key/update', { keyId: key.id, name: 'renamed' });
    await owner.client.post('/api/auth/api-key/update', { keyId: key.id, expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    const rows = (await gw.pool.query("SELECT detail, actor_user_id FROM audit_log WHERE key_id = $1 AND type = 'API_KEY_UPDATED' ORDER BY id", [key.id])).rows;
    expect(rows.map((r) => r.detail.changes)).to.deep.equal([['name', 'enabled'], ['expiresAt']]);
    const admin = await signUpAdmin(gw);
    const listed = (await admin.client.get(`/api/admin/audit-log?type=API_KEY_UPDATED&owner=${encodeURIComponent(owner.user.email)}`)).body.entries;
    expect(listed.map((e: { changes: string[] }) => e.changes)).to.deep.equal([['expiresAt'], ['name', 'enabled']]);
    expect(listed[0]).to.include({ ownerEmail: owner.user.email, actorEmail: owner.user.email });
  });

  it('both exports name a person who acted by e-mail in actor, and the command line as cli', async () => {
    const admin = await signUpAdmin(gw);
    const owner = await signUp(gw.url);
    const key = (await owner.client.post('/api/api-keys', { name: 'k' })).body;
    expect((await admin.client.request('PATCH', `/api/admin/api-keys/${key.id}`, { enabled: false })).status).to.equal(200);
    const filter = `type=API_KEY_UPDATED&owner=${encodeURIComponent(owner.user.email)}`;
    const nd = await (await fetch(`${gw.url}/api/admin/audit-log/export?format=ndjson&${filter}`, { headers: cookieOf(admin.client) })).text();
    const entries = nd.trimEnd().split('\n').map((l) => JSON.parse(l) as { actor: string | null; actorEmail: string | null });
    expect(entries).to.have.length(1);
    expect(entries[0]).to.include({ actor: admin.user.email, actorEmail: admin.user.email });
    const csv = (await (await fetch(`${gw.url}/api/admin/audit-log/export?format=csv&${filter}`, { headers: cookieOf(admin.client) })).text()).split('\r\n');
    expect(csv[1]!.split(',')[3]).to.equal(admin.user.email);
    // The list API keeps actor to `cli` or null, beside actorEmail.
    const listed = (await admin.client.get(`/api/admin/audit-log?${filter}`)).body.entries;
    expect(listed[0]).to.include({ actor: null, actorEmail: admin.user.email });
  });

  it('users are searched by e-mail prefix and paginated', async () => {
    const admin = await signUpAdmin(gw);
    const tag = `pfx${Date.now()}`;
    for (let i = 0; i < 3; i++) await signUp(gw.url, { email: `${tag}-${i}@example.com` });
    const first = (await admin.client.get(`/api/admin/users?q=${tag.toUpperCase()}&limit=2`)).body;
    expect(first.users.map((u: { email: string }) => u.email)).to.deep.equal([`${tag}-0@example.com`, `${tag}-1@example.com`]);
    const second = (await admin.client.get(`/api/admin/users?q=${tag}&limit=2&cursor=${first.nextCursor}`)).body;
    expect(second.users.map((u: { email: string }) => u.email)).to.deep.equal([`${tag}-2@example.com`]);
    expect(second.nextCursor).to.equal(null);
    expect(first.users[0]).to.include({ keysHeld: 0, banned: false, role: 'user' });
    expect((await admin.client.get('/api/admin/users?cursor=nonsense')).status).to.equal(400);
  });

  it('exports 100,000 entries as NDJSON and CSV, a batch at a time, with the filter applied', async function () {
    this.timeout(120_000);
    const admin = await signUpAdmin(gw);
    const { rows: [{ n: before }] } = await gw.pool.query('SELECT count(*)::int AS n FROM audit_log');
    // Seeded in batches: the gateway's pool has the request path's statement deadline (1.5 s),
    // which one 100,000-row insert can pass on a busy machine.
    for (let from = 1; from <= 100_000; from += 10_000) {
      await gw.pool.query(`INSERT INTO audit_log (type, actor, detail, user_agent, at)
        SELECT 'POLICY_APPLIED', 'cli', jsonb_build_object('version', g), CASE WHEN g = 1 THEN '=cmd|calc' ELSE 'ua, "quoted"' END, now() FROM generate_series($1::int, $1::int + 9999) g`, [from]);
    }
    const nd = await fetch(`${gw.url}/api/admin/audit-log/export?format=ndjson`, { headers: cookieOf(admin.client) });
    expect(nd.status).to.equal(200);
    expect(nd.headers.get('content-type')).to.match(/^application\/x-ndjson/);
    const lines = (await nd.text()).trimEnd().split('\n');
    expect(lines).to.have.length(before + 100_000);
    const ids = lines.map((l) => Number(JSON.parse(l).id));
    expect(ids.every((v, i) => i === 0 || v < ids[i - 1]!)).to.equal(true);

    const csv = await (await fetch(`${gw.url}/api/admin/audit-log/export?format=csv&type=POLICY_APPLIED&actor=cli`, { headers: cookieOf(admin.client) })).text();
    const rows = csv.trimEnd().split('\r\n');
    expect(rows[0]).to.match(/^id,type,at,actor,/);
    expect(rows).to.have.length(100_001);
    expect(csv).to.include(`"ua, ""quoted"""`);
    expect(csv).to.include(`'=cmd|calc`);
    expect(csv).to.not.match(/,=cmd/);
    const none = await (await fetch(`${gw.url}/api/admin/audit-log/export?format=csv&type=USER_BANNED&from=2000-01-01&to=2000-01-02`, { headers: cookieOf(admin.client) })).text();
    expect(none.trimEnd().split('\r\n')).to.have.length(1);
    expect((await fetch(`${gw.url}/api/admin/audit-log/export?format=xml`, { headers: cookieOf(admin.client) })).status).to.equal(400);
    await gw.pool.query("DELETE FROM audit_log WHERE type = 'POLICY_APPLIED' AND actor = 'cli' AND owner_user_id IS NULL AND detail ? 'version' AND NOT detail ? 'by'");
  });
});
