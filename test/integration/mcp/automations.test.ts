import { expect } from 'chai';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { defaultMcpTools } from '../../../src/config.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { connectMcp, createKey, mcpSuite, textOf, type Echo } from './support.ts';

// A key with the ai permission may create, edit, delete and run automations, and so may an MCP
// client, also when its key lacks `ai`. Only automations open up:
// the rest of /api/ai stays closed to a key without `ai`, over MCP as over REST.

describe('MCP server: automations through a key without the ai permission', () => {
  let echo: Echo;
  let gw: TestGateway;
  let owner: { id: string };
  let key: string;
  let keyId: string;
  let mcp: McpClient;

  mcpSuite({ ai: { enabled: true }, mcpServer: { tools: [...defaultMcpTools('/api'), { name: 'ai_chat', method: 'POST', path: '/api/ai/chat' }] } }, (s) => {
    ({ echo, gw, owner, key, keyId, mcp } = s);
  });

  const calls: [string, Record<string, unknown>, { method: string; path: string; query?: Record<string, string>; body?: unknown }][] = [
    ['create_automation', { name: 'nightly', schedule: '0 3 * * *', prompt: 'sum up' }, { method: 'POST', path: '/api/ai/automations', body: { name: 'nightly', schedule: '0 3 * * *', prompt: 'sum up' } }],
    ['list_automations', {}, { method: 'GET', path: '/api/ai/automations', query: {} }],
    ['update_automation', { id: 'a-1', schedule: '0 4 * * *' }, { method: 'PATCH', path: '/api/ai/automations/a-1', body: { schedule: '0 4 * * *' } }],
    ['run_automation', { id: 'a-1' }, { method: 'POST', path: '/api/ai/automations/a-1/run', body: {} }],
    ['delete_automation', { id: 'a-1' }, { method: 'DELETE', path: '/api/ai/automations/a-1', query: {} }],
  ];
  for (const [tool, args, expected] of calls) {
    it(`${tool} reaches the upstream as ${expected.method} ${expected.path}, as the owner`, async () => {
      const before = echo.seen.length;
      const res = await mcp.callTool({ name: tool, arguments: args });
      expect(res.isError, textOf(res)).to.not.equal(true);
      expect(echo.seen.length).to.equal(before + 1);
      const seen = echo.last();
      expect(seen).to.deep.include(expected);
      expect(seen.headers).to.include({ 'x-keygate-user-id': owner.id, 'x-keygate-subject': 'key', 'x-keygate-key-id': keyId, 'x-keygate-permissions': 'mcp' });
      expect(seen.headers).to.not.have.any.keys('x-api-key', 'authorization');
    });
  }

  it('the rest of /api/ai stays closed: a tool on /api/ai/chat is a 403 tool error asking for ai', async () => {
    const before = echo.seen.length;
    const res = await mcp.callTool({ name: 'ai_chat', arguments: { message: 'hi' } });
    expect(res.isError).to.equal(true);
    expect(textOf(res)).to.match(/^403 FORBIDDEN: .*"ai" permission/);
    expect(echo.seen.length).to.equal(before);
  });

  it('over REST the same key still gets 403 on /api/ai/automations, naming the ai permission', async () => {
    const before = echo.seen.length;
    const rest = new Client(gw.url).withKey(key);
    for (const res of [await rest.get('/api/ai/automations'), await rest.post('/api/ai/automations', { name: 'x' })]) {
      expect(res.status).to.equal(403);
      expect(res.body).to.include({ code: 'FORBIDDEN', requiredPermission: 'ai' });
    }
    expect(echo.seen.length).to.equal(before);
  });

  it('a key with both ai and mcp manages automations through MCP too', async () => {
    const user = await signUp(gw.url);
    const both = await createKey(user.client, { ai: true, mcp: true });
    const client = await connectMcp(gw.url, { authorization: `Bearer ${both.key}` });
    try {
      const res = await client.callTool({ name: 'list_automations', arguments: {} });
      expect(res.isError, textOf(res)).to.not.equal(true);
      expect(echo.last().headers).to.include({ 'x-keygate-key-id': both.id, 'x-keygate-permissions': 'ai,mcp' });
    } finally {
      await client.close();
    }
  });
});
