import { expect } from 'chai';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { connectMcp, createKey, startEcho, textOf, type Echo } from '../mcp/support.ts';
import { until } from '../../support/until.ts';

// Forwarded MCP tool calls take the caller's slot of upstream.maxConcurrentPerCaller
// like REST forwards. They took none: 12 concurrent tools/call of one key were all in flight
// upstream at once, and 140 of them starved every other caller's forwards.

const LIMIT = 4;
const idInput = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] };
// The echo holds /api/hold/* until told to answer: a slow upstream. /api/projects/* answers at once.
const tools = [{ name: 'hold', method: 'GET', path: '/api/hold/{id}', inputSchema: idInput }, { name: 'project', method: 'GET', path: '/api/projects/{id}', inputSchema: idInput }];

describe('hostile: one key firing many MCP tool calls at a slow upstream', function () {
  this.timeout(30_000);
  let echo: Echo;
  let gw: TestGateway;
  let session: Client;
  let key: string;
  let mcp: McpClient;
  before(async () => {
    echo = await startEcho();
    gw = await startTestGateway({ config: { upstream: { url: echo.url, maxConcurrentPerCaller: LIMIT }, plans: { free: { apiRateLimit: 1000 } }, mcpServer: { tools } } });
    ({ client: session } = await signUp(gw.url));
    ({ key } = await createKey(session));
    mcp = await connectMcp(gw.url, { 'x-api-key': key });
  });
  after(async () => {
    echo?.releaseHeld();
    await mcp?.close();
    await gw?.stop();
    await echo?.close();
  });

  const call = (id: string) => mcp.callTool({ name: 'hold', arguments: { id } }) as Promise<CallToolResult>;

  it(`when 12 tool calls are made at once with a limit of ${LIMIT}, then ${LIMIT} reach the upstream and the others are refused as 429 TOO_MANY_CONCURRENT tool errors`, async () => {
    const settled: CallToolResult[] = [];
    const calls = Array.from({ length: 12 }, (_, i) => call(`m${i}`).then((r) => (settled.push(r), r)));
    await echo.untilHeld(LIMIT, 10_000);
    // The refused ones come back while the others are still held.
    await until('the calls past the limit are refused', () => settled.length >= 12 - LIMIT, 10_000);
    expect(settled).to.have.length(12 - LIMIT);
    expect(echo.held()).to.equal(LIMIT);
    expect(echo.inFlight()).to.equal(LIMIT);
    for (const r of settled) {
      expect(r.isError).to.equal(true);
      expect(textOf(r)).to.match(/^429 TOO_MANY_CONCURRENT: /);
    }

    // The same count as REST: this key's REST forward is refused too, another caller is served.
    const rest = await new Client(gw.url).withKey(key).get('/api/projects');
    expect(rest.status).to.equal(429);
    expect(rest.body.code).to.equal('TOO_MANY_CONCURRENT');
    expect((await session.get('/api/projects')).status).to.equal(200);

    echo.releaseHeld();
    const results = await Promise.all(calls);
    expect(results.filter((r) => r.isError !== true)).to.have.length(LIMIT);
    // Slots are handed back once the calls end.
    const again = await mcp.callTool({ name: 'project', arguments: { id: 'after' } }) as CallToolResult;
    expect(again.isError, textOf(again)).to.not.equal(true);
  });

  it(`when the key already holds ${LIMIT} REST forwards, then a tool call is refused the same way`, async () => {
    const asKey = new Client(gw.url).withKey(key);
    const held = Array.from({ length: LIMIT }, (_, i) => asKey.get(`/api/hold/r${i}`));
    await echo.untilHeld(LIMIT, 10_000);
    const refused = await call('over');
    expect(refused.isError).to.equal(true);
    expect(textOf(refused)).to.match(/^429 TOO_MANY_CONCURRENT: /);
    expect(echo.held()).to.equal(LIMIT);
    echo.releaseHeld();
    expect((await Promise.all(held)).map((r) => r.status)).to.deep.equal(Array(LIMIT).fill(200));
  });
});
