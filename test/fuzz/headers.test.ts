import { expect } from 'chai';
import fc from 'fast-check';
import { startEcho, TRACE, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { signUp } from '../support/http.ts';
import { RawSocket } from '../integration/hostile/support.ts';
import { fuzzParams } from './support.ts';

// Forwarded headers, fuzzed: whatever case, "_" for "-", suffix or Connection listing a client uses, a
// protected header it sends never reaches the upstream. Sent byte for byte: an HTTP client library
// would fold or refuse the very spellings under test.

// Framing and routing headers Node itself reads (Host, Content-Length, Transfer-Encoding,
// Connection) and the key header are only fuzzed in the spellings Node and the gateway do not read
// as themselves (with "_"): the hostile suite sends their exact forms.
const PROTECTED = [
  'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'forwarded', 'x-real-ip', 'true-client-ip',
  'x-http-method-override', 'x-http-method', 'x-method-override', 'x-original-url', 'x-rewrite-url',
  'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded', 'x-keygate', 'x-keygate-user-id', 'x-keygate-subject',
  'x-keygate-key-id', 'x-keygate-permissions',
];
const UNDERSCORED_ONLY = ['x-api-key', 'x-content-api-key', 'content-length', 'transfer-encoding'];

const suffix = fc.stringMatching(/^[a-z0-9]{1,8}$/);
const baseName = fc.oneof(
  fc.constantFrom(...PROTECTED).map((n) => ({ name: n, underscore: false })),
  fc.constantFrom(...UNDERSCORED_ONLY).map((n) => ({ name: n, underscore: true })),
  suffix.map((s) => ({ name: `x-forwarded-${s}`, underscore: false })),
  suffix.map((s) => ({ name: `x-keygate-${s}`, underscore: false })),
);

/** A spelling of `name`: any case per letter, each "-" kept or made "_" (at least one "_" if asked). */
const spelled = fc.tuple(baseName, fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }), fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }))
  .map(([{ name, underscore }, upper, under]) => {
    let dashes = 0;
    let out = [...name].map((c, i) => (c === '-' ? (under[dashes++] ? '_' : '-') : upper[i] ? c.toUpperCase() : c));
    if (underscore && !out.includes('_')) out = out.map((c) => (c === '-' ? '_' : c));
    return out.join('');
  });

// A header of no special meaning that the request's Connection field lists as hop-by-hop.
const listed = fc.tuple(suffix, fc.boolean(), fc.boolean()).map(([s, upperInList, underscoreSent]) => ({
  sent: underscoreSent ? `x_hop_${s}` : `X-Hop-${s}`,
  inConnection: upperInList ? `X-HOP-${s.toUpperCase()}` : `x-hop-${s}`,
}));

describe('fuzz: protected headers never reach the upstream', function () {
  this.timeout(60_000);
  let echo: Echo;
  let gw: TestGateway;
  let key: string;
  before(async () => {
    echo = await startEcho();
    gw = await startTestGateway({ config: { upstream: { url: echo.url }, defaultApiRateLimit: 100_000 } });
    const { client: session } = await signUp(gw.url);
    key = (await session.post('/api/api-keys', { name: 'fuzz' })).body.key as string;
  });
  after(async () => {
    await gw?.stop();
    await echo?.close();
  });

  it('for any spelling of a protected header, or of one the Connection field lists', async () => {
    let n = 0;
    await fc.assert(fc.asyncProperty(fc.array(spelled, { minLength: 1, maxLength: 6 }), fc.option(listed), async (names, hop) => {
      const trace = `hdr-${n++}`;
      const fields = names.map((name, i) => `${name}: spoof${i}`);
      if (hop) fields.push(`${hop.sent}: spoofhop`, `Connection: keep-alive, ${hop.inConnection}`);
      const socket = await RawSocket.open(gw.url);
      try {
        socket.write([`GET /api/projects HTTP/1.1`, `Host: ${new URL(gw.url).host}`, `x-api-key: ${key}`, `${TRACE}: ${trace}`, ...fields, '', ''].join('\r\n'));
        const res = await socket.response(10_000);
        expect(res.status, `${fields.join(' | ')} -> ${res.text}`).to.equal(200);
      } finally {
        socket.destroy();
      }
      const [seen] = echo.received(trace);
      expect(seen, 'the request reached the upstream').to.not.equal(undefined);
      const leaked = Object.entries(seen!.headers).filter(([, v]) => String(v).includes('spoof'));
      expect(leaked, `sent ${fields.join(' | ')}`).to.deep.equal([]);
    }), fuzzParams(80));
  });
});
