import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { MAX_BODY_BYTES } from '../../../src/http/body.ts';
import { MAX_REPORT_TOKENS } from '../../../src/http/routes/secret-scanning.ts';

// A secret-scanning report's signature is over the bytes sent: it is checked on them, not on text
// decoded from them. Bytes that are not UTF-8 are refused as bad input (400) once the signature
// holds, and a signature over the decoded text does not pass for the bytes. 1,000 tokens, as GitHub
// sends them, fit in the body limit.

describe('hostile: secret-scanning reports checked on their raw bytes', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let keysServer: Server;
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const KEY_ID = 'gh-raw';

  before(async () => {
    keysServer = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      const key = github.publicKey.export({ type: 'spki', format: 'pem' });
      res.end(JSON.stringify({ public_keys: [{ key_identifier: KEY_ID, key, is_current: true }] }));
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

  const send = async (body: Buffer, signed: Buffer = body) => {
    const signature = sign('sha256', signed, { key: github.privateKey, dsaEncoding: 'der' }).toString('base64');
    const res = await fetch(`${gw.url}/api/secret-scanning/github`, {
      method: 'POST', body: new Uint8Array(body),
      headers: { 'content-type': 'application/json', 'github-public-key-identifier': KEY_ID, 'github-public-key-signature': signature },
    });
    const text = await res.text();
    return { status: res.status, text, type: res.headers.get('content-type') ?? '' };
  };
  const entry = (url: string) => `{"token":"key_nope","type":"keygate_api_key","url":"${url}","source":"content"}`;
  // 0xff never appears in UTF-8.
  const notUtf8 = Buffer.concat([Buffer.from(`[${entry('https://example.com/').slice(0, -27)}`), Buffer.from([0xff]),
    Buffer.from(`","source":"content"}]`)]);

  it('a genuinely signed body that is not UTF-8 is refused with 400, not 401', async () => {
    const r = await send(notUtf8);
    expect(r.status, r.text).to.equal(400);
    expect(r.type).to.match(/^application\/problem\+json/);
    expect(JSON.parse(r.text).detail).to.match(/UTF-8/);
  });

  it('a signature over the decoded text does not pass for other bytes', async () => {
    const decoded = Buffer.from(notUtf8.toString('utf8'), 'utf8');
    expect(decoded.equals(notUtf8)).to.equal(false);
    expect((await send(notUtf8, decoded)).status).to.equal(401);
  });

  it('a report naming a key GitHub does not publish is 401 before its body is read, however large', async () => {
    const res = await fetch(`${gw.url}/api/secret-scanning/github`, {
      method: 'POST', body: new Uint8Array(MAX_BODY_BYTES + 1),
      headers: { 'content-type': 'application/json', 'github-public-key-identifier': 'not-published', 'github-public-key-signature': 'MEUCIQ==' },
    });
    expect(res.status, await res.text()).to.equal(401);
  });

  it('a signed report of non-ASCII text is judged as before', async () => {
    const r = await send(Buffer.from(`[${entry('https://example.com/ünïcödé/✓')}]`));
    expect(r.status, r.text).to.equal(200);
    expect(JSON.parse(r.text)).to.deep.equal([{ token_raw: 'key_nope', token_type: 'keygate_api_key', label: 'false_positive' }]);
  });

  it('1,000 tokens as GitHub sends them fit in the body limit and are judged; one token more is 400, a body past 1 MiB 413', async () => {
    const entry = { token: 'key_nope', type: 'keygate_api_key', url: `https://github.com/o/r/blob/${'a'.repeat(40)}/${'dir/'.repeat(40)}.env`, source: 'content' };
    const body = Buffer.from(JSON.stringify(Array.from({ length: MAX_REPORT_TOKENS }, () => entry)));
    expect(MAX_REPORT_TOKENS).to.equal(1000);
    expect(body.length).to.be.at.most(MAX_BODY_BYTES);
    const r = await send(body);
    expect(r.status, r.text.slice(0, 300)).to.equal(200);
    expect(JSON.parse(r.text)).to.have.length(MAX_REPORT_TOKENS);
    const over = await send(Buffer.from(JSON.stringify(Array.from({ length: MAX_REPORT_TOKENS + 1 }, () => entry))));
    expect(over.status).to.equal(400);
    const full = { token: 't'.repeat(1000), type: 'y'.repeat(200), url: 'u'.repeat(2048), source: 's'.repeat(200) };
    const huge = await send(Buffer.from(JSON.stringify(Array.from({ length: MAX_REPORT_TOKENS }, () => full))));
    expect(huge.status).to.equal(413);
    expect(huge.type).to.match(/^application\/problem\+json/);
  });
});
