import { expect } from 'chai';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { defaultMcpTools } from '../../../src/config.ts';
import type { TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { connectMcp, createKey, mcpSuite, rpc, textOf, type Echo } from './support.ts';

const projectTools = [
  {
    name: 'get_project', description: 'Read one project', method: 'GET', path: '/api/projects/{id}',
    inputSchema: { type: 'object', properties: { id: { type: 'string' }, verbose: { type: 'boolean' }, tags: { type: 'array', items: { type: 'string' } } }, required: ['id'] },
  },
  { name: 'create_project', method: 'POST', path: '/api/projects', inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
  { name: 'list_users', description: 'Admin only', method: 'GET', path: '/api/admin/users' },
  { name: 'checkout', method: 'POST', path: '/api/billing/checkout' },
  { name: 'fail', method: 'POST', path: '/api/fail/{status}', inputSchema: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } },
];

describe('MCP server: a key with MCP access', () => {
  let echo: Echo;
  let gw: TestGateway;
  let session: Client;
  let owner: { id: string; email: string };
  let key: string;
  let keyId: string;
  let mcp: McpClient;

  mcpSuite({ ai: { enabled: true }, mcpServer: { tools: [...defaultMcpTools('/api'), ...projectTools] } }, (s) => {
    ({ echo, gw, session, owner, key, keyId, mcp } = s);
  });

  describe('when the SDK client connects with the key in x-api-key', () => {
    it('initializes and lists whoami, list_api_keys and every configured tool with its input schema', async () => {
      const { tools } = await mcp.listTools();
      expect(tools.map((t) => t.name)).to.deep.equal([
        'whoami', 'list_api_keys', 'list_automations', 'create_automation', 'update_automation', 'delete_automation', 'run_automation',
        'get_project', 'create_project', 'list_users', 'checkout', 'fail',
      ]);
      const get = tools.find((t) => t.name === 'get_project')!;
      expect(get.description).to.equal('Read one project');
      expect(get.inputSchema.required).to.deep.equal(['id']);
      expect(get.inputSchema.properties).to.have.keys('id', 'verbose', 'tags');
      expect(mcp.getServerVersion()?.name).to.equal('keygate');
    });

    it('whoami answers the owner and the key, never the key itself', async () => {
      const res = await mcp.callTool({ name: 'whoami', arguments: {} });
      expect(res.isError).to.not.equal(true);
      expect(res.structuredContent).to.deep.equal({
        user: { id: owner.id, name: 'Ada Owner', email: owner.email },
        key: { id: keyId, name: 'agent', start: key.slice(0, 12), scopes: ['mcp'], requestQuota: { limit: 100, window: 'day' }, expiresAt: null },
      });
      expect(JSON.parse(textOf(res))).to.deep.equal(res.structuredContent);
      expect(textOf(res)).to.not.include(key);
    });

    it("list_api_keys answers the owner's keys, newest first, and no other user's", async () => {
      const second = await createKey(session, { name: 'second', mcp: false });
      const other = await signUp(gw.url);
      await createKey(other.client, { name: 'not yours' });
      const res = await mcp.callTool({ name: 'list_api_keys', arguments: {} });
      const keys = (res.structuredContent as { keys: { id: string; name: string; mcp: boolean }[] }).keys;
      expect(keys.map((k) => k.id)).to.deep.equal([second.id, keyId]);
      expect(keys[1]).to.include({ name: 'agent', mcp: true });
      expect(textOf(res)).to.not.include(key);
      expect(textOf(res)).to.not.match(/hash/i);
    });
  });

  describe('when the key is sent as Authorization: Bearer', () => {
    it('connects and calls tools as the same owner', async () => {
      const bearer = await connectMcp(gw.url, { authorization: `Bearer ${key}` });
      try {
        const res = await bearer.callTool({ name: 'whoami', arguments: {} });
        expect((res.structuredContent as { user: { id: string } }).user.id).to.equal(owner.id);
      } finally {
        await bearer.close();
      }
    });
  });

  describe('when a configured tool is called', () => {
    it('GET: fills {id} URL-encoded and sends the rest of the input in the query string', async () => {
      const res = await mcp.callTool({ name: 'get_project', arguments: { id: 'p 1', verbose: true, tags: ['a', 'b'] } });
      expect(res.isError).to.not.equal(true);
      const seen = echo.last();
      expect(seen).to.deep.include({ method: 'GET', path: '/api/projects/p%201', query: { verbose: 'true', tags: ['a', 'b'] }, body: undefined });
      expect(res.structuredContent).to.deep.include({ method: 'GET', path: '/api/projects/p%201' });
    });

    it('POST: sends the input as the JSON body, unknown fields included', async () => {
      const res = await mcp.callTool({ name: 'create_project', arguments: { name: 'Apollo', color: 'red' } });
      expect(res.isError).to.not.equal(true);
      const seen = echo.last();
      expect(seen).to.deep.include({ method: 'POST', path: '/api/projects', query: {}, body: { name: 'Apollo', color: 'red' } });
      expect(seen.headers['content-type']).to.equal('application/json');
    });

    it('acts as the owner: the identity headers the gateway sets, and never the key', async () => {
      const spoofing = await connectMcp(gw.url, { 'x-api-key': key, 'x-keygate-user-id': 'someone-else', 'x-keygate-subject': 'session' });
      try {
        await spoofing.callTool({ name: 'create_project', arguments: { name: 'Spoof' } });
      } finally {
        await spoofing.close();
      }
      const seen = echo.last();
      expect(seen.headers).to.include({
        'x-keygate-user-id': owner.id, 'x-keygate-subject': 'key', 'x-keygate-key-id': keyId, 'x-keygate-permissions': 'mcp',
      });
      for (const s of echo.seen) {
        expect(s.headers).to.not.have.any.keys('x-api-key', 'authorization', 'cookie', 'x-content-api-key');
        expect(JSON.stringify(s.headers)).to.not.include(key);
      }
    });

    it('a missing required field is a tool error that names the field, and nothing is forwarded', async () => {
      const before = echo.seen.length;
      const res = await mcp.callTool({ name: 'create_project', arguments: {} });
      expect(res.isError).to.equal(true);
      expect(textOf(res)).to.match(/\bname\b/);
      expect(echo.seen.length).to.equal(before);
    });

    it('a path value that would climb or split the path is a tool error, and nothing is forwarded', async () => {
      const before = echo.seen.length;
      const climb = await mcp.callTool({ name: 'get_project', arguments: { id: '..' } });
      expect(climb.isError).to.equal(true);
      expect(textOf(climb)).to.match(/"id" cannot be "\.\."/);
      const split = await mcp.callTool({ name: 'get_project', arguments: { id: '../../admin/users' } });
      expect(split.isError).to.equal(true);
      expect(textOf(split)).to.match(/^400 VALIDATION_FAILED: /);
      expect(echo.seen.length).to.equal(before);
    });
  });

  describe('when the policy refuses a configured tool', () => {
    for (const [tool, path] of [['list_users', '/api/admin/users'], ['checkout', '/api/billing/checkout']] as const) {
      it(`${tool} (${path}) is a tool error with 403 and the reason, and the upstream never sees it`, async () => {
        const before = echo.seen.length;
        const res = await mcp.callTool({ name: tool, arguments: {} });
        expect(res.isError).to.equal(true);
        expect(textOf(res)).to.equal('403 FORBIDDEN: API keys are never allowed here. Use a signed-in session instead.');
        expect(echo.seen.length).to.equal(before);
      });
    }
  });

  describe('when the upstream answers an error', () => {
    for (const status of ['404', '500']) {
      it(`${status} is a tool error that gives the status and the upstream's reason`, async () => {
        const res = await mcp.callTool({ name: 'fail', arguments: { status } });
        expect(res.isError).to.equal(true);
        expect(textOf(res)).to.match(new RegExp(`^The upstream answered ${status} [A-Za-z ]+: `)).and.include('the upstream says no');
      });
    }
  });

  describe('HTTP around the endpoint', () => {
    it('GET and DELETE /api/mcp answer 405 with Allow: POST (no stream offered, no session kept to end)', async () => {
      const keyed = new Client(gw.url).withKey(key);
      for (const method of ['GET', 'DELETE']) {
        const res = await keyed.request(method, '/api/mcp', undefined, { accept: 'text/event-stream' });
        expect(res.status).to.equal(405);
        expect(res.headers.allow).to.equal('POST');
        expect(res.body.code).to.equal('METHOD_NOT_ALLOWED');
      }
    });

    it('a path beneath /api/mcp is 404 and is not forwarded upstream', async () => {
      const before = echo.seen.length;
      const res = await new Client(gw.url).withKey(key).post('/api/mcp/tools', {});
      expect(res.status).to.equal(404);
      expect(res.body.code).to.equal('NOT_FOUND');
      expect(echo.seen.length).to.equal(before);
    });

    it('a body over 1 MiB is refused with 413 before it reaches the MCP server', async () => {
      const big = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(1024 * 1024) } };
      const res = await rpc(new Client(gw.url).withKey(key), big);
      expect(res.status).to.equal(413);
      expect(res.body.code).to.equal('PAYLOAD_TOO_LARGE');
    });

    it('every MCP request spends one of the key\'s quota and carries the rate-limit fields', async () => {
      const keyed = new Client(gw.url).withKey(key);
      const a = await rpc(keyed, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const b = await rpc(keyed, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
      expect(a.status).to.equal(200);
      expect(a.body.result.tools).to.have.length(12);
      expect(Number(b.headers['ratelimit-remaining'])).to.equal(Number(a.headers['ratelimit-remaining']) - 1);
      expect(b.headers['ratelimit-policy']).to.equal('"day";q=100;w=86400');
    });
  });

  describe('the protected-resource metadata (RFC 9728)', () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api/mcp']) {
      it(`GET ${path} answers anyone with the resource /api/mcp and header bearer tokens`, async () => {
        const res = await new Client(gw.url).get(path);
        expect(res.status).to.equal(200);
        expect(res.headers['content-type']).to.match(/^application\/json/);
        expect(res.body).to.deep.equal({
          resource: `${gw.url}/api/mcp`,
          authorization_servers: [gw.url],
          scopes_supported: ['mcp'],
          resource_name: 'keygate MCP server',
          resource_documentation: `${gw.url}/settings/developers`,
          bearer_methods_supported: ['header'],
        });
      });
    }
  });
});
