import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { makeTestCa, startTestHttps, type TestCa, type TestHttps } from '../../support/test-ca.ts';
import { authorizeWith, REDIRECT } from '../oauth/interop-support.ts';

// A client_id that is a URL makes the authorization server fetch it: whoever writes the URL
// chooses where the server connects and what it reads. Each hostile document must end the
// authorization at the gateway's error page (invalid_client), with no consent shown and nothing
// sent to the redirect URI it names.

describe('hostile: client metadata documents', function () {
  this.timeout(60_000);
  let ca: TestCa;
  let docs: TestHttps;
  let open: TestGateway;
  let guarded: TestGateway;
  let person: Awaited<ReturnType<typeof signUp>>;
  let guardedPerson: Awaited<ReturnType<typeof signUp>>;
  const slow: { res: import('node:http').ServerResponse }[] = [];

  before(async () => {
    ca = makeTestCa();
    docs = await startTestHttps(ca, (req, res, origin) => {
      const id = `${origin}${req.url}`;
      const doc = { client_id: id, client_name: 'Hostile', redirect_uris: [REDIRECT] };
      switch (req.url) {
        case '/good.json':
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
          return;
        case '/other-id.json':
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...doc, client_id: `${origin}/good.json` }));
          return;
        case '/redirect.json':
          res.writeHead(302, { location: `${origin}/good.json` }).end();
          return;
        case '/huge.json':
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...doc, padding: 'x'.repeat(6 * 1024) }));
          return;
        case '/huge-chunked.json': {
          // No Content-Length: the limit must hold while the body streams in.
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(`{"client_id":${JSON.stringify(id)},"padding":"`);
          for (let i = 0; i < 64; i++) res.write('y'.repeat(1024));
          res.end('"}');
          return;
        }
        case '/slow.json':
          // The headers at once, then the body never finishes.
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"client_id":');
          slow.push({ res });
          return;
        default:
          res.writeHead(404).end();
      }
    });
    open = await startTestGateway({ config: { oauth: { clientMetadata: { allowPrivateAddresses: true } } }, clientMetadataCa: ca.ca });
    guarded = await startTestGateway({ clientMetadataCa: ca.ca });
    person = await signUp(open.url);
    guardedPerson = await signUp(guarded.url);
  });
  after(async () => {
    for (const s of slow) s.res.destroy();
    await open?.stop();
    await guarded?.stop();
    await docs?.close();
  });

  const refused = (got: Awaited<ReturnType<typeof authorizeWith>>) => {
    expect(got.consent, 'a consent page was shown').to.equal(null);
    expect(got.redirect, 'the client was answered').to.equal(null);
    expect(got.status, got.text.slice(0, 300)).to.equal(400);
    expect(got.text).to.include('invalid_client');
  };

  it('the well-formed document is taken (the other cases differ from it in one way each)', async () => {
    const got = await authorizeWith(open.url, person.client, `${docs.origin}/good.json`);
    expect(got.redirect?.searchParams.get('code'), got.text.slice(0, 300)).to.be.a('string');
  });

  it('a document whose client_id is not its own URL is refused', async () => {
    refused(await authorizeWith(open.url, person.client, `${docs.origin}/other-id.json`));
  });

  it('a redirect is not followed', async () => {
    const before = docs.hits.filter((h) => h === '/good.json').length;
    refused(await authorizeWith(open.url, person.client, `${docs.origin}/redirect.json`));
    expect(docs.hits.filter((h) => h === '/good.json').length).to.equal(before);
  });

  it('a body over 5 KB is refused, announced or streamed', async () => {
    refused(await authorizeWith(open.url, person.client, `${docs.origin}/huge.json`));
    refused(await authorizeWith(open.url, person.client, `${docs.origin}/huge-chunked.json`));
  });

  it('a body that never ends is given up within the fetch bound (3 s), and the gateway keeps answering', async () => {
    const started = Date.now();
    refused(await authorizeWith(open.url, person.client, `${docs.origin}/slow.json`));
    // A liveness bound with a wide margin, not a speed measure: the fetch must not hang forever.
    expect(Date.now() - started).to.be.lessThan(20_000);
  });

  it('without allowPrivateAddresses a loopback document is never fetched', async () => {
    const before = docs.hits.length;
    refused(await authorizeWith(guarded.url, guardedPerson.client, `${docs.origin}/good.json`));
    const ip = await authorizeWith(guarded.url, guardedPerson.client, `https://127.0.0.1:${new URL(docs.origin).port}/good.json`);
    refused(ip);
    expect(docs.hits.length).to.equal(before);
  });

  it('a client_id over http, or with a fragment or credentials, is not fetched at all', async () => {
    const before = docs.hits.length;
    for (const id of [`http://localhost:${new URL(docs.origin).port}/good.json`, `${docs.origin}/good.json#x`, `https://user@localhost:${new URL(docs.origin).port}/good.json`]) {
      const got = await authorizeWith(open.url, person.client, id);
      expect(got.consent).to.equal(null);
      expect(got.redirect).to.equal(null);
    }
    expect(docs.hits.length).to.equal(before);
  });
});
