import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { createKey, initializeMessage, rpc, startEcho, type Echo } from './support.ts';

// With `mcpServer.enabled: false`, /api/mcp answers 404, to every caller, and nothing
// on it is forwarded upstream.

describe('MCP server: turned off', () => {
  let echo: Echo;
  let on: TestGateway;
  let off: TestGateway;
  let mcpKey: string;
  let plainKey: string;
  let session: Client;

  before(async () => {
    echo = await startEcho();
    on = await startTestGateway({ config: { upstream: { url: echo.url } }, counters: 'postgres' });
    // One store, two configurations: keys made while MCP was on still exist after it is turned off.
    off = await startTestGateway({ database: on.database, config: { upstream: { url: echo.url }, mcpServer: { enabled: false } }, counters: 'postgres' });
    ({ client: session } = await signUp(on.url));
    mcpKey = (await createKey(session, { mcp: true })).key;
    plainKey = (await createKey(session, { mcp: false })).key;
    session = Object.assign(new Client(off.url), { cookies: session.cookies });
  });
  after(async () => {
    await off?.stop();
    await on?.stop();
    await echo?.close();
  });

  it('creating a key with mcp: true answers 400 FEATURE_DISABLED', async () => {
    const res = await session.post('/api/api-keys', { name: 'agent', mcp: true });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('FEATURE_DISABLED');
  });

  it('a key made with MCP access before answers 404 on /api/mcp, and nothing is forwarded', async () => {
    const res = await rpc(new Client(off.url).withKey(mcpKey), initializeMessage);
    expect(res.status).to.equal(404);
    expect(res.body.code).to.equal('NOT_FOUND');
    expect(echo.seen).to.have.length(0);
  });

  for (const [who, headers] of [['an anonymous caller', {}], ['a key without MCP access', { key: true }]] as const) {
    it(`${who} gets 404 on /api/mcp too, not the OAuth 401`, async () => {
      const client = 'key' in headers ? new Client(off.url).withKey(plainKey) : new Client(off.url);
      const res = await rpc(client, initializeMessage);
      expect(res.status).to.equal(404);
      expect(res.headers['www-authenticate']).to.equal(undefined);
      expect(echo.seen).to.have.length(0);
    });
  }

  it('the protected-resource metadata is not served', async () => {
    expect((await new Client(off.url).get('/.well-known/oauth-protected-resource')).status).to.equal(404);
  });
});
