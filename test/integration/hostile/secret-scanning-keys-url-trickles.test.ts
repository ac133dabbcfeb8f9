import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { KEYS_READ_DEADLINE_MS } from '../../../src/services/events/secret-scanning.ts';

// The key URL answers at once and then sends its document a byte every second, so no single wait
// between bytes ever runs out. The read has a deadline of its own: a report waiting on it is told
// to retry when it passes instead of hanging as long as the trickle lasts.

describe('hostile: a secret-scanning key URL that trickles its answer', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let keysServer: Server;
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  before(async () => {
    keysServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 1000);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((ok) => keysServer.listen(0, '127.0.0.1', () => ok()));
    const keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/keys`;
    gw = await startTestGateway({ config: { secretScanning: { github: { enabled: true, keysUrl } } } });
  });
  after(async () => {
    await gw?.close();
    await gw?.database.drop();
    keysServer?.closeAllConnections();
    keysServer?.close();
  });

  it('a report is answered 503 once the read deadline passes', async () => {
    const body = '[]';
    const signature = sign('sha256', Buffer.from(body), { key: github.privateKey, dsaEncoding: 'der' }).toString('base64');
    const started = Date.now();
    const answer = new Client(gw.url).request('POST', '/api/secret-scanning/github', body, {
      'github-public-key-identifier': 'k1', 'github-public-key-signature': signature,
    });
    const hung = new Promise<'hung'>((ok) => setTimeout(() => ok('hung'), KEYS_READ_DEADLINE_MS + 8000).unref());
    const r = await Promise.race([answer, hung]);
    if (r === 'hung') expect.fail('the report was still waiting on the key URL');
    expect(r.status, r.text).to.equal(503);
    expect(Date.now() - started).to.be.below(KEYS_READ_DEADLINE_MS + 3000);
  });
});
