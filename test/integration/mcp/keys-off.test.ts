import { expect } from 'chai';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { connectApp } from '../oauth/support.ts';
import { connectMcp, textOf } from './support.ts';

// With API keys off, a connected app still reaches the MCP endpoint with its OAuth token. Its
// list_api_keys is refused as GET /api/api-keys is over REST, by the same gate (http/gate.ts)
// and in the same words, before the policy is asked.

describe('MCP server: API keys turned off', () => {
  let gw: TestGateway;
  let session: Client;
  let mcp: McpClient;
  before(async () => {
    gw = await startTestGateway({ config: { apiKeys: { enabled: false } } });
    ({ client: session } = await signUp(gw.url));
    const app = await connectApp(gw.url, session, 'Desk client');
    mcp = await connectMcp(gw.url, { authorization: `Bearer ${app.accessToken}` });
  });
  after(async () => {
    await mcp?.close();
    await gw?.stop();
  });

  it('list_api_keys answers the REST route\'s 400 API_KEYS_DISABLED', async () => {
    const rest = await session.get('/api/api-keys');
    expect(rest.status).to.equal(400);
    expect(rest.body.code).to.equal('API_KEYS_DISABLED');
    const res = await mcp.callTool({ name: 'list_api_keys', arguments: {} });
    expect(res.isError).to.equal(true);
    expect(textOf(res)).to.equal(`400 API_KEYS_DISABLED: ${rest.body.detail}`);
  });

  it('whoami still answers: the gate closes the key routes only', async () => {
    const res = await mcp.callTool({ name: 'whoami', arguments: {} });
    expect(res.isError ?? false).to.equal(false);
    expect(JSON.parse(textOf(res)).grant.clientName).to.equal('Desk client');
  });
});
