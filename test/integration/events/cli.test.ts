import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { packageRoot } from '../../../src/config.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { tempDir } from '../../support/tmp.ts';
import { until } from '../../support/until.ts';
import { startReceiver, type Receiver } from './receiver.ts';

const run = promisify(execFile);

// `keygate webhook …` against the database a running gateway uses: what the command line
// registers, the gateway delivers.

describe('events: keygate webhook on the command line', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let hook: Receiver;
  let configFile: string;
  const config = { webhooks: { allowPrivateAddresses: true, retrySchedule: ['1s'] } };

  before(async () => {
    hook = await startReceiver();
    gw = await startTestGateway({ config, webhookPollMs: 50 });
    configFile = join(tempDir('kg-webhook-cli-'), 'keygate.yaml');
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
    const r = await run(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), 'webhook', ...args], { env }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    return { code: 'code' in r && typeof r.code === 'number' ? r.code : 0, stdout: r.stdout, stderr: r.stderr };
  };

  it('add, list, test, deliveries, rotate, redeliver and remove, each with --json where it answers data', async () => {
    const added = await keygate('add', '--url', hook.url, '--events', 'webhook.test,key.created', '--description', 'from the CLI', '--json');
    expect(added.code, added.stderr).to.equal(0);
    const ep = JSON.parse(added.stdout);
    expect(ep).to.include({ url: hook.url, description: 'from the CLI', enabled: true });
    expect(ep.events).to.deep.equal(['webhook.test', 'key.created']);
    const listed = JSON.parse((await keygate('list', '--json')).stdout);
    expect(listed.webhooks.map((w: { id: string }) => w.id)).to.deep.equal([ep.id]);
    expect(JSON.stringify(listed)).to.not.include(ep.secret);

    const { eventId } = JSON.parse((await keygate('test', '--id', ep.id, '--json')).stdout);
    await until('delivered', () => hook.received.length === 1, 10_000);
    const r = hook.received[0]!;
    new Webhook(ep.secret).verify(r.body, { 'webhook-id': eventId, 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) });
    await until('settled', async () => JSON.parse((await keygate('deliveries', '--id', ep.id, '--json')).stdout).deliveries[0].state === 'delivered', 10_000);

    const rotated = JSON.parse((await keygate('rotate', '--id', ep.id, '--json')).stdout);
    expect(rotated.secret).to.match(/^whsec_/);
    expect((await keygate('redeliver', '--id', ep.id, '--event', eventId)).code).to.equal(0);
    await until('redelivered', () => hook.received.length === 2, 10_000);
    expect(String(hook.received[1]!.headers['webhook-signature']).split(' ')).to.have.length(2);

    const bad = await keygate('add', '--url', 'ftp://example.com/x');
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.match(/https/);
    expect((await keygate('remove', '--id', ep.id)).code).to.equal(0);
    expect(JSON.parse((await keygate('list', '--json')).stdout).webhooks).to.deep.equal([]);
    const { rows } = await gw.pool.query("SELECT type, actor FROM audit_log WHERE type LIKE 'WEBHOOK_%' ORDER BY id");
    expect(rows).to.deep.equal([
      { type: 'WEBHOOK_CREATED', actor: 'cli' }, { type: 'WEBHOOK_UPDATED', actor: 'cli' }, { type: 'WEBHOOK_DELETED', actor: 'cli' },
    ]);
  });
});
