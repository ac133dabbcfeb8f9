import { expect } from 'chai';
import { describeCaller } from '../matrix/support.ts';
import { rawKeyedRequests } from './support.ts';

// An upstream that compares paths without regard to case may do it the Unicode way (Java's
// equalsIgnoreCase reads "ſ" as "s" and the Kelvin sign as "k"), or normalise with NFKC (fullwidth
// "ｐ" as "p"). A spelling the policy reads as some other path would reach a route its ASCII form
// is refused: so such a spelling is 400 and nothing is forwarded. Raw bytes: a
// client library might encode or normalise the very characters under test.

describe('hostile paths: Unicode spellings that fold onto a refused ASCII route', () => {
  const send = rawKeyedRequests();

  // Each: who, method, the refused ASCII path, and spellings of it that fold onto it.
  const cases: [who: 'key' | 'ai', method: string, ascii: string, spellings: [what: string, path: string][]][] = [
    ['key', 'GET', '/api/billing/subscription/pending', [
      ['ſ (U+017F, long s)', '/api/billing/%C5%BFubscription/pending'],
      ['ſ, lower-case hex', '/api/billing/%c5%bfubscription/pending'],
      ['fullwidth ｐ (U+FF50)', '/api/billing/subscription/%EF%BD%90ending'],
      ['fullwidth Ｐ (U+FF30)', '/api/billing/subscription/%EF%BC%B0ending'],
    ]],
    ['ai', 'POST', '/api/ai/keys/k1', [
      ['the Kelvin sign K (U+212A)', '/api/ai/%E2%84%AAeys/k1'],
      ['fullwidth ｋ (U+FF4B)', '/api/ai/%EF%BD%8Beys/k1'],
    ]],
    ['key', 'POST', '/api/push/subscriptions', [
      ['ſ (U+017F)', '/api/pu%C5%BFh/subscriptions'],
      ['fullwidth ｓ (U+FF53)', '/api/pu%EF%BD%93h/subscriptions'],
    ]],
    ['key', 'GET', '/api/admin/api-keys', [
      ['fullwidth ａ (U+FF41)', '/api/%EF%BD%81dmin/api-keys'],
      ['the Kelvin sign', '/api/admin/api-%E2%84%AAeys'],
    ]],
  ];

  for (const [who, method, ascii, spellings] of cases) {
    describe(`${describeCaller[who]}: ${method} ${ascii}`, () => {
      it('is refused in ASCII (the premise)', async () => {
        const { res, forwarded } = await send(who, method, ascii);
        expect(res.status, res.text).to.equal(403);
        expect(forwarded).to.equal(0);
      });
      for (const [what, path] of spellings) {
        it(`spelled with ${what} (${path}) is 400 VALIDATION_FAILED and never forwarded`, async () => {
          const { res, code, forwarded } = await send(who, method, path);
          expect(forwarded, 'a spelling of a refused route must never reach the upstream').to.equal(0);
          expect(res.status, res.text).to.equal(400);
          expect(code).to.equal('VALIDATION_FAILED');
        });
      }
    });
  }

  describe('when the path carries the same characters as raw UTF-8 bytes instead of percent-encoded', () => {
    for (const path of ['/api/billing/\u017Fubscription/pending', '/api/ai/\u212Aeys/k1', '/api/billing/subscription/\uFF50ending']) {
      it(`${path} is 400 and never forwarded`, async () => {
        const { res, forwarded } = await send(path.includes('/ai/') ? 'ai' : 'key', path.includes('/ai/') ? 'POST' : 'GET', path);
        expect(forwarded).to.equal(0);
        expect(res.status, res.text).to.equal(400);
      });
    }
  });

  describe('when a path is percent-encoded bytes that are not UTF-8, an overlong "s" say', () => {
    it('then it is 400: a lenient decoder would read it as ASCII', async () => {
      const { res, forwarded } = await send('key', 'GET', '/api/billing/%C1%B3ubscription/pending');
      expect(forwarded).to.equal(0);
      expect(res.status, res.text).to.equal(400);
    });
  });

  describe('when non-ASCII letters fold onto nothing in ASCII (é, ü, 中)', () => {
    for (const path of ['/api/projects/caf%C3%A9', '/api/projects/%C3%BCber', '/api/projects/%E4%B8%AD']) {
      it(`${describeCaller.key}: GET ${path} is forwarded as sent`, async () => {
        const { res, forwarded } = await send('key', 'GET', path);
        expect(res.status, res.text).to.equal(200);
        expect(forwarded).to.equal(1);
      });
    }
  });
});
