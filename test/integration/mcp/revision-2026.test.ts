import { expect } from 'chai';
import { Client as Mcp2Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { defaultMcpTools } from '../../../src/config.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { Client } from '../../support/http.ts';
import { mcpSuite, rpc, type Echo } from './support.ts';

// A client of the SDK's second line that speaks the 2026-07-28 revision (no initialize, a _meta
// envelope on every request) gets the same tools, owner and refusals as a 2025-era client.

const REVISION = '2026-07-28';
const tools = [
  { name: 'get_project', method: 'GET', path: '/api/projects/{id}', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
  { name: 'list_users', description: 'Admin only', method: 'GET', path: '/api/admin/users' },
];

async function connect2026(base: string, headers: Record<string, string>): Promise<Mcp2Client> {
  const client = new Mcp2Client({ name: 'keygate-test-2026', version: '0.0.0' }, { versionNegotiation: { mode: { pin: REVISION } } });
  await client.connect(new StreamableHTTPClientTransport(new URL('/api/mcp', base), { requestInit: { headers } }));
  return client;
}

const envelope = { 'io.modelcontextprotocol/protocolVersion': REVISION, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': {} };

describe('MCP server: the 2026-07-28 revision', () => {
  let echo: Echo;
  let gw: TestGateway;
  let owner: { id: string };
  let key: string;
  let keyId: string;
  let mcp: Mcp2Client;

  mcpSuite({ mcpServer: { tools: [...defaultMcpTools('/api'), ...tools] } }, (s) => {
    ({ echo, gw, owner, key, keyId } = s);
  });
  before(async () => {
    mcp = await connect2026(gw.url, { 'x-api-key': key });
  });
  after(async () => {
    await mcp?.close();
  });

  it('negotiates 2026-07-28 and lists the same tools, with caching hints', async () => {
    expect(mcp.getNegotiatedProtocolVersion()).to.equal(REVISION);
    const list = await mcp.listTools();
    expect(list.tools.map((t) => t.name)).to.include.members(['whoami', 'list_api_keys', 'get_project', 'list_users']);
    expect(list).to.deep.include({ ttlMs: 60_000, cacheScope: 'private' });
  });

  it('calls whoami as the key owner and forwards a configured tool as REST would', async () => {
    const me = await mcp.callTool({ name: 'whoami', arguments: {} });
    expect(me.structuredContent).to.deep.include({ user: { id: owner.id, name: 'Ada Owner', email: (me.structuredContent as { user: { email: string } }).user.email } });
    expect((me.structuredContent as { key: { id: string } }).key.id).to.equal(keyId);
    const res = await mcp.callTool({ name: 'get_project', arguments: { id: 'p1' } });
    expect(res.isError).to.not.equal(true);
    expect(echo.last()).to.deep.include({ method: 'GET', path: '/api/projects/p1' });
    expect(echo.last().headers).to.include({ 'x-keygate-user-id': owner.id, 'x-keygate-key-id': keyId });
  });

  it('a tool the policy refuses is a tool error with 403 and the reason, and nothing is forwarded', async () => {
    const before = echo.seen.length;
    const res = await mcp.callTool({ name: 'list_users', arguments: {} });
    expect(res.isError).to.equal(true);
    expect((res.content[0] as { text: string }).text).to.match(/^403 FORBIDDEN: /);
    expect(echo.seen.length).to.equal(before);
  });

  it('without a key, a 2026-07-28 request gets the OAuth 401 like any other', async () => {
    const anon = new Client(gw.url);
    const res = await rpc(anon, { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: envelope } }, { 'mcp-protocol-version': REVISION, 'mcp-method': 'tools/list' });
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.match(/^Bearer error="invalid_token"/);
  });

  it('a request that names the revision but lacks its _meta is -32602 with the request id', async () => {
    const client = new Client(gw.url);
    const res = await rpc(client, { jsonrpc: '2.0', id: 'abc-42', method: 'tools/list', params: {} }, { 'x-api-key': key, 'mcp-protocol-version': REVISION, 'mcp-method': 'tools/list' });
    expect(res.status).to.equal(400);
    expect(res.body).to.deep.include({ jsonrpc: '2.0', id: 'abc-42' });
    expect(res.body.error.code).to.equal(-32602);
  });

  it('an unknown revision is -32022 naming the supported one, with the request id', async () => {
    const client = new Client(gw.url);
    const res = await rpc(client, { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: { ...envelope, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } }, { 'x-api-key': key, 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' });
    expect(res.status).to.equal(400);
    expect(res.body.id).to.equal(9);
    expect(res.body.error.code).to.equal(-32022);
    expect(res.body.error.data.supported).to.include(REVISION);
  });

  it('each 2026-07-28 request spends one of the key quota and carries the rate-limit fields', async () => {
    const client = new Client(gw.url);
    const a = await rpc(client, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope } }, { 'x-api-key': key, 'mcp-protocol-version': REVISION, 'mcp-method': 'tools/list' });
    const b = await rpc(client, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: envelope } }, { 'x-api-key': key, 'mcp-protocol-version': REVISION, 'mcp-method': 'tools/list' });
    expect(a.status).to.equal(200);
    expect(b.status).to.equal(200);
    expect(Number(b.headers['ratelimit-remaining'])).to.equal(Number(a.headers['ratelimit-remaining']) - 1);
  });
});
