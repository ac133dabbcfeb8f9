import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { makeTestCa, startTestHttps, type TestCa, type TestHttps } from '../../support/test-ca.ts';
import { initializeMessage, rpc } from '../mcp/support.ts';
import { authorizeWith, REDIRECT, tokenFor } from './interop-support.ts';

// What an MCP client that knows nothing of keygate sends: an authorization request without scope,
// and a client_id that is the https URL of its own metadata document.

describe('OAuth for MCP clients: interoperating', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let ca: TestCa;
  let docs: TestHttps;
  let person: Awaited<ReturnType<typeof signUp>>;
  const documents = new Map<string, { body: unknown; cacheControl?: string }>();

  before(async () => {
    ca = makeTestCa();
    docs = await startTestHttps(ca, (req, res) => {
      const doc = documents.get(req.url ?? '');
      if (!doc) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', ...(doc.cacheControl ? { 'cache-control': doc.cacheControl } : {}) });
      res.end(JSON.stringify(doc.body));
    });
    gw = await startTestGateway({ config: { oauth: { clientMetadata: { allowPrivateAddresses: true } } }, clientMetadataCa: ca.ca });
    person = await signUp(gw.url);
  });
  after(async () => {
    await gw?.stop();
    await docs?.close();
  });

  const register = async () => (await new Client(gw.url).post('/oauth/register', { client_name: 'Plain client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })).body.client_id as string;

  it('the metadata says the response names its issuer and that metadata documents are taken', async () => {
    const res = await new Client(gw.url).get('/.well-known/oauth-authorization-server');
    expect(res.body).to.include({ authorization_response_iss_parameter_supported: true, client_id_metadata_document_supported: true });
  });

  it('an authorization request without scope is taken as scope=mcp: the consent, then a code, never access_denied', async () => {
    const clientId = await register();
    const got = await authorizeWith(gw.url, person.client, clientId, { scope: null });
    expect(got.consent, got.text).to.be.a('string');
    expect(got.redirect, got.text).to.not.equal(null);
    expect(got.redirect!.searchParams.get('error')).to.equal(null);
    expect(got.redirect!.searchParams.get('iss')).to.equal(gw.url);
    const token = await tokenFor(gw.url, clientId, got.redirect!.searchParams.get('code')!, got.verifier);
    expect(token.status, token.text).to.equal(200);
    expect(token.body.scope).to.equal('mcp');
    const mcp = await rpc(new Client(gw.url), initializeMessage, { authorization: `Bearer ${token.body.access_token}` });
    expect(mcp.status, mcp.text).to.equal(200);
  });

  it('an authorization request as a POST form is not served (oidc-provider leaves POST off), so the GET default covers every request taken', async () => {
    // If POST is ever enabled (enableHttpPostMethods), its form body needs the same scope default.
    const clientId = await register();
    const browser = new Client(gw.url);
    browser.cookies = new Map(person.client.cookies);
    const form = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
    const res = await browser.request('POST', '/oauth/authorize', form.toString(), { 'content-type': 'application/x-www-form-urlencoded', origin: gw.url });
    expect(res.status, res.text).to.equal(404);
    expect(res.headers.location).to.equal(undefined);
  });

  it('a client_id that is its metadata document URL: fetched, consented with its host shown, and tokens work', async () => {
    const clientId = `${docs.origin}/clients/editor.json`;
    documents.set('/clients/editor.json', { body: { client_id: clientId, client_name: 'Editor <Agent>', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' } });
    const got = await authorizeWith(gw.url, person.client, clientId);
    expect(got.consent, got.text).to.be.a('string');
    expect(got.consent).to.include('Editor &#60;Agent&#62; wants to act as you');
    expect(got.consent).to.match(new RegExp(`Described by <strong>${new URL(docs.origin).host}</strong>`));
    const code = got.redirect?.searchParams.get('code');
    expect(code, got.text).to.be.a('string');
    const token = await tokenFor(gw.url, clientId, code!, got.verifier);
    expect(token.status, token.text).to.equal(200);
    const mcp = await rpc(new Client(gw.url), initializeMessage, { authorization: `Bearer ${token.body.access_token}` });
    expect(mcp.status, mcp.text).to.equal(200);
  });

  it('a registered client is shown without a document host', async () => {
    const got = await authorizeWith(gw.url, person.client, await register());
    expect(got.consent).to.not.include('Described by');
  });

  it('a document is kept as its Cache-Control says, and fetched again when it says nothing', async () => {
    const cachedId = `${docs.origin}/clients/cached.json`;
    documents.set('/clients/cached.json', { body: { client_id: cachedId, client_name: 'Cached', redirect_uris: [REDIRECT] }, cacheControl: 'max-age=600' });
    const freshId = `${docs.origin}/clients/fresh.json`;
    documents.set('/clients/fresh.json', { body: { client_id: freshId, client_name: 'Fresh', redirect_uris: [REDIRECT] } });
    for (let i = 0; i < 2; i++) {
      await authorizeWith(gw.url, person.client, cachedId);
      await authorizeWith(gw.url, person.client, freshId);
    }
    expect(docs.hits.filter((h) => h === '/clients/cached.json')).to.have.length(1);
    expect(docs.hits.filter((h) => h === '/clients/fresh.json').length).to.be.greaterThan(1);
  });
});
