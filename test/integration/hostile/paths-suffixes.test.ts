import { expect } from 'chai';
import { describeCaller } from '../matrix/support.ts';
import { rawKeyedRequests } from './support.ts';

// Upstreams that read `.json` as a response format (Rails, older Spring) or drop a trailing dot or
// space from a name (IIS) serve the route without it. So no spelling with such an ending may get
// past a refusal of the bare route: it is 400, or that route's own refusal.

describe('hostile paths: suffixed spellings of refused routes', () => {
  const send = rawKeyedRequests();

  describe('when a segment ends in "." or encoded whitespace, then it is 400 VALIDATION_FAILED and nothing is forwarded', () => {
    const cases: [method: string, path: string][] = [
      ['GET', '/api/billing/subscription/switch-preview.'],
      ['GET', '/api/billing/subscription/switch-preview..'],
      ['GET', '/api/billing/subscription/switch-preview%20'],
      ['GET', '/api/billing/subscription/switch-preview%2e'],
      ['GET', '/api/billing/subscription/switch-preview.%20'],
      ['GET', '/api/billing/subscription/switch-preview%C2%A0'],
      ['GET', '/api/billing/subscription/switch-preview%E3%80%80'],
      ['GET', '/api/billing/subscription/switch-preview%09'],
      ['GET', '/api/admin./api-keys'],
      ['GET', '/api/admin%20/api-keys'],
      ['POST', '/api/ai./chat'],
      ['POST', '/api/billing./checkout'],
    ];
    for (const [method, path] of cases) {
      it(`${describeCaller.key}: ${method} ${path}`, async () => {
        const { res, code, forwarded } = await send('key', method, path);
        expect(forwarded, 'a refused request must never reach the upstream').to.equal(0);
        expect(res.status, res.text).to.equal(400);
        expect(code).to.equal('VALIDATION_FAILED');
      });
    }
  });

  describe('when the last segment carries a suffix, then the refusal of the route without it applies', () => {
    const cases: [who: 'key' | 'ai', method: string, path: string, requiredPermission?: string][] = [
      ['key', 'GET', '/api/billing/subscription/pending.json'],
      ['key', 'GET', '/api/billing/subscription/pending.tar.json'],
      ['key', 'GET', '/api/billing/subscription/switch-preview.xml'],
      ['key', 'POST', '/api/billing.json'],
      ['key', 'POST', '/api/billing/checkout.json'],
      ['key', 'GET', '/api/admin/api-keys.json'],
      ['ai', 'PUT', '/api/ai/settings.json'],
      ['key', 'POST', '/api/ai/chat.json', 'ai'],
    ];
    for (const [who, method, path, requiredPermission] of cases) {
      it(`${describeCaller[who]}: ${method} ${path}`, async () => {
        const { res, code, forwarded } = await send(who, method, path);
        expect(forwarded, 'a refused request must never reach the upstream').to.equal(0);
        expect(res.status, res.text).to.equal(403);
        expect(code).to.equal('FORBIDDEN');
        expect(JSON.parse(res.body).requiredPermission).to.equal(requiredPermission);
      });
    }
  });

  describe('when the route without the suffix is allowed too, then the suffixed path is forwarded as sent', () => {
    for (const path of ['/api/projects/report.json', '/api/projects/v1.2.3', '/api/projects/a%20b', '/api/projects/.well-hidden']) {
      it(`${describeCaller.key}: GET ${path}`, async () => {
        const { res, forwarded } = await send('key', 'GET', path);
        expect(res.status, res.text).to.equal(200);
        expect(forwarded).to.equal(1);
      });
    }
  });
});
