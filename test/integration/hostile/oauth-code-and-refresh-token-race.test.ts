import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { initializeMessage, rpc } from '../mcp/support.ts';
import { Client } from '../../support/http.ts';
import { authorizeCode, codeForm, connectApp, registerClient, tokenRequest } from '../oauth/support.ts';

// A stolen refresh token (or code) replayed at the same moment as the real client's use: the
// library reads `consumed` when it finds the token and marks it afterwards, so every use that
// found it unspent went on to mint tokens and nothing was revoked. Of concurrent uses
// exactly one succeeds, and a reuse revokes the grant.

const N = 8;

describe('hostile: one OAuth code or refresh token used many times at once', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway()));
  after(async () => gw?.stop());

  const grantsOf = async (session: Client) => (await session.get('/api/oauth/grants')).body.grants as unknown[];

  it(`of ${N} concurrent refreshes exactly one succeeds, and the grant is revoked`, async () => {
    const person = await signUp(gw.url);
    const app = await connectApp(gw.url, person.client, 'Raced client');
    const form = { grant_type: 'refresh_token', refresh_token: app.refreshToken, client_id: app.clientId };
    const answers = await Promise.all(Array.from({ length: N }, () => tokenRequest(gw.url, form)));
    const ok = answers.filter((r) => r.status === 200);
    expect(ok.length, answers.map((r) => `${r.status} ${r.text.slice(0, 80)}`).join('\n')).to.equal(1);
    for (const r of answers.filter((a) => a.status !== 200)) {
      expect(r.status).to.equal(400);
      expect(r.body.error).to.equal('invalid_grant');
    }
    // The reuse revoked the grant: what the winner got is dead too, and the app is gone from the list.
    expect(await grantsOf(person.client)).to.deep.equal([]);
    const mcp = await rpc(new Client(gw.url), initializeMessage, { authorization: `Bearer ${ok[0]!.body.access_token as string}` });
    expect(mcp.status).to.equal(401);
    const again = await tokenRequest(gw.url, { ...form, refresh_token: ok[0]!.body.refresh_token as string });
    expect(again.status).to.equal(400);
  });

  it(`of ${N} concurrent exchanges of one code exactly one succeeds, and the grant is revoked`, async () => {
    const person = await signUp(gw.url);
    const { clientId } = await registerClient(gw.url, 'Raced code client');
    const { code, verifier } = await authorizeCode(gw.url, person.client, clientId);
    const answers = await Promise.all(Array.from({ length: N }, () => tokenRequest(gw.url, codeForm(gw.url, clientId, code, verifier))));
    const ok = answers.filter((r) => r.status === 200);
    expect(ok.length, answers.map((r) => `${r.status} ${r.text.slice(0, 80)}`).join('\n')).to.equal(1);
    for (const r of answers.filter((a) => a.status !== 200)) expect(r.body.error).to.equal('invalid_grant');
    expect(await grantsOf(person.client)).to.deep.equal([]);
  });

  it('one use at a time still rotates: the new refresh token works and the grant stays', async () => {
    const person = await signUp(gw.url);
    const app = await connectApp(gw.url, person.client, 'Calm client');
    const first = await tokenRequest(gw.url, { grant_type: 'refresh_token', refresh_token: app.refreshToken, client_id: app.clientId });
    expect(first.status, first.text).to.equal(200);
    const second = await tokenRequest(gw.url, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token as string, client_id: app.clientId });
    expect(second.status, second.text).to.equal(200);
    expect(await grantsOf(person.client)).to.have.length(1);
  });
});
