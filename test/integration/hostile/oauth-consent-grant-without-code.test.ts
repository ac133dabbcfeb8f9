import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { authorizeWith, REDIRECT, tokenFor } from '../oauth/interop-support.ts';

// Locking a person out by their own clicks: an authorization request whose scope the library
// wanted more of than the grant held made Allow record a grant (counted toward the person's grant
// limit and the day's creates) while the client got another consent page or access_denied. Ten
// such clicks and the person could connect no app at all. Every Allow must give the client a
// code, and no grant may exist without one.

describe('hostile: consent that records a grant but gives no code', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => gw?.stop());

  const register = async () => (await new Client(gw.url).post('/oauth/register', { client_name: 'Scoped', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })).body.client_id as string;
  const grantsOf = async (userId: string) => Number((await gw.pool.query<{ n: string }>('SELECT count(*) AS n FROM oauth_grants WHERE user_id = $1', [userId])).rows[0]!.n);

  for (const scope of ['openid mcp', 'openid', 'MCP', 'mcp offline_access', 'profile email', 'mcp mcp']) {
    it(`scope=${scope}: Allow gives a code for the mcp scope, and the one grant recorded is the one the code belongs to`, async () => {
      const person = await signUp(gw.url);
      const clientId = await register();
      const got = await authorizeWith(gw.url, person.client, clientId, { scope });
      expect(got.consent, got.text.slice(0, 300)).to.be.a('string');
      expect(got.redirect?.searchParams.get('error') ?? null, got.redirect?.href).to.equal(null);
      const code = got.redirect?.searchParams.get('code');
      expect(code, got.text.slice(0, 300)).to.be.a('string');
      expect(await grantsOf(person.user.id)).to.equal(1);
      const token = await tokenFor(gw.url, clientId, code!, got.verifier);
      expect(token.status, token.text).to.equal(200);
      expect(token.body.scope).to.equal('mcp');
    });
  }

  it('six Allows on scope=openid mcp are six codes and six grants, never a grant alone', async () => {
    const person = await signUp(gw.url);
    const clientId = await register();
    let codes = 0;
    for (let i = 0; i < 6; i++) {
      const got = await authorizeWith(gw.url, person.client, clientId, { scope: 'openid mcp' });
      if (got.redirect?.searchParams.get('code')) codes++;
    }
    expect(codes).to.equal(6);
    expect(await grantsOf(person.user.id)).to.equal(codes);
  });
});
