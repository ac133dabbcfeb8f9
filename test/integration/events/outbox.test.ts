import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp, signUpAdmin } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { startServe, type ServeChild } from '../../support/serve-child.ts';
import { tempDir } from '../../support/tmp.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// A committed change is delivered even when the instance that made it dies the next moment.

describe('events: the outbox survives a killed instance', function () {
  this.timeout(60_000);
  let child: ServeChild | undefined;
  let other: TestGateway | undefined;
  let hook: Receiver | undefined;

  after(async () => {
    await child?.stop('SIGKILL');
    await other?.close();
    await other?.database.drop();
    await hook?.close();
  });

  it('a key created on an instance killed with SIGKILL right after, its endpoint down: after a restart the event arrives', async () => {
    const config = { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s'] } };
    // The database and the endpoint's registration, through an instance that then stops.
    other = await startTestGateway({ config });
    const admin = await signUpAdmin(other, { name: 'Admin' });
    hook = await startReceiver();
    const port = hook.port;
    await hook.close();
    const ep = (await admin.client.post('/api/admin/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['key.created'] })).body;
    const database = other.database;
    await other.close();
    other = undefined;

    const cwd = tempDir('kg-outbox-');
    writeFileSync(join(cwd, 'keygate.yaml'), JSON.stringify(config));
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: database.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
    delete env.KEYGATE_CONFIG;
    delete env.REDIS_URL;
    child = startServe({ cwd, env });
    const { client, user } = await signUp(await child.url);
    const created = await client.post('/api/api-keys', { name: 'survivor' });
    expect(created.status).to.equal(201);
    await child.stop('SIGKILL');
    child = undefined;
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const { rows } = await db.query('SELECT state FROM webhook_deliveries WHERE endpoint_id = $1', [ep.id]).finally(() => db.end());
    expect(rows.map((r) => r.state)).to.deep.equal(['pending']);

    // The endpoint comes back on its address, then an instance starts on the same database.
    const back = await startReceiver(port);
    hook = back;
    other = await startTestGateway({ config, database, webhookPollMs: 50 });
    await until('key.created arrives', () => back.events('key.created').length === 1, 15_000);
    const [ev] = back.events('key.created');
    expect(ev!.data).to.include({ keyId: created.body.id, userId: user.id, name: 'survivor' });
    const r = back.received[0]!;
    new Webhook(ep.secret).verify(r.body, { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) });
  });
});
