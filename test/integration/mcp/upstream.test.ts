import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { expectOAuth401 } from '../../support/oauth.ts';
import { connectMcp, createKey, rpc, initializeMessage, textOf } from './support.ts';

/** A port nothing listens on: bound once, then let go. */
async function deadUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', () => ok()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((ok) => s.close(() => ok()));
  return `http://127.0.0.1:${port}`;
}

async function callAsAgent(gw: TestGateway, name: string, args: Record<string, unknown>) {
  const { client } = await signUp(gw.url);
  const { key } = await createKey(client);
  const mcp = await connectMcp(gw.url, { 'x-api-key': key });
  try {
    return await mcp.callTool({ name, arguments: args });
  } finally {
    await mcp.close();
  }
}

describe('MCP server: forwarded tools without a working upstream', () => {
  describe('when no upstream is configured', () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({
        // The test reaches the gateway at 127.0.0.1, which publicUrl alone would not let /api/mcp answer.
        config: { publicUrl: 'https://api.example.test', mcpServer: { allowedHosts: ['127.0.0.1'], tools: [{ name: 'list_projects', method: 'GET', path: '/api/projects' }] } },
        counters: 'postgres',
      });
    });
    after(async () => gw?.stop());

    it('tools/list offers only the tools that answer here, and a configured forwarding tool is unknown', async () => {
      const { client } = await signUp(gw.url);
      const { key } = await createKey(client);
      const mcp = await connectMcp(gw.url, { 'x-api-key': key });
      try {
        expect((await mcp.listTools()).tools.map((t) => t.name)).to.deep.equal(['whoami', 'list_api_keys']);
        expect(JSON.parse(textOf(await mcp.callTool({ name: 'whoami', arguments: {} }))).user.email).to.be.a('string');
        const unknown = await mcp.callTool({ name: 'list_projects', arguments: {} }).then(() => null, (e: unknown) => e);
        expect(String(unknown)).to.match(/-32602: Tool list_projects not found/);
      } finally {
        await mcp.close();
      }
    });

    it('with publicUrl set, the metadata and the 401 name the public address, not the Host', async () => {
      const meta = await new Client(gw.url).get('/.well-known/oauth-protected-resource');
      expect(meta.body.resource).to.equal('https://api.example.test/api/mcp');
      const refused = await rpc(new Client(gw.url), initializeMessage);
      expectOAuth401(refused, 'https://api.example.test');
    });
  });

  describe('when the upstream does not answer', () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({
        config: { upstream: { url: await deadUrl() }, mcpServer: { tools: [{ name: 'list_projects', method: 'GET', path: '/api/projects' }] } },
        counters: 'postgres',
      });
    });
    after(async () => gw?.stop());

    it('the call is a tool error with 502 BAD_GATEWAY, not a transport failure', async () => {
      const res = await callAsAgent(gw, 'list_projects', {});
      expect(res.isError).to.equal(true);
      expect(textOf(res)).to.match(/^502 BAD_GATEWAY: The upstream service did not answer/);
    });
  });

  describe('when the upstream answers in parts (no length) or with more than 64 KiB', () => {
    let gw: TestGateway;
    let upstream: ReturnType<typeof createServer>;
    // About 100 KB of JSON: past what the forwarder gathers whole, so it arrives as a stream.
    const rows = Array.from({ length: 2000 }, (_, i) => ({ id: `p_${i}`, name: `Project number ${i} with a longer name` }));
    const whole = JSON.stringify({ projects: rows });
    before(async () => {
      upstream = createServer((req, res) => {
        if (req.url === '/api/breaks') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(whole.slice(0, 1000));
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        }
        if (req.url === '/api/chunked') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(whole.slice(0, 10));
          setImmediate(() => res.end(whole.slice(10)));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(whole)) }).end(whole);
      });
      await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', () => ok()));
      gw = await startTestGateway({
        config: {
          upstream: { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
          mcpServer: { tools: [{ name: 'chunked', method: 'GET', path: '/api/chunked' }, { name: 'large', method: 'GET', path: '/api/large' }, { name: 'breaks', method: 'GET', path: '/api/breaks' }] },
        },
        counters: 'postgres',
      });
    });
    after(async () => {
      await gw?.stop();
      await new Promise<void>((ok) => upstream.close(() => ok()));
    });

    for (const name of ['chunked', 'large']) {
      it(`the ${name} answer reaches the agent whole`, async () => {
        const res = await callAsAgent(gw, name, {});
        expect(res.isError ?? false).to.equal(false);
        expect(textOf(res)).to.equal(whole);
      });
    }

    it('an answer that breaks off mid-stream is a tool error with 502 BAD_GATEWAY, not a transport failure', async () => {
      const res = await callAsAgent(gw, 'breaks', {});
      expect(res.isError).to.equal(true);
      expect(textOf(res)).to.match(/^502 BAD_GATEWAY: /);
    });
  });
});
