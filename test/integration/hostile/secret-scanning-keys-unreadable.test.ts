import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';

// While GitHub's signing keys have never been read (the key URL is down), a report cannot be
// judged either way: every report is told to retry (503), never that it is forged (401), however
// soon after the failed read it comes and whichever key identifier it names.

describe('hostile: secret-scanning reports while the signing keys cannot be read', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let keysServer: Server;
  let reads = 0;
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  before(async () => {
    keysServer = createServer((_req, res) => {
      reads++;
      res.writeHead(502).end('bad gateway');
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

  it('each report answers 503 with Retry-After, the key URL read at most once a minute, the key left live', async () => {
    const { client } = await signUp(gw.url);
    const key = (await client.post('/api/api-keys', { name: 'committed' })).body;
    const body = JSON.stringify([{ token: key.key, type: 'keygate_api_key', url: 'https://github.com/o/r/blob/main/.env', source: 'content' }]);
    const signature = sign('sha256', Buffer.from(body), { key: github.privateKey, dsaEncoding: 'der' }).toString('base64');
    for (const identifier of ['k1', 'k1', 'k2']) {
      const r = await new Client(gw.url).request('POST', '/api/secret-scanning/github', body, {
        'github-public-key-identifier': identifier, 'github-public-key-signature': signature,
      });
      expect(r.status, r.text).to.equal(503);
      expect(r.headers['retry-after']).to.equal('60');
    }
    expect(reads).to.equal(1);
    expect((await gw.pool.query('SELECT revoked_at FROM apikeys WHERE id = $1', [key.id])).rows[0].revoked_at).to.equal(null);
  });
});
