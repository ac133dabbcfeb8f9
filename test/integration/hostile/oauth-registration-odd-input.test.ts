import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';

// Registration bodies a careless or hostile client sends: redirect_uris that is not a list of
// strings failed inside keygate's own check (500); a NUL or half a surrogate pair anywhere failed
// when PostgreSQL stored it (500); a tab or line break in a redirect URI was dropped by the URL
// parser and the URI stored as sent; and a redirect URI refused for its host or scheme was
// answered with the library's "did not match any of the client's registered redirect_uris",
// which names neither the URI nor the reason. Each is a 400 that says why, and stores nothing.

describe('hostile: registration bodies of odd types and characters', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway()));
  after(async () => gw?.stop());
  // A minute on the gateway's clock before each case: together they pass the 20-a-minute registration limit.
  let stored = 0;
  beforeEach(async () => {
    gw.clock.advance(60_000);
    stored = await clients();
  });

  const clients = async () => Number((await gw.pool.query("SELECT count(*) AS n FROM oauth_store WHERE model = 'Client'")).rows[0].n);
  const send = (text: string) => new Client(gw.url).request('POST', '/oauth/register', text, { 'content-type': 'application/json' });
  const body = (extra: string) => `{"client_name":"Odd","token_endpoint_auth_method":"none",${extra}}`;

  it('redirect_uris that is not a list of strings is refused in the library\'s words, never a 500', async () => {
    const cases: [string, string][] = [
      ['"redirect_uris":{"a":1}', 'redirect_uris must be an array'],
      ['"redirect_uris":true', 'redirect_uris must be an array'],
      ['"redirect_uris":"http://127.0.0.1:7/cb"', 'redirect_uris must be an array'],
      ['"redirect_uris":{"length":1,"0":"http://127.0.0.1:7/cb"}', 'redirect_uris must be an array'],
      ['"redirect_uris":[["http://127.0.0.1:7/cb"]]', 'redirect_uris must only contain strings'],
      ['"redirect_uris":[5]', 'redirect_uris must only contain strings'],
    ];
    for (const [extra, said] of cases) {
      const res = await send(body(extra));
      expect(res.status, extra).to.equal(400);
      expect(res.body, extra).to.include({ error: 'invalid_redirect_uri', error_description: said });
    }
    expect(await clients(), 'stored').to.equal(stored);
  });

  it('a NUL or a lone surrogate anywhere in the metadata is a 400 problem, never a 500', async () => {
    for (const extra of [
      '"client_name":"a\\u0000b","redirect_uris":["http://127.0.0.1:7/cb"]',
      '"redirect_uris":["http://127.0.0.1:7/c\\u0000b"]',
      '"redirect_uris":["http://127.0.0.1:7/cb"],"software_id\\u0000":"x"',
      '"redirect_uris":["http://127.0.0.1:7/cb"],"software_id":"\\ud800"',
      '"redirect_uris":["http://127.0.0.1:7/c\\udc00b"]',
    ]) {
      const res = await send(body(extra));
      expect(res.status, extra).to.equal(400);
      expect(res.headers['content-type'], extra).to.match(/^application\/problem\+json/);
      expect(res.body, extra).to.include({ code: 'VALIDATION_FAILED', error: 'invalid_client_metadata' });
      expect(res.body.detail, extra).to.match(/NUL character .* surrogate pair/);
    }
    expect(await clients(), 'stored').to.equal(stored);
    // A whole pair is text like any other.
    expect((await send(body('"client_name":"Odd \\ud83d\\ude00","redirect_uris":["http://127.0.0.1:7/cb"]'))).status).to.equal(201);
  });

  it('a redirect URI with a space, tab, line break or control character is refused, naming it', async () => {
    for (const uri of ['http://127.0.0.1:7/c\tb', 'http://127.0.0.1:7/c\nb', ' http://127.0.0.1:7/cb', 'http://127.0.0.1:7/cb\r', 'http://127.0.0.1:7/c\u007fb', 'https://app.example/c b']) {
      const res = await send(body(`"redirect_uris":${JSON.stringify([uri])}`));
      expect(res.status, JSON.stringify(uri)).to.equal(400);
      expect(res.body.error, JSON.stringify(uri)).to.equal('invalid_redirect_uri');
      expect(res.body.error_description, JSON.stringify(uri)).to.equal(`redirect_uris: ${JSON.stringify(uri)} holds a space or a control character`);
    }
    expect(await clients(), 'stored').to.equal(stored);
  });

  it('a refused redirect URI is named with the reason, not as a mismatch', async () => {
    const cases: [string, RegExp][] = [
      ['http://example.com/cb', /^redirect_uris: http:\/\/example\.com\/cb uses neither https: nor http: on a loopback address/],
      ['http://127.0.0.2:7/cb', /^redirect_uris: http:\/\/127\.0\.0\.2:7\/cb uses neither https: nor http: on a loopback/],
      ['com.example.app:/cb', /^redirect_uris: com\.example\.app:\/cb uses neither https: nor http: on a loopback/],
      ['http://[::ffff:127.0.0.1]:7/cb', /^redirect_uris: http:\/\/\[::ffff:127\.0\.0\.1\]:7\/cb: the host must be written as a plain/],
      ['http://user@127.0.0.1:7/cb', /^redirect_uris: http:\/\/user@127\.0\.0\.1:7\/cb: the host must be written as a plain/],
    ];
    for (const [uri, said] of cases) {
      const res = await send(body(`"redirect_uris":${JSON.stringify([uri])}`));
      expect(res.status, uri).to.equal(400);
      expect(res.body.error, uri).to.equal('invalid_redirect_uri');
      expect(res.body.error_description, uri).to.match(said);
    }
    expect(await clients(), 'stored').to.equal(stored);
  });
});
