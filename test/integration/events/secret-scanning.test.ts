import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp, signUpAdmin } from '../../support/http.ts';
import { until } from '../../support/until.ts';
import { generateKey } from '../../../src/services/keys/format.ts';
import { MAX_REPORT_TOKENS } from '../../../src/http/routes/secret-scanning.ts';
import { startReceiver, type Receiver } from './receiver.ts';

// GitHub's secret-scanning partner reports, signed with a P-256 key published at a URL this test
// serves, against two instances on one database.

describe('events: keys reported leaked by GitHub secret scanning', function () {
  this.timeout(60_000);
  let a: TestGateway;
  let b: TestGateway;
  let keysServer: Server;
  let keysFetched = 0;
  let hook: Receiver;
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const KEY_ID = 'gh-key-1';

  before(async () => {
    keysServer = createServer((_req, res) => {
      keysFetched++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ public_keys: [{ key_identifier: KEY_ID, key: github.publicKey.export({ type: 'spki', format: 'pem' }), is_current: true }] }));
    });
    await new Promise<void>((ok) => keysServer.listen(0, '127.0.0.1', () => ok()));
    const keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/keys`;
    const config = { secretScanning: { github: { enabled: true, keysUrl } }, webhooks: { allowPrivateAddresses: true } };
    hook = await startReceiver();
    a = await startTestGateway({ config, webhookPollMs: 50 });
    b = await startTestGateway({ config, database: a.database });
    const admin = await signUpAdmin(a, { name: 'Admin' });
    expect((await admin.client.post('/api/admin/webhooks', { url: hook.url, events: ['key.leaked', 'key.revoked'] })).status).to.equal(201);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await a?.database.drop();
    await hook?.close();
    keysServer?.close();
  });

  const report = (gw: TestGateway, tokens: { token: string; type?: string; url?: string; source?: string }[], by: KeyObject = github.privateKey, keyId = KEY_ID) => {
    const body = JSON.stringify(tokens.map((t) => ({ type: 'keygate_api_key', url: 'https://github.com/o/r/blob/main/.env', source: 'content', ...t })));
    const signature = sign('sha256', Buffer.from(body), { key: by, dsaEncoding: 'der' }).toString('base64');
    return new Client(gw.url).request('POST', '/api/secret-scanning/github', body, { 'github-public-key-identifier': keyId, 'github-public-key-signature': signature });
  };

  it('a live key reported is revoked on both instances within 1 s, audited, with key.leaked and key.revoked', async () => {
    const { client, user } = await signUp(a.url);
    const key = (await client.post('/api/api-keys', { name: 'committed' })).body;
    const onB = new Client(b.url).withKey(key.key);
    expect((await onB.get('/api/auth/get-session')).status).to.equal(200);
    const url = 'https://github.com/o/r/blob/abc/.env';
    const r = await report(a, [{ token: key.key, url }]);
    expect(r.status, r.text).to.equal(200);
    expect(r.body).to.deep.equal([{ token_raw: key.key, token_type: 'keygate_api_key', label: 'true_positive' }]);
    await until('refused on the other instance', async () => (await onB.get('/api/auth/get-session')).status === 401, 1000);
    const { rows } = await a.pool.query("SELECT type, detail FROM audit_log WHERE key_id = $1 AND type IN ('API_KEY_LEAKED', 'API_KEY_REVOKED') ORDER BY id", [key.id]);
    expect(rows).to.deep.equal([
      { type: 'API_KEY_LEAKED', detail: { url, source: 'content' } },
      { type: 'API_KEY_REVOKED', detail: { reason: 'leaked' } },
    ]);
    await until('both events', () => hook.events().filter((e) => e.data.keyId === key.id).length === 2, 10_000);
    expect(hook.events('key.leaked')[0]!.data).to.include({ keyId: key.id, userId: user.id, url, source: 'content' });
    expect(hook.events('key.revoked').find((e) => e.data.keyId === key.id)!.data).to.deep.include({ reason: 'leaked', actor: { kind: 'system' } });
    expect(hook.received.map((x) => x.body).join('')).to.not.include(key.key);
    // The owner's settings say why, and where.
    const listed = (await client.get('/api/api-keys/leaked')).body;
    expect(listed.keys).to.deep.equal([{ id: key.id, name: 'committed', start: key.start, leakedAt: listed.keys[0].leakedAt, leakedUrl: url }]);
    // Reported again: still ours, nothing revoked twice.
    const page = await client.get('/settings/developers', { accept: 'text/html' });
    expect(page.text).to.include('Keys revoked because they were found public').and.include(`href="${url}"`);
    expect((await report(a, [{ token: key.key }])).body[0].label).to.equal('true_positive');
    expect((await a.pool.query("SELECT count(*)::int AS n FROM audit_log WHERE key_id = $1 AND type = 'API_KEY_LEAKED'", [key.id])).rows[0].n).to.equal(1);
  });

  it('ten reports of one key at once, across both instances: all true_positive, the key revoked, audited and announced once', async () => {
    const { client } = await signUp(a.url);
    const key = (await client.post('/api/api-keys', { name: 'pasted twice' })).body;
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => report(i % 2 ? a : b, [{ token: key.key }, { token: key.key }])));
    for (const r of answers) {
      expect(r.status, r.text).to.equal(200);
      expect(r.body.map((v: { label: string }) => v.label)).to.deep.equal(['true_positive', 'true_positive']);
    }
    const { rows } = await a.pool.query(
      `SELECT (SELECT count(*)::int FROM audit_log WHERE key_id = $1 AND type IN ('API_KEY_LEAKED', 'API_KEY_REVOKED')) AS audited,
              (SELECT count(*)::int FROM events WHERE type IN ('key.leaked', 'key.revoked') AND body::jsonb->'data'->>'keyId' = $1::text) AS events`,
      [key.id],
    );
    expect(rows[0]).to.deep.equal({ audited: 2, events: 2 });
  });

  it('labels: a token not in our format, or with a checksum but unknown, is a false positive', async () => {
    const r = await report(a, [{ token: 'ghp_0123456789abcdefghijklmnopqrstuvwxyz' }, { token: generateKey('key_') }, { token: 'key_' + 'x'.repeat(49) }]);
    expect(r.status).to.equal(200);
    expect(r.body.map((v: { label: string }) => v.label)).to.deep.equal(['false_positive', 'false_positive', 'false_positive']);
  });

  it('a missing or wrong signature, or an unknown key identifier, is 401 and reads nothing; unknown identifiers re-read the keys at most once a minute', async () => {
    const { client } = await signUp(a.url);
    const key = (await client.post('/api/api-keys', { name: 'safe' })).body;
    expect((await report(a, [{ token: key.key }], stranger.privateKey)).status).to.equal(401);
    const unsigned = await new Client(a.url).request('POST', '/api/secret-scanning/github', JSON.stringify([{ token: key.key, type: 't', url: 'u', source: 's' }]));
    expect(unsigned.status).to.equal(401);
    expect(unsigned.headers['content-type']).to.match(/problem\+json/);
    const before = keysFetched;
    expect((await report(a, [{ token: key.key }], github.privateKey, 'unknown-1')).status).to.equal(401);
    expect((await report(a, [{ token: key.key }], github.privateKey, 'unknown-2')).status).to.equal(401);
    expect(keysFetched - before).to.be.at.most(1);
    expect((await new Client(a.url).withKey(key.key).get('/api/auth/get-session')).status).to.equal(200);
  });

  it('answers a report of the most tokens allowed, ours and others, one verdict each', async function () {
    this.timeout(10_000);
    const { client } = await signUp(a.url);
    const ours: string[] = [];
    for (let i = 0; i < 5; i++) ours.push((await client.post('/api/api-keys', { name: `k${i}` })).body.key as string);
    const tokens = Array.from({ length: MAX_REPORT_TOKENS }, (_, i) => ({ token: i < ours.length ? ours[i]! : i % 2 ? generateKey('key_') : `other_${i}` }));
    const r = await report(a, tokens);
    expect(r.status).to.equal(200);
    expect(r.body).to.have.length(MAX_REPORT_TOKENS);
    expect(r.body.filter((v: { label: string }) => v.label === 'true_positive')).to.have.length(5);
  });
});

describe('events: secret scanning is off by default', () => {
  it('answers 404 and reads nothing', async () => {
    const gw = await startTestGateway();
    try {
      const r = await new Client(gw.url).request('POST', '/api/secret-scanning/github', '[]', { 'github-public-key-identifier': 'x', 'github-public-key-signature': 'eA==' });
      expect(r.status).to.equal(404);
    } finally {
      await gw.close();
      await gw.database.drop();
    }
  });
});
