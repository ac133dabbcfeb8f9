import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';

// A registration answers with `registration_client_uri` and a `registration_access_token`
// (RFC 7592), and the library serves the read at that URI. The screen that keeps keygate's own
// tokens from the upstream also took this one away before the library saw it, so every read was
// 401 "no access token provided", and the route was not in the OpenAPI document. That the token
// still never reaches the upstream is hostile/oauth-token-in-authorization.test.ts's.

describe('OAuth for MCP clients: reading a registration back (RFC 7592)', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway()));
  after(async () => gw?.stop());

  const register = async (name: string) => {
    const res = await new Client(gw.url).post('/oauth/register', { client_name: name, redirect_uris: ['http://127.0.0.1:7/cb'], token_endpoint_auth_method: 'none' });
    expect(res.status, res.text).to.equal(201);
    return res.body as { client_id: string; registration_client_uri: string; registration_access_token: string };
  };

  it('with its registration access token the client reads its metadata back; without it, or with another\'s, 401', async () => {
    const mine = await register('Reader');
    const theirs = await register('Other');
    const uri = new URL(mine.registration_client_uri);
    expect(uri.origin + uri.pathname).to.equal(`${gw.url}/oauth/register/${mine.client_id}`);
    const read = await new Client(gw.url).get(uri.pathname, { authorization: `Bearer ${mine.registration_access_token}` });
    expect(read.status, read.text).to.equal(200);
    expect(read.body).to.include({ client_id: mine.client_id, client_name: 'Reader', application_type: 'native' });
    const none = await new Client(gw.url).get(uri.pathname);
    expect(none.status).to.equal(401);
    const foreign = await new Client(gw.url).get(uri.pathname, { authorization: `Bearer ${theirs.registration_access_token}` });
    expect(foreign.status).to.equal(401);
    expect(foreign.body.error).to.equal('invalid_token');
  });

  it('the read is in the OpenAPI document', async () => {
    const doc = (await new Client(gw.url).get('/api/openapi.json')).body;
    expect(doc.paths['/oauth/register/{clientId}']?.get?.responses).to.include.keys('200', '401');
  });
});
