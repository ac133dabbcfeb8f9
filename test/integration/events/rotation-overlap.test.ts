import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { packageRoot } from '../../../src/config.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUpAdmin, type Client } from '../../support/http.ts';
import { tempDir } from '../../support/tmp.ts';
import { until } from '../../support/until.ts';
import { startReceiver, type Receiver } from './receiver.ts';

const run = promisify(execFile);

// A rotated-out secret is honoured for 24 h. There is one place for it, so a second rotation inside
// that day is refused (409, saying until when), from the API and the command line alike; the
// receiver still holding the first secret keeps verifying. Also: a type named twice in `events`
// is stored once.

describe('events: a second secret rotation inside the overlap, and repeated event types', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let hook: Receiver;
  let admin: Client;
  let configFile: string;
  const config = { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s'] } };

  before(async () => {
    [gw, hook] = await Promise.all([startTestGateway({ config, webhookPollMs: 50 }), startReceiver()]);
    const s = await signUpAdmin(gw, { name: 'Admin' });
    admin = s.client;
    configFile = join(tempDir('kg-rotation-'), 'keygate.yaml');
    writeFileSync(configFile, JSON.stringify(config));
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    await hook?.close();
  });

  const keygate = async (...args: string[]) => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: gw.database.url, KEYGATE_CONFIG: configFile, LOG_LEVEL: 'warn' };
    delete env.REDIS_URL;
    const r = await run(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), 'webhook', ...args], { env })
      .catch((e: { code: number; stdout: string; stderr: string }) => e);
    return { code: 'code' in r && typeof r.code === 'number' ? r.code : 0, stdout: r.stdout, stderr: r.stderr };
  };

  it('refuses a second rotation while the first old secret is honoured, and the first old secret still signs', async () => {
    const ep = (await admin.post('/api/admin/webhooks', { url: hook.url, events: ['webhook.test'] })).body;
    const first = await admin.post(`/api/admin/webhooks/${ep.id}/rotate-secret`);
    expect(first.status).to.equal(200);
    const second = await admin.post(`/api/admin/webhooks/${ep.id}/rotate-secret`);
    expect(second.status, second.text).to.equal(409);
    expect(second.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(second.body).to.include({ code: 'SECRET_ROTATION_PENDING', status: 409, previousSecretExpiresAt: first.body.previousSecretExpiresAt });
    expect(second.body.detail).to.include(first.body.previousSecretExpiresAt);

    const cli = await keygate('rotate', '--id', ep.id);
    expect(cli.code).to.equal(1);
    expect(cli.stderr).to.include(first.body.previousSecretExpiresAt);

    await admin.post(`/api/admin/webhooks/${ep.id}/test`);
    await until('delivered', () => hook.received.length === 1, 10_000);
    const r = hook.received[0]!;
    const headers = {
      'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    };
    new Webhook(ep.secret).verify(r.body, headers);
    new Webhook(first.body.secret).verify(r.body, headers);
    const { rows } = await gw.pool.query("SELECT count(*)::int AS n FROM audit_log WHERE type = 'WEBHOOK_UPDATED'");
    expect(rows[0].n).to.equal(1);

    // Once the overlap is over, the secret rotates again.
    await gw.pool.query("UPDATE webhook_endpoints SET previous_secret_until = now() - interval '1 second' WHERE id = $1", [ep.id]);
    const later = await keygate('rotate', '--id', ep.id, '--json');
    expect(later.code, later.stderr).to.equal(0);
    expect(JSON.parse(later.stdout).secret).to.match(/^whsec_/);
  });

  it('stores a type named twice in events once, in its first place', async () => {
    const events = ['key.revoked', 'key.created', 'key.revoked', 'key.created'];
    const ep = await admin.post('/api/admin/webhooks', { url: hook.url, events });
    expect(ep.status, ep.text).to.equal(201);
    expect(ep.body.events).to.deep.equal(['key.revoked', 'key.created']);
    const patched = await admin.request('PATCH', `/api/admin/webhooks/${ep.body.id}`, { events: ['webhook.test', 'webhook.test'] });
    expect(patched.body.events).to.deep.equal(['webhook.test']);
    expect((await admin.get(`/api/admin/webhooks/${ep.body.id}`)).body.events).to.deep.equal(['webhook.test']);
    const added = await keygate('add', '--url', hook.url, '--events', 'key.created,key.created', '--json');
    expect(JSON.parse(added.stdout).events).to.deep.equal(['key.created']);
  });
});
