import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { registerClient } from '../oauth/support.ts';

// The library keeps an authorization request's parameters in PostgreSQL, which holds no U+0000:
// `state=%00` (or a NUL in any parameter) was a 500 server_error. It is the request's fault, said
// as a 400, with no redirect and nothing kept; the same request without the NUL goes on as before.

describe('hostile: a NUL in an authorization request', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let session: Client;
  let clientId: string;
  before(async () => {
    gw = await startTestGateway();
    session = (await signUp(gw.url)).client;
    ({ clientId } = await registerClient(gw.url, 'Nul'));
  });
  after(async () => gw?.stop());

  const interactions = async () => Number((await gw.pool.query("SELECT count(*) AS n FROM oauth_store WHERE model = 'Interaction'")).rows[0].n);
  const authorize = (extra: Record<string, string>) => {
    const q = new URLSearchParams({
      client_id: clientId, response_type: 'code', redirect_uri: 'http://127.0.0.1:9/callback', scope: 'mcp',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', ...extra,
    });
    return session.get(`/oauth/authorize?${q}`);
  };

  it('in state, resource, the redirect URI or a parameter\'s name: 400 VALIDATION_FAILED, no redirect, nothing kept', async () => {
    const before = await interactions();
    const cases: Record<string, string>[] = [{ state: '\u0000' }, { state: 'a\u0000b\u00ff' }, { resource: `${gw.url}/api/mcp\u0000` }, { nonce: '\u0000' }, { redirect_uri: 'http://127.0.0.1:9/callback\u0000' }, { 'x\u0000': '1' }];
    for (const extra of cases) {
      const res = await authorize(extra);
      expect(res.status, JSON.stringify(extra)).to.equal(400);
      expect(res.headers.location, JSON.stringify(extra)).to.equal(undefined);
      expect(res.body.code, JSON.stringify(extra)).to.equal('VALIDATION_FAILED');
    }
    expect(await interactions()).to.equal(before);
    const fine = await authorize({ state: 'a b\u00ff' });
    expect(fine.status).to.equal(303);
    expect(fine.headers.location).to.match(/^\/oauth\/consent\//);
  });
});
