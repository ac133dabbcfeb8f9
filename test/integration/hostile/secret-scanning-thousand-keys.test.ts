import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { until } from '../../support/until.ts';

// 1,000 tokens are answered within 10 s (docs/events.md). The heaviest such report: every token a live key,
// each to be revoked, audited and announced, on two instances of one database. The keys are made
// over HTTP first, and a few are used on the second instance so that its cache holds them.

describe('hostile: a secret-scanning report naming 1,000 live keys', function () {
  this.timeout(240_000);
  let a: TestGateway;
  let b: TestGateway;
  let keysServer: Server;
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const COUNT = 1000;

  before(async () => {
    keysServer = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ public_keys: [{ key_identifier: 'k1', key: github.publicKey.export({ type: 'spki', format: 'pem' }), is_current: true }] }));
    });
    await new Promise<void>((ok) => keysServer.listen(0, '127.0.0.1', () => ok()));
    const keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/keys`;
    const config = { secretScanning: { github: { enabled: true, keysUrl } }, apiKeys: { maxKeysPerUser: COUNT, maxCreatesPerDay: COUNT } };
    a = await startTestGateway({ config });
    b = await startTestGateway({ config, database: a.database });
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await a?.database.drop();
    keysServer?.close();
  });

  it('is answered within 10 s, one true_positive each, every key revoked once and refused on the other instance', async () => {
    const { client } = await signUp(a.url);
    const keys: { id: string; key: string }[] = [];
    while (keys.length < COUNT) {
      const made = await Promise.all(Array.from({ length: 5 }, (_, i) => client.post('/api/api-keys', { name: `ci ${keys.length + i}` })));
      for (const r of made) {
        expect(r.status, r.text).to.equal(201);
        keys.push(r.body);
      }
    }
    const used = [keys[0]!, keys[COUNT / 2]!, keys[COUNT - 1]!].map((k) => new Client(b.url).withKey(k.key));
    for (const c of used) expect((await c.get('/api/auth/get-session')).status).to.equal(200);

    const body = JSON.stringify(keys.map((k, i) => ({
      token: k.key, type: 'keygate_api_key', url: `https://github.com/o/r/blob/0123456789abcdef/config/${i}.env`, source: 'content',
    })));
    const signature = sign('sha256', Buffer.from(body), { key: github.privateKey, dsaEncoding: 'der' }).toString('base64');
    const started = Date.now();
    const r = await new Client(a.url).request('POST', '/api/secret-scanning/github', body, {
      'github-public-key-identifier': 'k1', 'github-public-key-signature': signature,
    });
    const took = Date.now() - started;
    expect(r.status, r.text.slice(0, 500)).to.equal(200);
    expect(took).to.be.below(10_000);
    expect(r.body).to.have.length(COUNT);
    expect(r.body.every((v: { label: string; token_raw: string }, i: number) => v.label === 'true_positive' && v.token_raw === keys[i]!.key)).to.equal(true);
    for (const c of used) await until('refused on the other instance', async () => (await c.get('/api/auth/get-session')).status === 401, 1000);

    const { rows } = await a.pool.query(
      `SELECT count(*) FILTER (WHERE revoked_at IS NOT NULL AND leaked_url IS NOT NULL)::int AS revoked,
              (SELECT count(*)::int FROM audit_log WHERE type = 'API_KEY_LEAKED') AS leaked,
              (SELECT count(*)::int FROM audit_log WHERE type = 'API_KEY_REVOKED' AND detail->>'reason' = 'leaked') AS audited,
              (SELECT count(*)::int FROM events WHERE type = 'key.leaked') AS events
         FROM apikeys`,
    );
    expect(rows[0]).to.deep.equal({ revoked: COUNT, leaked: COUNT, audited: COUNT, events: COUNT });
  });
});
