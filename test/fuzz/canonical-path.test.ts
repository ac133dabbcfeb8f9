import { expect } from 'chai';
import fc from 'fast-check';
import { canonicalizePath, canonicalizeStepByStep } from '../../src/http/canonical-path.ts';
import { AppError } from '../../src/errors.ts';
import { startEcho, TRACE, type Echo } from '../support/echo.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { Client, signUp } from '../support/http.ts';
import { fuzzParams } from './support.ts';

// Canonical paths, fuzzed: the canonicaliser is idempotent, what it returns is canonical,
// and no spelling of a refused path gets to the upstream.

const attempt = (raw: string, canonicalize = canonicalizePath): string | AppError => {
  try {
    return canonicalize(raw);
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
};

// Raw request paths made of the characters that matter to path tricks.
const pathChar = fc.constantFrom('/', '/', '.', '..', '%', '%2e', '%2E', '%2f', '%5c', '%00', '%20', '%41', '%7e', ';', '\\', 'a', 'B', '~', '-', '_', ':', '@', '%C3%A9', '%zz', ' ', '\u00e9');
const rawPath = fc.array(pathChar, { maxLength: 24 }).map((parts) => '/' + parts.join(''));

// A real segment of the refused routes below, spelled so that its canonical form is unchanged.
const UNRESERVED_HEX = (c: string) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
function spelling(segments: string[]): fc.Arbitrary<string> {
  const seg = (s: string) => fc.array(fc.constantFrom('plain', 'lower-hex', 'upper-hex'), { minLength: s.length, maxLength: s.length })
    .map((how) => [...s].map((c, i) => how[i] === 'plain' ? c : how[i] === 'lower-hex' ? UNRESERVED_HEX(c) : UNRESERVED_HEX(c).toUpperCase()).join(''));
  const joiner = fc.constantFrom('/', '//', '/./', '/zz/../', '/./././', '/%2e/', '/x/%2e%2E/', '/x/y/%2E%2E/../');
  return fc.tuple(fc.tuple(...segments.map(seg)), fc.array(joiner, { minLength: segments.length, maxLength: segments.length }), fc.constantFrom('', '/', '/.', '//'))
    .map(([segs, joins, tail]) => segs.map((s, i) => joins[i] + s).join('') + tail);
}

describe('fuzz: the canonical path', () => {
  it('is idempotent, and what it returns has no dot segment, empty segment, encoded unreserved character or refused tail', () => {
    fc.assert(fc.property(rawPath, (raw) => {
      const c = attempt(raw);
      if (c instanceof AppError) {
        expect(c.code).to.equal('VALIDATION_FAILED');
        return;
      }
      expect(canonicalizePath(c), `canonical of ${JSON.stringify(raw)}`).to.equal(c);
      const segments = c.split('/').slice(1);
      if (c !== '/') for (const s of segments) expect(s).to.not.be.oneOf(['', '.', '..']);
      expect(c).to.not.match(/%(2[dDeE]|3\d|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])/);
      expect(c).to.not.match(/[.\s]\/|[.\s]$/);
    }), fuzzParams(2000));
  });

  it('the shortcut for plain paths answers exactly what every step answers, refusals included', () => {
    const plainChar = fc.constantFrom('/', 'a', 'Z', '0', '-', '_', '~', '.', '..');
    const plainish = fc.array(plainChar, { maxLength: 24 }).map((parts) => '/' + parts.join(''));
    fc.assert(fc.property(fc.oneof(rawPath, plainish), (raw) => {
      const fast = attempt(raw);
      const slow = attempt(raw, canonicalizeStepByStep);
      if (fast instanceof AppError || slow instanceof AppError) expect(fast instanceof AppError && slow instanceof AppError && fast.message === slow.message, raw).to.equal(true);
      else expect(fast, raw).to.equal(slow);
    }), fuzzParams(5000));
  });

  it('gives every equivalent spelling of a path the canonical form of that path', () => {
    const targets = [['api', 'admin', 'users'], ['api', 'ai', 'threads'], ['api', 'billing', 'invoices'], ['api', 'mcp']];
    fc.assert(fc.property(fc.constantFrom(...targets).chain((t) => spelling(t).map((s) => [t, s] as const)), ([target, raw]) => {
      expect(attempt(raw), raw).to.equal('/' + target.join('/'));
    }), fuzzParams(1000));
  });

  describe('through the real gateway', function () {
    this.timeout(60_000);
    let echo: Echo;
    let gw: TestGateway;
    let keyed: Client;
    before(async () => {
      echo = await startEcho();
      gw = await startTestGateway({ config: { upstream: { url: echo.url }, defaultApiRateLimit: 100_000 } });
      const { client: session } = await signUp(gw.url);
      // A key without the ai permission: the policy refuses it /api/ai/threads and billing writes.
      keyed = new Client(gw.url).withKey((await session.post('/api/api-keys', { name: 'fuzz' })).body.key as string);
    });
    after(async () => {
      await gw?.stop();
      await echo?.close();
    });

    it('no spelling of a refused path reaches the upstream', async () => {
      let n = 0;
      const refused = fc.oneof(
        spelling(['api', 'ai', 'threads']).map((p) => ['GET', p] as const),
        spelling(['api', 'billing', 'invoices']).map((p) => ['POST', p] as const),
      );
      await fc.assert(fc.asyncProperty(refused, async ([method, raw]) => {
        const trace = `fuzz-${n++}`;
        const res = await keyed.request(method, raw, method === 'POST' ? {} : undefined, { [TRACE]: trace });
        expect(echo.received(trace), `${method} ${raw} reached the upstream`).to.deep.equal([]);
        expect(res.status, `${method} ${raw}`).to.be.oneOf([400, 403]);
      }), fuzzParams(60));
    });
  });
});
