import { expect } from 'chai';
import {
  Client as McpClient, StreamableHTTPClientTransport, UnauthorizedError,
  type OAuthClientMetadata, type OAuthClientProvider, type OAuthDiscoveryState, type StoredOAuthClientInformation, type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { textOf } from '../mcp/support.ts';
import { allowByConsentForm } from './consent-form.ts';
import { startCallback, type Callback } from './support.ts';

// The MCP SDK's client of the second line, in this process, given the gateway's MCP URL and
// nothing else: it finds the authorization server, registers (deriving application_type native
// from its loopback redirect URI), sends the person to consent, swaps the code, calls a tool and
// refreshes. The person's side is the consent page's own Allow form, posted with their session.

/** What a desktop client keeps between runs; `registeredRedirect` is the URI it registered once. */
class DesktopClientStore implements OAuthClientProvider {
  info: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  verifier = '';
  discovery: OAuthDiscoveryState | undefined;
  authorizationUrl: URL | null = null;
  constructor(public redirect: string, readonly registeredRedirect = redirect) {}
  get redirectUrl() { return this.redirect; }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Second-line SDK client', redirect_uris: [this.registeredRedirect], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info: StoredOAuthClientInformation) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens: StoredOAuthTokens) { this.saved = tokens; }
  redirectToAuthorization(url: URL) { this.authorizationUrl = url; }
  saveCodeVerifier(v: string) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  saveDiscoveryState(state: OAuthDiscoveryState) { this.discovery = state; }
  discoveryState() { return this.discovery; }
}

describe('OAuth for MCP clients: the second-line SDK client', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let callback: Callback;
  before(async () => {
    [gw, callback] = await Promise.all([startTestGateway(), startCallback()]);
  });
  after(async () => {
    await Promise.all([gw?.stop(), callback?.close()]);
  });

  const mcpUrl = () => new URL('/api/mcp', gw.url);

  /** Connecting with the URL alone: the first try stops at the authorization step. */
  async function connectUntilAuthorization(store: DesktopClientStore): Promise<URL> {
    const refused = await new McpClient({ name: 'second-line', version: '0' }).connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: store })).then(() => null, (e: unknown) => e);
    expect(refused, String(refused)).to.be.instanceOf(UnauthorizedError);
    expect(store.authorizationUrl, 'sent to authorize').to.be.instanceOf(URL);
    return store.authorizationUrl!;
  }

  it('discovers, registers as native, consents by the page form, calls a tool and refreshes', async () => {
    const person = await signUp(gw.url);
    const store = new DesktopClientStore(callback.url);
    const authorize = await connectUntilAuthorization(store);
    expect(store.info?.client_id, 'registered').to.be.a('string');
    expect((store.info as { application_type?: string }).application_type).to.equal('native');
    expect(authorize.origin + authorize.pathname).to.equal(`${gw.url}/oauth/authorize`);
    expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');

    const landed = await allowByConsentForm(gw.url, person.client, authorize);
    expect(landed.origin + landed.pathname).to.equal(callback.url);
    expect(landed.searchParams.get('iss')).to.equal(gw.url);
    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: store });
    await transport.finishAuth(landed.searchParams);
    const first = store.saved!;
    expect(first.access_token).to.be.a('string');
    expect(first.refresh_token).to.be.a('string');

    const mcp = new McpClient({ name: 'second-line', version: '0' });
    await mcp.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: store }));
    const me = JSON.parse(textOf(await mcp.callTool({ name: 'whoami', arguments: {} })));
    await mcp.close();
    expect(me.user.email).to.equal(person.user.email);
    expect(me.grant.clientName).to.equal('Second-line SDK client');

    // An access token the gateway no longer takes: the client answers the 401 by refreshing
    // (the refresh token rotates) and the call goes through.
    store.saved = { ...first, access_token: `${first.access_token}x` };
    const again = new McpClient({ name: 'second-line', version: '0' });
    await again.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: store }));
    const still = JSON.parse(textOf(await again.callTool({ name: 'whoami', arguments: {} })));
    await again.close();
    expect(still.user.email).to.equal(person.user.email);
    expect(store.saved!.refresh_token).to.be.a('string').and.not.equal(first.refresh_token);
    expect(store.saved!.access_token).to.not.equal(first.access_token);
  });

  it('a native client registered on one loopback port is answered on the port it listens on now', async () => {
    const person = await signUp(gw.url);
    // Registered in an earlier run on port 7777; this run's listener took another port.
    const store = new DesktopClientStore(callback.url, 'http://127.0.0.1:7777/callback');
    const authorize = await connectUntilAuthorization(store);
    expect(authorize.searchParams.get('redirect_uri')).to.equal(callback.url);
    const landed = await allowByConsentForm(gw.url, person.client, authorize);
    expect(landed.origin + landed.pathname).to.equal(callback.url);
    await new StreamableHTTPClientTransport(mcpUrl(), { authProvider: store }).finishAuth(landed.searchParams);
    expect(store.saved?.access_token).to.be.a('string');
  });
});
