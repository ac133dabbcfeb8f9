import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';
import { head, RawSocket } from './support.ts';

// A body declared and never sent held a socket on the gateway's own routes for Node's
// requestTimeout (about 305 s): sign-in, OAuth registration, the MCP endpoint, all anonymous.
// On every route, a body that sends nothing for 10 s is answered 408 and the
// connection closed. The idle time is shortened to 300 ms here (the product's default is 10 s).

const IDLE_MS = 300;

describe('hostile: slow bodies on the gateway\'s own routes', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let host: string;
  before(async () => {
    gw = await startTestGateway({ bodyIdleMs: IDLE_MS, config: { mcpServer: { enabled: true } } });
    host = new URL(gw.url).host;
  });
  after(async () => gw?.stop());

  const post = (path: string, length: number, extra: [string, string][] = []) =>
    head('POST', path, [['Host', host], ['Content-Type', 'application/json'], ['Content-Length', String(length)], ...extra]);

  for (const [what, sent] of [['sends nothing of it', ''], ['sends 10 of 60 bytes and then nothing', '{"email":"']] as const) {
    describe(`when a sign-in declares a body and ${what}`, () => {
      it('then it gets a 408 REQUEST_TIMEOUT problem and the gateway closes the connection', async () => {
        const s = await RawSocket.open(gw.url);
        s.write(post('/api/auth/sign-in/email', 60));
        if (sent) s.write(sent);
        const res = await s.response(5_000);
        expect(res.status, res.text).to.equal(408);
        expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
        expect(res.body.code).to.equal('REQUEST_TIMEOUT');
        expect(res.headers.connection).to.equal('close');
        await s.until(() => s.ended, 2_000);
        expect(s.ended).to.equal(true);
      });
    });
  }

  describe('when an OAuth client registration declares a body and sends nothing', () => {
    it('then the connection is not held: it is answered 408 and closed', async () => {
      const s = await RawSocket.open(gw.url);
      s.write(post('/oauth/register', 200));
      await s.until(() => s.ended, 5_000);
      expect(s.ended, s.received).to.equal(true);
      expect(s.received).to.match(/^HTTP\/1\.1 408 /);
    });
  });

  describe('when a request is refused before its body is read (anonymous on /api/mcp) and the body never comes', () => {
    it('then the refusal is sent at once, and the connection is closed once the body has been quiet for the idle time', async () => {
      const s = await RawSocket.open(gw.url);
      s.write(post('/api/mcp', 200, [['Accept', 'application/json, text/event-stream']]));
      const res = await s.response(5_000);
      expect(res.status, res.text).to.equal(401);
      await s.until(() => s.ended, 5_000);
      expect(s.ended).to.equal(true);
    });
  });

  describe('when a body keeps arriving, each chunk sooner than the idle time', () => {
    it('then it is read whole and answered as usual', async () => {
      const body = JSON.stringify({ email: 'nobody@example.test', password: 'not the password' });
      const s = await RawSocket.open(gw.url);
      s.write(post('/api/auth/sign-in/email', Buffer.byteLength(body)));
      // Twelve characters at a time, each pause inside the idle time.
      await s.trickle(body.match(/.{1,12}/gs) ?? [], IDLE_MS / 3);
      const res = await s.response(5_000);
      expect(res.status, res.text).to.equal(401);
      expect(res.body.code).to.equal('INVALID_CREDENTIALS');
    });
  });

  describe('when the whole body is sent at once', () => {
    it('then the connection stays open for the next request (no timer left behind closes it)', async () => {
      const body = JSON.stringify({ email: 'nobody@example.test', password: 'not the password' });
      const s = await RawSocket.open(gw.url);
      s.write(post('/api/auth/sign-in/email', Buffer.byteLength(body)) + body);
      const res = await s.response(5_000);
      expect(res.status).to.equal(401);
      // Longer than the idle time: a leftover timer would have closed it by now.
      await new Promise((ok) => setTimeout(ok, IDLE_MS * 3));
      expect(s.ended).to.equal(false);
      s.destroy();
    });
  });

  describe('after all of the above', () => {
    it('then nothing was logged as an error: a quiet client is no fault of the gateway', () => {
      const errors = gw.logs.filter((l) => (JSON.parse(l) as { level: number }).level >= 50);
      expect(errors).to.deep.equal([]);
    });
  });
});
