import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { authorizeWith } from './interop-support.ts';

// A client says what it is (OpenID Connect Registration's application_type): native clients run
// on the person's machine and are answered on loopback; web clients on https. RFC 8252 lets a
// native client's loopback listener take any free port, but only on an IP literal.

describe('OAuth for MCP clients: application types and loopback redirects', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let person: Awaited<ReturnType<typeof signUp>>;
  before(async () => {
    gw = await startTestGateway();
    person = await signUp(gw.url);
  });
  after(async () => {
    await gw?.stop();
  });

  const register = (applicationType: string | undefined, redirectUris: string[]) =>
    new Client(gw.url).post('/oauth/register', { client_name: 'Typed', redirect_uris: redirectUris, token_endpoint_auth_method: 'none', ...(applicationType ? { application_type: applicationType } : {}) });

  it('native only with loopback redirect URIs, web with https; omitted, derived from the URIs', async () => {
    expect((await register('native', ['http://127.0.0.1:7/cb', 'http://[::1]:7/cb'])).body.application_type).to.equal('native');
    expect((await register(undefined, ['http://localhost:7/cb'])).body.application_type).to.equal('native');
    expect((await register(undefined, ['https://app.example/cb'])).body.application_type).to.equal('web');
    expect((await register(undefined, ['https://app.example/cb', 'http://127.0.0.1:7/cb'])).body.application_type).to.equal('web');
    expect((await register('web', ['https://app.example/cb'])).body.application_type).to.equal('web');
    for (const [type, uris] of [['native', ['https://app.example/cb']], ['native', ['https://app.example/cb', 'http://127.0.0.1:7/cb']], ['service', ['https://app.example/cb']]] as const) {
      const res = await register(type, [...uris]);
      expect(res.status, `${type} ${uris.join(' ')}`).to.equal(400);
      expect(res.body.error).to.equal('invalid_client_metadata');
    }
  });

  it('another port on [::1] is taken; another path, host or trailing slash is not', async () => {
    const clientId = (await register(undefined, ['http://[::1]:7/cb'])).body.client_id as string;
    const moved = await authorizeWith(gw.url, person.client, clientId, { redirect_uri: 'http://[::1]:41234/cb' });
    expect(moved.redirect?.host, moved.text.slice(0, 200)).to.equal('[::1]:41234');
    expect(moved.redirect?.searchParams.get('code')).to.be.a('string');
    for (const other of ['http://[::1]:7/other', 'http://127.0.0.1:7/cb', 'http://[::1]:7/cb/', 'https://[::1]:7/cb']) {
      const got = await authorizeWith(gw.url, person.client, clientId, { redirect_uri: other });
      expect(got.redirect, other).to.equal(null);
      expect(got.consent, other).to.equal(null);
      expect(got.status, other).to.equal(400);
    }
  });

  it('another port on localhost is not taken: a name could be answered by another program', async () => {
    const clientId = (await register(undefined, ['http://localhost:5173/cb'])).body.client_id as string;
    const same = await authorizeWith(gw.url, person.client, clientId, { redirect_uri: 'http://localhost:5173/cb' });
    expect(same.redirect?.searchParams.get('code'), same.text.slice(0, 200)).to.be.a('string');
    const moved = await authorizeWith(gw.url, person.client, clientId, { redirect_uri: 'http://localhost:5174/cb' });
    expect(moved.redirect).to.equal(null);
    expect(moved.status).to.equal(400);
  });
});
