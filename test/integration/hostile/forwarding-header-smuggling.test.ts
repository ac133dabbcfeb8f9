import { expect } from 'chai';
import { head, RawSocket, startHostile, type Hostile } from './support.ts';

// Headers a client could use to speak with the gateway's voice
// (identity, client address, scheme, method) never reach the upstream, whatever their spelling;
// the gateway's own headers come first; more than 100 header fields is 431 before anything is spent.

describe('hostile: headers smuggled to the upstream', function () {
  this.timeout(30_000);
  let h: Hostile;
  before(async () => (h = await startHostile()));
  after(async () => h?.stop());

  async function send(method: string, target: string, fields: [string, string][], body = ''): Promise<{ status: number; code?: string; remaining?: string }> {
    const s = await RawSocket.open(h.gw.url);
    const all: [string, string][] = [['Host', h.host], ['x-api-key', h.key], ...fields, ['Connection', 'close']];
    if (body) all.push(['Content-Length', String(Buffer.byteLength(body))]);
    s.write(head(method, target, all) + body);
    const res = await s.response(5_000);
    s.destroy();
    return { status: res.status, code: res.body.code, remaining: res.headers['ratelimit-remaining'] };
  }

  describe('when a key sends spoofing headers in every spelling', () => {
    const spoofs: [string, string][] = [
      ['Forwarded', 'for=6.6.6.6;proto=https;host=evil.example'],
      ['X-Real-IP', '6.6.6.6'],
      ['True-Client-IP', '6.6.6.6'],
      ['X_Forwarded_For', '6.6.6.6'],
      ['x_forwarded_host', 'evil.example'],
      ['X-Forwarded-Prefix', '/admin'],
      ['X-Forwarded-Port', '443'],
      ['X-Forwarded', 'for=6.6.6.6'],
      ['X_KEYGATE_USER_ID', '00000000-0000-4000-8000-000000000001'],
      ['x-keygate-role', 'admin'],
      ['X-Original-URL', '/api/admin/users'],
    ];

    it('then none of them reaches the upstream, and the gateway\'s own are there', async () => {
      const res = await send('GET', '/api/projects', spoofs);
      expect(res.status).to.equal(200);
      const seen = h.echo.last();
      const names = seen.headerNames.map((n) => n.toLowerCase());
      for (const [name] of spoofs) expect(names, name).to.not.include(name.toLowerCase());
      expect(names.filter((n) => /^(forwarded|x[-_]real[-_]ip|true[-_]client[-_]ip|x[-_]original[-_]url)$/.test(n))).to.deep.equal([]);
      expect(names.filter((n) => /^x[-_]forwarded/.test(n)).sort()).to.deep.equal(['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto']);
      expect(seen.headers['x-forwarded-for']).to.equal('127.0.0.1');
      expect(seen.headers['x-forwarded-host']).to.equal(h.host);
      expect(names.filter((n) => /^x[-_]keygate/.test(n)).sort()).to.deep.equal(['x-keygate-key-id', 'x-keygate-permissions', 'x-keygate-subject', 'x-keygate-user-id']);
    });
  });

  describe('when the Connection header names other headers', () => {
    it('then those headers are not forwarded, in any spelling', async () => {
      const res = await send('GET', '/api/projects', [['Connection', 'keep-alive, X-Internal-Token, x_debug'], ['X-Internal-Token', 'secret'], ['X-Debug', 'on'], ['X-Kept', 'yes']]);
      expect(res.status).to.equal(200);
      const seen = h.echo.last();
      expect(seen.headers).to.not.have.property('x-internal-token');
      expect(seen.headers).to.not.have.property('x-debug');
      expect(seen.headers['x-kept']).to.equal('yes');
    });

    it('then a header named in a second Connection field is not forwarded either', async () => {
      const res = await send('GET', '/api/projects', [['Connection', 'keep-alive'], ['Connection', 'X-Second-Token'], ['X-Second-Token', 'secret'], ['X-Kept', 'yes']]);
      expect(res.status).to.equal(200);
      const seen = h.echo.last();
      expect(seen.headers).to.not.have.property('x-second-token');
      expect(seen.headers['x-kept']).to.equal('yes');
    });
  });

  describe('when a GET to /api/billing/checkout carries method-override headers', () => {
    it('then the upstream gets a plain GET, with no override to act on', async () => {
      const overrides: [string, string][] = [['X-HTTP-Method-Override', 'POST'], ['X-HTTP-Method', 'POST'], ['X-Method-Override', 'DELETE'], ['x_http_method_override', 'PUT']];
      const res = await send('GET', '/api/billing/checkout', overrides);
      expect(res.status).to.equal(200);
      const seen = h.echo.last();
      expect(seen.method).to.equal('GET');
      expect(seen.headerNames.filter((n) => /method/i.test(n))).to.deep.equal([]);
    });
  });

  describe('when a request carries 100 header fields, the most allowed', () => {
    it('then it is forwarded, with the gateway\'s headers first', async () => {
      const filler: [string, string][] = Array.from({ length: 97 }, (_, i) => [`x-filler-${i}`, 'a']);
      const res = await send('GET', '/api/projects', filler);
      expect(res.status).to.equal(200);
      // The HTTP client adds host and connection for its own connection; the gateway's come next.
      const first = h.echo.last().headerNames.map((n) => n.toLowerCase()).filter((n) => n !== 'host' && n !== 'connection').slice(0, 7);
      expect(first.slice(0, 3)).to.deep.equal(['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto']);
      expect(first.slice(3).sort()).to.deep.equal(['x-keygate-key-id', 'x-keygate-permissions', 'x-keygate-subject', 'x-keygate-user-id']);
    });
  });

  for (const count of [101, 998]) {
    describe(`when a request carries ${count} header fields`, () => {
      it('then it gets 431 HEADERS_TOO_LARGE, the upstream hears nothing and no quota is spent', async () => {
        const before = await send('GET', '/api/projects', []);
        const heard = h.echo.seen.length;
        // Host, x-api-key, Connection and Content-Length are the other four.
        const filler: [string, string][] = Array.from({ length: count - 4 }, (_, i) => [`x-filler-${i}`, 'a']);
        const res = await send('POST', '/api/projects', filler, '{}');
        expect(res.status).to.equal(431);
        expect(res.code).to.equal('HEADERS_TOO_LARGE');
        expect(h.echo.seen.length).to.equal(heard);
        const after = await send('GET', '/api/projects', []);
        expect(Number(after.remaining)).to.equal(Number(before.remaining) - 1);
      });
    });
  }
});
