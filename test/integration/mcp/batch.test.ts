import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { startEcho, type Echo } from '../../support/echo.ts';
import { Client, signUp } from '../../support/http.ts';

describe('MCP server: one message per request', () => {
  let echo: Echo;
  let gw: TestGateway;
  before(async () => {
    echo = await startEcho();
    gw = await startTestGateway({ config: { upstream: { url: echo.url } } });
  });
  after(async () => {
    await gw?.stop();
    await echo?.close();
  });

  it('a JSON-RPC batch is refused with 400, so many tool calls cannot share one unit of quota', async () => {
    const { client } = await signUp(gw.url);
    const key = (await client.post('/api/api-keys', { name: 'agent', mcp: true })).body.key as string;
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_automations', arguments: {} } });
    const before = echo.seen.length;
    const res = await new Client(gw.url).withKey(key).post('/api/mcp', Array.from({ length: 50 }, (_, i) => call(i + 1)), { accept: 'application/json, text/event-stream' });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('VALIDATION_FAILED');
    expect(echo.seen.length).to.equal(before);
  });
});
