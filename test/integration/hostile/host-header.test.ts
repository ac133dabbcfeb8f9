import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { rawRequest, type RawReply } from './raw.ts';

// With publicUrl unset the gateway names itself after the request's Host. A spoofed Host written
// into a publicly cacheable answer poisons that cache for every later client; an unescaped quote in
// it rewrites the WWW-Authenticate challenge an MCP client follows.

const header = (res: RawReply, name: string) => res.headers.get(name)?.join(', ');

function get(gw: TestGateway, path: string, host: string | null, extra: string[] = []): Promise<RawReply> {
  return rawRequest(gw.url, [`GET ${path} HTTP/1.1`, ...(host === null ? [] : [`Host: ${host}`]), ...extra]);
}

describe('hostile Host headers', () => {
  describe('with publicUrl unset', () => {
    let gw: TestGateway;
    useGateway({ config: { mcpServer: { enabled: true } } }, (g) => (gw = g));

    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api/mcp']) {
      it(`GET ${path} names the issuer, never the Host it was asked with, and is never stored by a cache`, async () => {
        const res = await get(gw, path, 'evil.example:8443');
        expect(res.status, res.text).to.equal(200);
        // With OAuth on, the listen address is the issuer: a spoofed Host changes nothing.
        expect(JSON.parse(res.body).resource).to.equal(`${gw.url}/api/mcp`);
        expect(res.text).to.not.include('evil');
        expect(header(res, 'cache-control')).to.equal('no-store');
      });
    }

    // A foreign Host never reaches the 401 on /api/mcp (mcp-dns-rebinding.test.ts); a loopback name
    // on another port than the listener's still does, and the answer is named after it.
    it("the MCP 401's WWW-Authenticate is never stored by a cache", async () => {
      const res = await rawRequest(gw.url, ['POST /api/mcp HTTP/1.1', 'Host: localhost:8443', 'Content-Type: application/json'], '{}');
      expect(res.status, res.text).to.equal(401);
      expect(header(res, 'www-authenticate')).to.equal('Bearer error="invalid_token", scope="mcp", resource_metadata="http://localhost:8443/.well-known/oauth-protected-resource"');
      expect(header(res, 'cache-control')).to.equal('no-store');
    });

    const bad = [
      'evil.example"; error="x',
      'evil.example\\',
      'evil.example/path',
      'evil.example:80:80',
      'evil.example:port',
      'user@evil.example',
      'evil example',
      '[::1',
      'evil.example?x',
      'evil.example#x',
      'ev%22il.example',
    ];
    for (const host of bad) {
      it(`a Host of ${JSON.stringify(host)} is 400 VALIDATION_FAILED on the metadata and on the MCP endpoint, and names nothing`, async () => {
        for (const res of [
          await get(gw, '/.well-known/oauth-protected-resource', host),
          await rawRequest(gw.url, ['POST /api/mcp HTTP/1.1', `Host: ${host}`, 'Content-Type: application/json'], '{}'),
        ]) {
          expect(res.status, res.text).to.equal(400);
          expect(JSON.parse(res.body).code).to.equal('VALIDATION_FAILED');
          expect(res.text).to.not.include('evil');
        }
      });
    }

    for (const host of ['localhost', 'localhost:3000', '127.0.0.1:1', '[::1]:8080', 'api.example.com.', 'my_service:4000', 'xn--bcher-kva.example']) {
      it(`a Host of ${JSON.stringify(host)} is served`, async () => {
        const res = await get(gw, '/.well-known/oauth-protected-resource', host);
        expect(res.status, res.text).to.equal(200);
        expect(JSON.parse(res.body).resource).to.equal(`${gw.url}/api/mcp`);
      });
    }

    it('an HTTP/1.0 request without Host is still answered', async () => {
      const res = await rawRequest(gw.url, ['GET /healthz HTTP/1.0']);
      expect(res.status, res.text).to.equal(200);
    });
  });

  describe('with publicUrl set', () => {
    let gw: TestGateway;
    useGateway({ config: { mcpServer: { enabled: true }, publicUrl: 'https://api.example.com' } }, (g) => (gw = g));

    it('the metadata names publicUrl whatever the Host, and may be cached publicly', async () => {
      const res = await get(gw, '/.well-known/oauth-protected-resource', 'evil.example');
      expect(res.status, res.text).to.equal(200);
      expect(JSON.parse(res.body).resource).to.equal('https://api.example.com/api/mcp');
      expect(header(res, 'cache-control')).to.equal('public, max-age=3600');
    });
  });
});
