import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { connectApp } from '../oauth/support.ts';
import { applyPolicy, readPolicyFiles } from '../../../src/services/policy/index.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// Every kind of change, made through the real server, reaches a real receiver once, signed as
// Standard Webhooks and without a secret in it.

describe('events: every change is delivered once, signed, without secrets', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let hook: Receiver;
  let admin: Awaited<ReturnType<typeof signUp>>;
  let secret: string;
  const secrets: string[] = [];

  before(async () => {
    hook = await startReceiver();
    gw = await startTestGateway({
      config: { plans: { free: {}, tiny: { apiRateLimit: 2 } }, webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s', '1s'] } },
      webhookPollMs: 50,
    });
    admin = await signUp(gw.url, { name: 'Admin' });
    await gw.pool.query("UPDATE users SET role = 'admin' WHERE id = $1", [admin.user.id]);
    const created = await admin.client.post('/api/admin/webhooks', { url: hook.url, description: 'all events' });
    expect(created.status).to.equal(201);
    expect(created.body.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    secret = created.body.secret;
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  const once = async (type: string, match: (d: Record<string, unknown>) => boolean) => {
    await until(`${type} delivered`, () => hook.events(type).some((e) => match(e.data)), 10_000);
    return hook.events(type).filter((e) => match(e.data));
  };

  it('key.created, key.updated, key.rotated, key.revoked (owner and admin) carry ids and names, never the key', async () => {
    const owner = await signUp(gw.url);
    const key = (await owner.client.post('/api/api-keys', { name: 'billing' })).body;
    secrets.push(key.key);
    const [created] = await once('key.created', (d) => d.keyId === key.id);
    expect(created!.data).to.deep.include({ keyId: key.id, userId: owner.user.id, name: 'billing', prefix: key.prefix, actor: { kind: 'user', userId: owner.user.id } });

    await owner.client.post('/api/auth/api-key/update', { keyId: key.id, name: 'billing-2' });
    const [updated] = await once('key.updated', (d) => d.keyId === key.id);
    expect(updated!.data).to.deep.include({ name: 'billing-2', changes: ['name'] });

    const rotated = (await owner.client.post(`/api/api-keys/${key.id}/rotate`, { gracePeriodSeconds: 60 })).body;
    secrets.push(rotated.key);
    const [rot] = await once('key.rotated', (d) => d.previousKeyId === key.id);
    expect(rot!.data).to.include({ keyId: rotated.id, userId: owner.user.id });

    expect((await owner.client.delete(`/api/api-keys/${rotated.id}`)).status).to.equal(204);
    const other = (await owner.client.post('/api/api-keys', { name: 'other' })).body;
    secrets.push(other.key);
    expect((await admin.client.delete(`/api/admin/api-keys/${other.id}`)).status).to.equal(204);
    const [byOwner] = await once('key.revoked', (d) => d.keyId === rotated.id);
    const [byAdmin] = await once('key.revoked', (d) => d.keyId === other.id);
    expect(byOwner!.data).to.deep.include({ reason: 'owner', actor: { kind: 'user', userId: owner.user.id } });
    expect(byAdmin!.data).to.deep.include({ reason: 'admin', actor: { kind: 'user', userId: admin.user.id } });
  });

  it('user.banned and user.unbanned, grant.created and grant.revoked, policy.applied and policy.rolled_back', async () => {
    const person = await signUp(gw.url);
    await admin.client.post(`/api/admin/users/${person.user.id}/ban`);
    await admin.client.post(`/api/admin/users/${person.user.id}/unban`);
    expect((await once('user.banned', (d) => d.userId === person.user.id))[0]!.data).to.deep.include({ email: person.user.email, actor: { kind: 'user', userId: admin.user.id } });
    await once('user.unbanned', (d) => d.userId === person.user.id);

    const signedIn = await signUp(gw.url);
    const app = await connectApp(gw.url, signedIn.client, 'Event App');
    secrets.push(app.accessToken, app.refreshToken, app.registrationAccessToken);
    const [grant] = await once('grant.created', (d) => d.userId === signedIn.user.id);
    expect(grant!.data).to.include({ clientName: 'Event App', clientId: app.clientId });
    expect((await signedIn.client.delete(`/api/oauth/grants/${grant!.data.grantId}`)).status).to.equal(204);
    await once('grant.revoked', (d) => d.grantId === grant!.data.grantId);

    const texts = await readPolicyFiles(gw.config.policy);
    const extra = { ...texts, policy: `${texts.policy}\np, key, *, .*, /api/events-test, deny, test.events\n` };
    const first = await applyPolicy(gw.pool, extra, { by: 'ops', message: 'first' });
    expect(first.status).to.equal('applied');
    expect((await applyPolicy(gw.pool, texts, { by: 'ops', message: 'second' })).status).to.equal('applied');
    const rolled = await admin.client.post('/api/admin/policy/rollback', { version: first.version });
    expect(rolled.status, rolled.text).to.equal(200);
    const applied = await once('policy.applied', (d) => d.message === 'first');
    expect(applied).to.have.length(1);
    expect((await once('policy.rolled_back', (d) => d.rollbackTo === first.version))[0]!.data).to.deep.include({ actor: { kind: 'user', userId: admin.user.id } });
  });

  it('quota.exhausted once per key per day however many requests are refused', async () => {
    const owner = await signUp(gw.url);
    await gw.pool.query("UPDATE users SET plan = 'tiny' WHERE id = $1", [owner.user.id]);
    const key = (await owner.client.post('/api/api-keys', { name: 'tiny' })).body;
    secrets.push(key.key);
    const client = new Client(gw.url).withKey(key.key);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await client.get('/api/auth/get-session')).status);
    expect(statuses.filter((s) => s === 429)).to.have.length(4);
    const [ev] = await once('quota.exhausted', (d) => d.keyId === key.id);
    expect(ev!.data).to.include({ userId: owner.user.id, limit: 2, day: gw.clock.now().toISOString().slice(0, 10) });
    const { rows } = await gw.pool.query("SELECT count(*)::int AS n FROM events WHERE type = 'quota.exhausted' AND body LIKE '%' || $1 || '%'", [key.id]);
    expect(rows[0].n).to.equal(1);
  });

  it('key.expiring is said once by the hourly sweep for a key within 7 days of its expiry', async () => {
    const owner = await signUp(gw.url);
    const soon = new Date(gw.clock.now().getTime() + 3 * 86_400_000).toISOString();
    const key = (await owner.client.post('/api/api-keys', { name: 'soon', expiresAt: soon })).body;
    secrets.push(key.key);
    await gw.runPeriodic();
    await gw.runPeriodic();
    const [ev] = await once('key.expiring', (d) => d.keyId === key.id);
    expect(ev!.data).to.include({ expiresAt: soon, userId: owner.user.id });
    const { rows } = await gw.pool.query("SELECT count(*)::int AS n FROM events WHERE type = 'key.expiring' AND body LIKE '%' || $1 || '%'", [key.id]);
    expect(rows[0].n).to.equal(1);
  });

  it('webhook.test reaches the endpoint; the event commits with its change, or neither does', async () => {
    const { body } = await admin.client.get('/api/admin/webhooks');
    const id = body.webhooks[0].id;
    const t = await admin.client.post(`/api/admin/webhooks/${id}/test`);
    expect(t.status).to.equal(202);
    await until('webhook.test delivered', () => hook.events('webhook.test').some((e) => e.id === t.body.eventId), 10_000);
    // The outbox refuses this one event: the key and its audit entry must roll back with it.
    await gw.pool.query(`CREATE FUNCTION refuse_doomed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.body LIKE '%doomed%' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER refuse_doomed BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_doomed()`);
    try {
      const owner = await signUp(gw.url);
      expect((await owner.client.post('/api/api-keys', { name: 'doomed' })).status).to.equal(500);
      const { rows } = await gw.pool.query("SELECT (SELECT count(*)::int FROM apikeys WHERE name = 'doomed') AS keys, (SELECT count(*)::int FROM audit_log WHERE owner_user_id = $1 AND type = 'API_KEY_CREATED') AS audits", [owner.user.id]);
      expect(rows[0]).to.deep.equal({ keys: 0, audits: 0 });
    } finally {
      await gw.pool.query('DROP TRIGGER refuse_doomed ON events; DROP FUNCTION refuse_doomed()');
    }
  });

  it('every delivery verifies with standardwebhooks, each event arrived once, and no body holds a key, hash or token', async () => {
    const wh = new Webhook(secret);
    const ids = new Set<string>();
    for (const r of hook.received) {
      const headers = { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) };
      const ev = wh.verify(r.body, headers) as { id: string };
      expect(ev.id).to.equal(headers['webhook-id']);
      expect(r.headers['content-type']).to.equal('application/json');
      expect(ids.has(ev.id), `event ${ev.id} delivered twice`).to.equal(false);
      ids.add(ev.id);
      expect(() => wh.verify(r.body.replace('"data":{', '"data":{"x":1,'), headers)).to.throw();
    }
    expect(ids.size).to.be.greaterThan(10);
    const types = new Set(hook.events().map((e) => e.type));
    expect([...types].sort()).to.deep.equal([
      'grant.created', 'grant.revoked', 'key.created', 'key.expiring', 'key.revoked', 'key.rotated', 'key.updated',
      'policy.applied', 'policy.rolled_back', 'quota.exhausted', 'user.banned', 'user.unbanned', 'webhook.test',
    ]);
    const { rows } = await gw.pool.query("SELECT encode(key_hash, 'hex') AS h, encode(key_hash, 'base64') AS b FROM apikeys");
    const all = hook.received.map((r) => r.body).join('\n');
    for (const s of [...secrets, ...rows.flatMap((r) => [r.h, r.b]), secret]) expect(all.includes(s), 'a secret in an event').to.equal(false);
  });
});
