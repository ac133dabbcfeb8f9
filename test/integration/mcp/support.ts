import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client } from '../../support/http.ts';

/** What the echo upstream saw of one request. */
export interface Seen { method: string; path: string; query: Record<string, string | string[]>; headers: IncomingHttpHeaders; body: unknown }

export interface Echo { url: string; seen: Seen[]; last(): Seen; close(): Promise<void> }

/**
 * A small real upstream: records every request and answers it as JSON. `/api/fail/<status>` answers
 * that status with a problem body, so tests can watch an upstream failure reach the agent.
 */
export async function startEcho(): Promise<Echo> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://upstream');
      const query: Record<string, string | string[]> = {};
      for (const k of new Set(url.searchParams.keys())) {
        const all = url.searchParams.getAll(k);
        query[k] = all.length > 1 ? all : all[0]!;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const entry: Seen = { method: req.method ?? '', path: url.pathname, query, headers: req.headers, body: text ? JSON.parse(text) : undefined };
      seen.push(entry);
      const fail = /^\/api\/fail\/(\d{3})$/.exec(url.pathname);
      res.setHeader('content-type', 'application/json');
      if (fail) {
        res.statusCode = Number(fail[1]);
        res.end(JSON.stringify({ detail: 'the upstream says no' }));
        return;
      }
      res.statusCode = req.method === 'POST' ? 201 : 200;
      res.end(JSON.stringify({ method: entry.method, path: entry.path, query, body: entry.body ?? null }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    last: () => {
      const s = seen[seen.length - 1];
      if (!s) throw new Error('the upstream saw no request');
      return s;
    },
    close: () => new Promise<void>((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    }),
  };
}

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
