import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';

// GitHub's signing keys are kept for an hour, and read again for an identifier not known yet, at
// most once a minute. The gateway's clock is the test's: it moves only when the test moves it.

describe('events: the secret-scanning signing keys are kept an hour, re-read for a new identifier at most once a minute', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let keysServer: Server;
  let reads = 0;
  const first = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const second = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let published: [string, KeyObject][] = [['k1', first.publicKey]];

  before(async () => {
    keysServer = createServer((_req, res) => {
      reads++;
      const public_keys = published.map(([id, k]) => ({ key_identifier: id, key: k.export({ type: 'spki', format: 'pem' }), is_current: true }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ public_keys }));
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

  const status = async (keyId: string, by: KeyObject) => {
    const body = '[]';
    const signature = sign('sha256', Buffer.from(body), { key: by, dsaEncoding: 'der' }).toString('base64');
    const r = await new Client(gw.url).request('POST', '/api/secret-scanning/github', body, {
      'github-public-key-identifier': keyId, 'github-public-key-signature': signature,
    });
    return r.status;
  };

  it('a key published later is believed once a minute has passed; one withdrawn stops being believed after the hour', async () => {
    expect(await status('k1', first.privateKey)).to.equal(200);
    expect(reads).to.equal(1);
    published = [['k1', first.publicKey], ['k2', second.publicKey]];
    // Within the minute: not read again, however many new identifiers arrive.
    for (const id of ['k2', 'k3', 'k4']) expect(await status(id, second.privateKey)).to.equal(401);
    gw.clock.advance(59_000);
    expect(await status('k2', second.privateKey)).to.equal(401);
    expect(reads).to.equal(1);
    gw.clock.advance(2_000);
    expect(await status('k2', second.privateKey)).to.equal(200);
    expect(reads).to.equal(2);
    expect(await status('k3', second.privateKey)).to.equal(401);
    expect(reads).to.equal(2);
    // Withdrawn at the URL: still believed while the hour since the last read runs, not after.
    published = [['k2', second.publicKey]];
    gw.clock.advance(59 * 60_000);
    expect(await status('k1', first.privateKey)).to.equal(200);
    expect(reads).to.equal(2);
    gw.clock.advance(2 * 60_000);
    expect(await status('k1', first.privateKey)).to.equal(401);
    expect(reads).to.equal(3);
    expect(await status('k2', second.privateKey)).to.equal(200);
  });
});
