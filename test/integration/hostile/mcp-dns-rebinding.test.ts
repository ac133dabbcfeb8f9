import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { signUp } from '../../support/http.ts';
import { startServe } from '../../support/serve-child.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { tempDir } from '../../support/tmp.ts';
import { createKey } from '../mcp/support.ts';
import { rawRequest, type RawReply } from './raw.ts';
import { until } from '../../support/until.ts';

// DNS rebinding: a page on evil.example makes the browser's name for it resolve to this gateway,
// then posts to /api/mcp with its own name in Host and its own origin in Origin. Written byte for
// byte, since a client library would set Host from the URL.

const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });

function post(gw: TestGateway, fields: string[]): Promise<RawReply> {
  return rawRequest(gw.url, ['POST /api/mcp HTTP/1.1', 'Content-Type: application/json', 'Accept: application/json, text/event-stream', ...fields], initialize);
}
const remaining = (res: RawReply) => Number(res.headers.get('ratelimit-remaining')?.[0]);

describe('hostile: DNS rebinding against /api/mcp', () => {
  describe('with publicUrl unset', () => {
    let gw: TestGateway;
    let key: string;
    before(async () => {
      gw = await startTestGateway({ config: { mcpServer: { allowedHosts: ['mcp.internal.example'], allowedOrigins: ['https://app.example.com'] } } });
      const { client } = await signUp(gw.url);
      ({ key } = await createKey(client));
    });
    after(async () => gw?.stop());

    it('a rebound Host with its Origin is 403 before the key is read: no quota spent, a wrong key not even noticed', async () => {
      const first = await post(gw, ['Host: 127.0.0.1', `x-api-key: ${key}`]);
      expect(first.status, first.text).to.equal(200);
      const evil = await post(gw, ['Host: evil.example.com', 'Origin: http://evil.example.com', `x-api-key: ${key}`]);
      expect(evil.status, evil.text).to.equal(403);
      expect(JSON.parse(evil.body)).to.include({ code: 'FORBIDDEN' });
      expect(evil.headers.has('www-authenticate')).to.equal(false);
      expect(evil.headers.has('ratelimit-remaining')).to.equal(false);
      const wrongKey = await post(gw, ['Host: evil.example.com', 'x-api-key: kg_not_a_key']);
      expect(wrongKey.status, wrongKey.text).to.equal(403);
      const after = await post(gw, ['Host: 127.0.0.1', `x-api-key: ${key}`]);
      expect(remaining(after)).to.equal(remaining(first) - 1);
    });

    for (const host of ['localhost', 'localhost:3000', '127.0.0.1:1', '[::1]:8080', 'mcp.internal.example:8443', 'MCP.Internal.Example']) {
      it(`a Host of ${host} is served`, async () => {
        const res = await post(gw, [`Host: ${host}`, `x-api-key: ${key}`]);
        expect(res.status, res.text).to.equal(200);
      });
    }

    for (const host of ['evil.example.com', 'localhost.evil.example', '127.0.0.2.nip.io', '10.0.0.7', 'internal.example']) {
      it(`a Host of ${host} is 403, with or without a key`, async () => {
        for (const res of [await post(gw, [`Host: ${host}`, `x-api-key: ${key}`]), await post(gw, [`Host: ${host}`])]) {
          expect(res.status, res.text).to.equal(403);
          expect(JSON.parse(res.body).code).to.equal('FORBIDDEN');
        }
      });
    }

    for (const origin of ['http://evil.example.com', 'null', 'https://app.example.com.evil.example', 'file://', 'http://localhost.evil.example:3000']) {
      it(`an Origin of ${origin} is 403 even with a loopback Host`, async () => {
        const res = await post(gw, ['Host: 127.0.0.1', `Origin: ${origin}`, `x-api-key: ${key}`]);
        expect(res.status, res.text).to.equal(403);
      });
    }

    for (const origin of ['http://localhost:6274', 'http://127.0.0.1:3000', 'https://app.example.com', 'https://mcp.internal.example']) {
      it(`an Origin of ${origin} is served`, async () => {
        const res = await post(gw, ['Host: 127.0.0.1', `Origin: ${origin}`, `x-api-key: ${key}`]);
        expect(res.status, res.text).to.equal(200);
      });
    }

    it('the rest of the gateway is not affected: the REST API answers a foreign Host as before', async () => {
      const res = await rawRequest(gw.url, ['GET /healthz HTTP/1.1', 'Host: evil.example.com']);
      expect(res.status, res.text).to.equal(200);
    });

    it('any letter case and paths beneath /api/mcp are guarded the same way', async () => {
      for (const path of ['/api/MCP', '/api/mcp/x']) {
        const res = await rawRequest(gw.url, [`POST ${path} HTTP/1.1`, 'Host: evil.example.com', 'Content-Type: application/json'], initialize);
        expect(res.status, `${path}: ${res.text}`).to.equal(403);
      }
    });
  });

  describe('with publicUrl set', () => {
    let gw: TestGateway;
    let key: string;
    before(async () => {
      gw = await startTestGateway({ config: { publicUrl: 'https://gw.example.com' } });
      const { client } = await signUp(gw.url);
      ({ key } = await createKey(client));
    });
    after(async () => gw?.stop());

    it('only its host is served: loopback names are 403 too', async () => {
      expect((await post(gw, ['Host: gw.example.com', `x-api-key: ${key}`])).status).to.equal(200);
      expect((await post(gw, ['Host: gw.example.com', 'Origin: https://gw.example.com', `x-api-key: ${key}`])).status).to.equal(200);
      for (const host of ['127.0.0.1', 'localhost:3000', 'evil.example.com']) {
        const res = await post(gw, [`Host: ${host}`, `x-api-key: ${key}`]);
        expect(res.status, `${host}: ${res.text}`).to.equal(403);
      }
      expect((await post(gw, ['Host: gw.example.com', 'Origin: http://localhost:3000', `x-api-key: ${key}`])).status).to.equal(403);
    });
  });

  describe('a gateway listening on every address with publicUrl unset', function () {
    this.timeout(120_000);
    let db: TestDatabase | undefined;
    before(async () => (db = await createTestDatabase('rebind')));
    after(async () => db?.drop());

    it('says at start which hosts /api/mcp accepts', async () => {
      // A database and a directory of its own: a newcomer's `npm start` in this checkout keeps its data.
      const serve = startServe({ cwd: tempDir('kg-rebind-'), env: { ...process.env, DATABASE_URL: db!.url, PORT: '0', HOST: '0.0.0.0', LOG_LEVEL: 'info' } });
      try {
        await serve.url;
        await until('the start log names the accepted hosts', () => /answers only for these hosts/.test(serve.output()), 30_000, 100);
        const line = serve.output().split('\n').find((l) => l.includes('answers only for these hosts'));
        expect(line, serve.output()).to.be.a('string');
        for (const h of ['localhost', '127.0.0.1', '[::1]', '0.0.0.0']) expect(line).to.include(JSON.stringify(h));
      } finally {
        await serve.stop();
      }
    });
  });
});
