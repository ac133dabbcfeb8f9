import { expect } from 'chai';
import { request } from 'node:http';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { startEcho, type Echo } from '../../support/echo.ts';
import { Client, signUp } from '../../support/http.ts';

/** Sends a request with a chunked body (no Content-Length) of `bytes` bytes. */
function chunked(gw: TestGateway, path: string, headers: Record<string, string>, bytes: number): Promise<{ status: number; body: string }> {
  const url = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method: 'POST', path, headers: { ...headers, 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? resolve({ status: -1, body: '' }) : reject(e)));
    const chunk = Buffer.alloc(64 * 1024, 97);
    for (let sent = 0; sent < bytes; sent += chunk.length) req.write(chunk);
    req.end();
  });
}

describe('requests the gateway must refuse before they reach the upstream', () => {
  let echo: Echo;
  let gw: TestGateway;
  let session: Client;
  before(async () => {
    echo = await startEcho();
    gw = await startTestGateway({ config: { upstream: { url: echo.url } } });
    session = (await signUp(gw.url)).client;
  });
  after(async () => {
    await gw?.stop();
    await echo?.close();
  });

  describe('request targets that are not a plain path', () => {
    const targets: [string, string][] = [
      ['a fragment, which the URL parser would drop along with what follows', '/api/projects#/../admin/users'],
      ['a backslash next to a fragment', '/api/x\\y#z'],
      ['an absolute-form target naming another host', 'http://evil.example/api/projects'],
    ];
    for (const [what, target] of targets) {
      it(`${what}: 400 VALIDATION_FAILED, and the upstream hears nothing`, async () => {
        const before = echo.seen.length;
        const res = await session.get(target);
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('VALIDATION_FAILED');
        expect(echo.seen.length).to.equal(before);
      });
    }
  });

  describe('forwarded bodies over 1 MiB', () => {
    it('a declared body over 1 MiB is 413 PAYLOAD_TOO_LARGE, and the upstream hears nothing', async () => {
      const before = echo.seen.length;
      const res = await session.post('/api/projects', { blob: 'x'.repeat(3 * 1024 * 1024) });
      expect(res.status).to.equal(413);
      expect(res.body.code).to.equal('PAYLOAD_TOO_LARGE');
      expect(echo.seen.length).to.equal(before);
    });

    it('a chunked body that grows past 1 MiB is cut off with 413, and the upstream never gets it whole', async () => {
      const cookie = [...session.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
      const before = echo.seen.length;
      const res = await chunked(gw, '/api/projects', { cookie }, 3 * 1024 * 1024);
      expect(res.status === 413 || res.status === -1, `status ${res.status}`).to.equal(true);
      expect(echo.seen.slice(before).every((s) => String(s.body ?? '').length <= 1024 * 1024)).to.equal(true);
      expect((await session.get('/api/projects')).status).to.equal(200);
    });

    it('a body under the limit is forwarded whole', async () => {
      const res = await session.post('/api/projects', { blob: 'y'.repeat(512 * 1024) });
      expect(res.status).to.equal(200);
      expect((echo.last().body as { blob: string }).blob).to.have.length(512 * 1024);
    });
  });

  describe('an empty x-api-key header', () => {
    it('still makes a key request: 401 INVALID_API_KEY, never the cookie beside it', async () => {
      const res = await session.post('/api/api-keys', { name: 'sneaky' }, { 'x-api-key': '' });
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('INVALID_API_KEY');
      expect((await session.get('/api/api-keys')).body.keys).to.have.length(0);
    });
  });

  describe('names with control characters', () => {
    it('a NUL in a key name or a sign-up name is 400 VALIDATION_FAILED, not a 5xx', async () => {
      const key = await session.post('/api/api-keys', { name: 'a\u0000b' });
      expect(key.status).to.equal(400);
      expect(key.body.errors[0].path).to.equal('name');
      const user = await new Client(gw.url).post('/api/auth/sign-up/email', { email: 'nul@example.test', password: 'long enough', name: 'x\u0000' });
      expect(user.status).to.equal(400);
    });
  });

  describe('a method a served route does not take', () => {
    it('is 405 with an Allow header listing the methods it does take', async () => {
      const res = await session.put('/api/api-keys', {});
      expect(res.status).to.equal(405);
      expect(res.headers['allow']!.split(', ').sort()).to.include.members(['GET', 'POST']);
    });
  });
});
