import { expect } from 'chai';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { Client, signUp } from '../../support/http.ts';
import { createKey, initializeMessage, mcpSuite, rpc } from './support.ts';
import { connectApp } from '../oauth/support.ts';

// A 2025-era client gets an Mcp-Session-Id from initialize and sends it on every later request.
// The id is the caller's alone and checkable by any instance; it never stands in for the key.

const listTools = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };

/** The SDK client of 2025 with its transport, which keeps the session id and sends it along. */
async function connect(base: string, key: string): Promise<{ mcp: McpClient; transport: StreamableHTTPClientTransport }> {
  const mcp = new McpClient({ name: 'keygate-test', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/api/mcp', base), { requestInit: { headers: { 'x-api-key': key } } });
  await mcp.connect(transport);
  return { mcp, transport };
}

async function sessionOf(client: Client): Promise<string> {
  const res = await rpc(client, initializeMessage);
  expect(res.status).to.equal(200);
  return res.headers['mcp-session-id']!;
}

const flip = (id: string) => id.slice(0, -1) + (id.endsWith('A') ? 'B' : 'A');

describe('MCP sessions of 2025-era clients', () => {
  let gw: TestGateway;
  let session: Client;
  let key: string;
  let keyed: Client;

  mcpSuite({}, (s) => {
    ({ gw, session, key } = s);
    keyed = new Client(gw.url).withKey(key);
  });

  describe('when the SDK client connects', () => {
    it('initialize answers an Mcp-Session-Id of visible ASCII with nothing of the key in it, and the client works with it', async () => {
      const { mcp, transport } = await connect(gw.url, key);
      try {
        expect(transport.sessionId).to.be.a('string').and.match(/^[\x21-\x7E]+$/);
        expect(transport.sessionId).to.not.include(key).and.not.include(key.slice(0, 12));
        const { tools } = await mcp.listTools();
        expect(tools.map((t) => t.name)).to.include('whoami');
      } finally {
        await mcp.close();
      }
    });
  });

  it('each initialize gets a new id', async () => {
    expect(await sessionOf(keyed)).to.not.equal(await sessionOf(keyed));
  });

  it('three concurrent requests with the id are all served', async () => {
    const id = await sessionOf(keyed);
    const answers = await Promise.all([1, 2, 3].map((n) => rpc(keyed, { ...listTools, id: n }, { 'mcp-session-id': id })));
    expect(answers.map((r) => r.status)).to.deep.equal([200, 200, 200]);
  });

  it('a request without an id is served as before (stateless clients keep working)', async () => {
    const res = await rpc(keyed, listTools);
    expect(res.status).to.equal(200);
    expect(res.body.result.tools).to.be.an('array');
    expect(res.headers['mcp-session-id']).to.equal(undefined);
  });

  describe('when the id does not verify', () => {
    it('a forged or altered id is 404 with a JSON-RPC error carrying the request id', async () => {
      const id = await sessionOf(keyed);
      for (const bad of [flip(id), 'made-up-session', `${id}x`]) {
        const res = await rpc(keyed, listTools, { 'mcp-session-id': bad });
        expect(res.status, bad).to.equal(404);
        expect(res.body).to.deep.include({ jsonrpc: '2.0', id: 2 });
        expect(res.body.error.code).to.equal(-32001);
      }
    });

    it("another key's id is 404, the same owner's other key included", async () => {
      const mine = await sessionOf(keyed);
      const second = await createKey(session, { name: 'second' });
      const stranger = await createKey((await signUp(gw.url)).client);
      for (const other of [second.key, stranger.key]) {
        const res = await rpc(new Client(gw.url).withKey(other), listTools, { 'mcp-session-id': mine });
        expect(res.status).to.equal(404);
      }
      expect((await rpc(keyed, listTools, { 'mcp-session-id': mine })).status).to.equal(200);
    });

    it('the SDK client that gets 404 can initialize again and carry on', async () => {
      const res = await rpc(keyed, listTools, { 'mcp-session-id': 'stale' });
      expect(res.status).to.equal(404);
      const { mcp } = await connect(gw.url, key);
      try {
        expect((await mcp.listTools()).tools).to.not.be.empty;
      } finally {
        await mcp.close();
      }
    });
  });

  describe('DELETE and GET', () => {
    it('with the caller\'s id or none answer 405 with Allow: POST (nothing is kept to end)', async () => {
      const id = await sessionOf(keyed);
      for (const method of ['DELETE', 'GET']) {
        for (const headers of [{ 'mcp-session-id': id }, {}] as Record<string, string>[]) {
          const res = await keyed.request(method, '/api/mcp', undefined, { accept: 'text/event-stream', ...headers });
          expect(res.status, method).to.equal(405);
          expect(res.headers.allow).to.equal('POST');
        }
      }
      // The id still works after the DELETE: it was not a termination.
      expect((await rpc(keyed, listTools, { 'mcp-session-id': id })).status).to.equal(200);
    });

    it('with an id that is not the caller\'s answer 404', async () => {
      const id = await sessionOf(keyed);
      for (const method of ['DELETE', 'GET']) {
        const res = await keyed.request(method, '/api/mcp', undefined, { accept: 'text/event-stream', 'mcp-session-id': flip(id) });
        expect(res.status, method).to.equal(404);
      }
    });
  });

  describe('the id is no credential', () => {
    it('without the key, a request with a valid id gets the OAuth 401', async () => {
      const id = await sessionOf(keyed);
      const res = await rpc(new Client(gw.url), listTools, { 'mcp-session-id': id });
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.match(/^Bearer error="invalid_token"/);
    });

    it('a foreign Host with the key and a valid id is still refused 403 (DNS rebinding)', async () => {
      const id = await sessionOf(keyed);
      const res = await rpc(keyed, listTools, { 'mcp-session-id': id, host: 'rebound.example' });
      expect(res.status).to.equal(403);
    });

    it('a key revoked mid-session is refused despite the valid session id', async () => {
      const { key: doomed, id: doomedId } = await createKey(session, { name: 'doomed' });
      const { mcp, transport } = await connect(gw.url, doomed);
      try {
        const sessionId = transport.sessionId!;
        expect((await mcp.listTools()).tools).to.not.be.empty;
        expect((await session.delete(`/api/api-keys/${doomedId}`)).status).to.equal(204);
        const err = await mcp.listTools().then(() => null, (e: unknown) => e as { code?: number });
        expect(err?.code).to.equal(401);
        const raw = await rpc(new Client(gw.url).withKey(doomed), listTools, { 'mcp-session-id': sessionId });
        expect(raw.status).to.equal(401);
      } finally {
        await mcp.close().catch(() => undefined);
      }
    });
  });

  describe('a connected app (OAuth)', () => {
    it("gets an id bound to its grant: the person's key cannot use it, and revoking the grant refuses it", async () => {
      const app = await connectApp(gw.url, session, 'Session app');
      const bearer = new Client(gw.url, { authorization: `Bearer ${app.accessToken}` });
      const id = await sessionOf(bearer);
      expect((await rpc(bearer, listTools, { 'mcp-session-id': id })).status).to.equal(200);
      expect((await rpc(keyed, listTools, { 'mcp-session-id': id })).status).to.equal(404);
      expect((await rpc(bearer, listTools, { 'mcp-session-id': await sessionOf(keyed) })).status).to.equal(404);
      const grant = ((await session.get('/api/oauth/grants')).body.grants as { id: string; clientName: string }[]).find((g) => g.clientName === 'Session app')!;
      expect((await session.delete(`/api/oauth/grants/${grant.id}`)).status).to.equal(204);
      expect((await rpc(bearer, listTools, { 'mcp-session-id': id })).status).to.equal(401);
    });
  });

  it('the 2026-07-28 revision issues no session id', async () => {
    const revision = '2026-07-28';
    const envelope = { 'io.modelcontextprotocol/protocolVersion': revision, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': {} };
    const res = await rpc(keyed, { jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: envelope } }, { 'mcp-protocol-version': revision, 'mcp-method': 'server/discover' });
    expect(res.status).to.equal(200);
    expect(res.headers['mcp-session-id']).to.equal(undefined);
  });
});

describe('MCP sessions across instances', () => {
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    a = await startTestGateway({ counters: 'postgres' });
    b = await startTestGateway({ counters: 'postgres', database: a.database });
  });
  after(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('an id issued by one instance is honoured by another sharing its database', async () => {
    const { client } = await signUp(a.url);
    const { key } = await createKey(client);
    const id = await sessionOf(new Client(a.url).withKey(key));
    const res = await rpc(new Client(b.url).withKey(key), listTools, { 'mcp-session-id': id });
    expect(res.status).to.equal(200);
    expect((await rpc(new Client(b.url).withKey(key), listTools, { 'mcp-session-id': flip(id) })).status).to.equal(404);
  });
});
