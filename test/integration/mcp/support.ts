import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client, signUp } from '../../support/http.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';

import { startEcho, TRACE, type Echo, type Seen } from '../../support/echo.ts';

export { startEcho, TRACE, type Echo, type Seen };

/** Connects the SDK's real client over Streamable HTTP, with the key in the header given. */
export async function connectMcp(base: string, headers: Record<string, string>): Promise<McpClient> {
  const client = new McpClient({ name: 'keygate-test', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/api/mcp', base), { requestInit: { headers } }));
  return client;
}

/** The text of a tool result's first content item. */
export function textOf(result: unknown): string {
  const first = (result as CallToolResult).content[0];
  if (!first || first.type !== 'text') throw new Error('expected a text result');
  return first.text;
}

/** Creates a key for the signed-in user of `session` and returns it with its id. */
export async function createKey(session: Client, body: { name?: string; ai?: boolean; mcp?: boolean } = {}): Promise<{ key: string; id: string }> {
  const res = await session.post('/api/api-keys', { name: 'agent', mcp: true, ...body });
  if (res.status !== 201) throw new Error(`key create failed: ${res.status} ${res.text}`);
  return { key: res.body.key, id: res.body.id };
}

/** A raw JSON-RPC request to /api/mcp as an MCP client would send it. */
export function rpc(client: Client, message: unknown, headers: Record<string, string> = {}) {
  return client.post('/api/mcp', message, { accept: 'application/json, text/event-stream', ...headers });
}

export const initializeMessage = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

export interface McpSuite { echo: Echo; gw: TestGateway; session: Client; owner: { id: string; email: string }; key: string; keyId: string; mcp: McpClient }

/**
 * One echo upstream and one gateway for the file (counters in PostgreSQL), a signed-up owner, a key
 * with MCP access and the SDK client connected with it; `use` is handed them once they are up.
 */
export function mcpSuite(config: Record<string, unknown>, use: (s: McpSuite) => void, opts: { name?: string } = {}): void {
  let parts: Partial<McpSuite> = {};
  before(async () => {
    const echo = await startEcho();
    parts.echo = echo;
    const gw = await startTestGateway({ config: { ...config, upstream: { url: echo.url } }, counters: 'postgres' });
    parts.gw = gw;
    const { client: session, user: owner } = await signUp(gw.url, { name: opts.name ?? 'Ada Owner' });
    const { key, id: keyId } = await createKey(session);
    const mcp = await connectMcp(gw.url, { 'x-api-key': key });
    parts = { ...parts, session, owner, key, keyId, mcp };
    use({ echo, gw, session, owner, key, keyId, mcp });
  });
  after(async () => {
    await parts.mcp?.close();
    await parts.gw?.stop();
    await parts.echo?.close();
  });
}
