import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

// Signed reports built to trip the leaked-key endpoint over: reports that arrive together before
// the signing keys are known, and leak locations carrying text PostgreSQL will not store.

describe('hostile: secret-scanning reports', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let keysServer: Server;
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  before(async () => {
    // Slow to answer, as a far key URL is: reports keep arriving while the keys are read.
    keysServer = createServer((_req, res) => {
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ public_keys: [{ key_identifier: 'k1', key: github.publicKey.export({ type: 'spki', format: 'pem' }) }] }));
      }, 300);
    });
    await new Promise<void>((ok) => keysServer.listen(0, '127.0.0.1', () => ok()));
    const keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/keys`;
    gw = await startTestGateway({ config: { secretScanning: { github: { enabled: true, keysUrl } } } });
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    keysServer?.close();
  });

  const report = (tokens: { token: string; url?: string; source?: string }[]) => {
    const body = JSON.stringify(tokens.map((t) => ({ type: 'keygate_api_key', url: 'https://github.com/o/r/blob/main/.env', source: 'content', ...t })));
    const signature = sign('sha256', Buffer.from(body), { key: github.privateKey, dsaEncoding: 'der' }).toString('base64');
    const headers = { 'github-public-key-identifier': 'k1', 'github-public-key-signature': signature };
    return new Client(gw.url).request('POST', '/api/secret-scanning/github', body, headers);
  };
  const revokedAt = async (keyId: string) => (await gw.pool.query('SELECT revoked_at FROM apikeys WHERE id = $1', [keyId])).rows[0].revoked_at;

  // Runs first: the keys have not been read yet.
  it('reports arriving together while the signing keys are first read are all believed', async () => {
    const { client } = await signUp(gw.url);
    const keys = [];
    for (let i = 0; i < 3; i++) keys.push((await client.post('/api/api-keys', { name: `leaked ${i}` })).body);
    const answers = await Promise.all(keys.map((k) => report([{ token: k.key }])));
    expect(answers.map((r) => r.status), answers.map((r) => r.text).join('\n')).to.deep.equal([200, 200, 200]);
    for (const k of keys) expect(await revokedAt(k.id)).to.be.an.instanceOf(Date);
  });

  it('a leak location or source holding NUL still revokes the key (the text is stored with the NUL replaced)', async () => {
    const { client } = await signUp(gw.url);
    const key = (await client.post('/api/api-keys', { name: 'committed' })).body;
    const r = await report([{ token: key.key, url: 'https://github.com/o/r/blob/main/a\u0000b', source: 'con\u0000tent' }]);
    expect(r.status, r.text).to.equal(200);
    expect(r.body[0].label).to.equal('true_positive');
    expect(await revokedAt(key.id)).to.be.an.instanceOf(Date);
    const { rows } = await gw.pool.query("SELECT detail FROM audit_log WHERE key_id = $1 AND type = 'API_KEY_LEAKED'", [key.id]);
    expect(rows).to.deep.equal([{ detail: { url: 'https://github.com/o/r/blob/main/a\ufffdb', source: 'con\ufffdtent' } }]);
  });

  it('a leak location or source holding half a surrogate pair still revokes the key (stored with U+FFFD in its place)', async () => {
    const { client } = await signUp(gw.url);
    const key = (await client.post('/api/api-keys', { name: 'committed' })).body;
    // JSON.stringify writes a lone surrogate as the escape `\ud800`, as any JSON sender may.
    const r = await report([{ token: key.key, url: 'https://github.com/o/r/blob/main/\ud800x\udc00', source: 'content \ud83d\ude00 \udbff' }]);
    expect(r.status, r.text).to.equal(200);
    expect(r.body[0].label).to.equal('true_positive');
    expect(await revokedAt(key.id)).to.be.an.instanceOf(Date);
    const { rows } = await gw.pool.query("SELECT detail FROM audit_log WHERE key_id = $1 AND type = 'API_KEY_LEAKED'", [key.id]);
    expect(rows).to.deep.equal([{ detail: { url: 'https://github.com/o/r/blob/main/\ufffdx\ufffd', source: 'content \ud83d\ude00 \ufffd' } }]);
    const listed = (await client.get('/api/api-keys/leaked')).body;
    expect(listed.keys[0].leakedUrl).to.equal('https://github.com/o/r/blob/main/\ufffdx\ufffd');
  });
});
