import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { rawRequest } from './raw.ts';

// Two Host fields in one request (RFC 9112 3.2: 400). Node keeps the first and drops the second,
// a proxy in front may keep the last: the gateway would name and check one origin while another
// is served. Raw bytes, since a client library sends one Host whatever it is given.

describe('hostile: two Host headers', () => {
  let gw: TestGateway;
  let host: string;
  before(async () => {
    gw = await startTestGateway({ config: { mcpServer: { enabled: true } } });
    host = new URL(gw.url).host;
  });
  after(async () => gw?.stop());

  for (const [what, fields] of [
    ['the same host twice', (h: string) => [`Host: ${h}`, `Host: ${h}`]],
    ['a second, other host', (h: string) => [`Host: ${h}`, 'Host: evil.example']],
    ['a second one spelled in another letter case', (h: string) => [`Host: ${h}`, 'hOsT: evil.example']],
  ] as const) {
    describe(`when a request carries ${what}`, () => {
      it('then it is refused with a 400 problem naming the Host, before any route answers', async () => {
        const res = await rawRequest(gw.url, ['GET /api/auth/get-session HTTP/1.1', ...fields(host)]);
        expect(res.status, res.text).to.equal(400);
        expect(res.headers.get('content-type')?.[0]).to.match(/^application\/problem\+json/);
        const body = JSON.parse(res.body) as { code: string; errors: { path: string }[] };
        expect(body.code).to.equal('VALIDATION_FAILED');
        expect(body.errors[0]!.path).to.equal('(host)');
      });
    });
  }

  describe('when the request goes to the MCP endpoint with two Host headers', () => {
    it('then it is 400, not the 401 that would name a host in its challenge', async () => {
      const res = await rawRequest(gw.url, ['POST /api/mcp HTTP/1.1', `Host: ${host}`, 'Host: evil.example', 'Content-Type: application/json'], '{}');
      expect(res.status, res.text).to.equal(400);
      expect(res.text).to.not.include('evil.example');
    });
  });

  describe('when a request carries one Host', () => {
    it('then it is answered as usual', async () => {
      const res = await rawRequest(gw.url, ['GET /api/auth/get-session HTTP/1.1', `Host: ${host}`]);
      expect(res.status, res.text).to.equal(401);
    });
  });
});
