import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { describeViolations, launchBrowser, openContext, seriousViolations } from '../../support/browser.ts';
import { textOf } from '../mcp/support.ts';
import { MemoryAuthProvider, signInOnPage, startCallback, type Callback } from './support.ts';

// OAuth for MCP as an MCP client meets it: the SDK's own OAuth support does discovery, registration,
// PKCE and the token exchange; the person signs in and consents in a real browser.

describe('OAuth for MCP clients: the whole flow', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let browser: Browser;
  let callback: Callback;
  before(async () => {
    [gw, browser, callback] = await Promise.all([startTestGateway({ config: { plans: { free: { apiRateLimit: 50 } } } }), launchBrowser(), startCallback()]);
  });
  after(async () => {
    await Promise.all([gw?.stop(), browser?.close(), callback?.close()]);
  });

  const mcpUrl = () => new URL('/api/mcp', gw.url);

  it('discovers, registers, sends an anonymous person to sign in and back, consents, and acts as them', async () => {
    const person = await signUp(gw.url);
    const auth = new MemoryAuthProvider(callback.url);

    let refused: unknown;
    try {
      await new McpClient({ name: 'oauth-test', version: '0' }).connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: auth }));
    } catch (e) {
      refused = e;
    }
    expect(refused).to.be.instanceOf(UnauthorizedError);
    expect(auth.info?.client_id, 'registered').to.be.a('string');
    const authorize = auth.authorizationUrl!;
    expect(authorize.origin + authorize.pathname).to.equal(`${gw.url}/oauth/authorize`);
    expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(authorize.searchParams.get('resource')).to.equal(`${gw.url}/api/mcp`);

    const tab = await openContext(browser, gw.url);
    try {
      await tab.page.goto(authorize.href);
      await tab.page.waitForURL(/\/sign-in\?next=/);
      await signInOnPage(tab.page, person.user.email, person.password);
      await tab.page.waitForURL(/\/oauth\/consent\//);
      expect(await tab.page.getByRole('heading', { level: 1 }).textContent()).to.contain('Test MCP client');
      expect(await seriousViolations(tab.page), describeViolations(await seriousViolations(tab.page))).to.deep.equal([]);
      await tab.page.getByRole('button', { name: 'Allow' }).click();
      await tab.page.waitForURL((u) => u.href.startsWith(callback.url), { timeout: 20_000 }).catch(async (e) => {
        throw new Error(`${(e as Error).message}\n${tab.page.url()}\n${(await tab.page.content()).slice(0, 2000)}`);
      });
      expect(tab.problems).to.deep.equal([]);
    } finally {
      await tab.close();
    }
    const code = callback.hits.at(-1)?.get('code');
    expect(code, 'authorization code').to.be.a('string');

    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: auth });
    await transport.finishAuth(code!);
    expect(auth.saved?.access_token).to.be.a('string');
    expect(auth.saved?.refresh_token).to.be.a('string');

    const mcp = new McpClient({ name: 'oauth-test', version: '0' });
    await mcp.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: auth }));
    const me = JSON.parse(textOf(await mcp.callTool({ name: 'whoami', arguments: {} })));
    await mcp.close();
    expect(me.user.email).to.equal(person.user.email);
    expect(me.grant.clientName).to.equal('Test MCP client');
    expect(me.grant.scopes).to.deep.equal(['mcp']);
    expect(me.grant.requestQuota.limit).to.equal(50);
    expect(me).to.not.have.property('key');

    const listed = await person.client.get('/api/oauth/grants');
    expect(listed.status).to.equal(200);
    expect(listed.body.grants).to.have.length(1);
    expect(listed.body.grants[0]).to.include({ id: me.grant.id, clientId: auth.info!.client_id, clientName: 'Test MCP client' });

    const audit = await gw.pool.query("SELECT type, grant_id FROM audit_log WHERE type LIKE 'OAUTH%'");
    expect(audit.rows).to.deep.equal([{ type: 'OAUTH_GRANT_CREATED', grant_id: me.grant.id }]);

    // Nothing of what was issued is stored as itself.
    const stored = await gw.pool.query<{ payload: unknown }>('SELECT payload FROM oauth_store');
    const dump = JSON.stringify(stored.rows);
    for (const secret of [auth.saved!.access_token, auth.saved!.refresh_token!, code!]) expect(dump).to.not.contain(secret);
    expect(gw.logs.join('')).to.not.contain(auth.saved!.access_token);
  });

  it('a person who denies sends the client access_denied and creates no grant', async () => {
    const person = await signUp(gw.url);
    const auth = new MemoryAuthProvider(callback.url, 'Denied client');
    await new McpClient({ name: 'oauth-test', version: '0' }).connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: auth })).catch(() => {});
    const tab = await openContext(browser, gw.url, { sessionCookie: person.client.cookies.get('keygate_session')! });
    try {
      await tab.page.goto(auth.authorizationUrl!.href);
      await tab.page.waitForURL(/\/oauth\/consent\//);
      await tab.page.getByRole('button', { name: 'Deny' }).click();
      await tab.page.waitForURL((u) => u.href.startsWith(callback.url), { timeout: 20_000 }).catch(async (e) => {
        throw new Error(`${(e as Error).message}\n${tab.page.url()}\n${(await tab.page.content()).slice(0, 2000)}\n${tab.problems.join('\n')}`);
      });
    } finally {
      await tab.close();
    }
    expect(callback.hits.at(-1)?.get('error')).to.equal('access_denied');
    expect((await person.client.get('/api/oauth/grants')).body.grants).to.deep.equal([]);
  });

  it('the consent page has the pages\' headers and lets the answer go only to the client', async () => {
    const person = await signUp(gw.url);
    const auth = new MemoryAuthProvider(callback.url);
    await new McpClient({ name: 'oauth-test', version: '0' }).connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: auth })).catch(() => {});
    const browserLike = new Client(gw.url);
    browserLike.cookies = new Map(person.client.cookies);
    const start = await browserLike.get(auth.authorizationUrl!.pathname + auth.authorizationUrl!.search);
    expect(start.status).to.equal(303);
    const consent = await browserLike.get(new URL(start.headers.location!, gw.url).pathname);
    expect(consent.status).to.equal(200);
    expect(consent.headers['content-security-policy']).to.contain("script-src 'self'").and.contain(`form-action 'self' ${new URL(callback.url).origin};`);
    expect(consent.headers['cache-control']).to.equal('no-store');
    expect(consent.headers['x-frame-options'] ?? consent.headers['content-security-policy']).to.contain("frame-ancestors 'none'");
  });
});
