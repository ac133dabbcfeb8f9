import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { KEYS_DOCUMENT_MAX_BYTES } from '../../../src/services/events/secret-scanning.ts';

// The key document is read from a URL: what it publishes decides which reports are believed. Keys
// of another kind than ECDSA P-256 sign nothing, whatever the document says, and a document too big
// to be GitHub's is not read whole into memory.

describe('hostile: what the secret-scanning key document publishes', function () {
  this.timeout(60_000);
  let keysServer: Server;
  let answer: () => string | Buffer = () => '';
  let keysUrl = '';
  const pem = (k: KeyObject) => k.export({ type: 'spki', format: 'pem' });
  const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const gateways: TestGateway[] = [];

  before(async () => {
    keysServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(answer()));
    await new Promise<void>((ok) => keysServer.listen(0, '127.0.0.1', () => ok()));
    keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/keys`;
  });
  after(async () => {
    for (const gw of gateways) {
      await gw.close();
      await gw.database.drop();
    }
    keysServer?.close();
  });

  const gateway = async () => {
    const gw = await startTestGateway({ config: { secretScanning: { github: { enabled: true, keysUrl } } } });
    gateways.push(gw);
    return gw;
  };
  const report = (gw: TestGateway, keyId: string, by: KeyObject) => {
    const body = '[{"token":"key_nope","type":"keygate_api_key","url":"https://github.com/o/r","source":"content"}]';
    const signature = sign('sha256', Buffer.from(body), { key: by, dsaEncoding: 'der' }).toString('base64');
    return new Client(gw.url).request('POST', '/api/secret-scanning/github', body, {
      'github-public-key-identifier': keyId, 'github-public-key-signature': signature,
    });
  };

  it('an RSA key or a P-384 key published beside the P-256 one signs nothing: 401; the P-256 one still does', async () => {
    answer = () => JSON.stringify({ public_keys: [
      { key_identifier: 'ec256', key: pem(p256.publicKey), is_current: true },
      { key_identifier: 'ec384', key: pem(p384.publicKey), is_current: false },
      { key_identifier: 'rsa', key: pem(rsa.publicKey), is_current: false },
      { key_identifier: 'junk', key: 'not a key', is_current: false },
    ] });
    const gw = await gateway();
    expect((await report(gw, 'rsa', rsa.privateKey)).status).to.equal(401);
    expect((await report(gw, 'ec384', p384.privateKey)).status).to.equal(401);
    expect((await report(gw, 'junk', p256.privateKey)).status).to.equal(401);
    const r = await report(gw, 'ec256', p256.privateKey);
    expect(r.status, r.text).to.equal(200);
  });

  it('a document past the size limit is not believed, however valid: the report is told to retry (503)', async () => {
    const doc = JSON.stringify({ public_keys: [{ key_identifier: 'ec256', key: pem(p256.publicKey), is_current: true }] });
    const padded = Buffer.concat([Buffer.alloc(4 * 1024 * 1024, ' '), Buffer.from(doc)]);
    answer = () => padded;
    expect(padded.length).to.be.above(KEYS_DOCUMENT_MAX_BYTES);
    const gw = await gateway();
    const r = await report(gw, 'ec256', p256.privateKey);
    expect(r.status, r.text).to.equal(503);
    expect(r.headers['retry-after']).to.equal('60');
  });
});
