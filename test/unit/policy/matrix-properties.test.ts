import { expect } from 'chai';
import fc from 'fast-check';
import { join } from 'node:path';
import { loadPolicyEngine, type PolicyEngine, type PolicySubject } from '../../../src/policy/engine.ts';
import { shippedPolicies } from './helpers.ts';

// Canonical segments only: the gateway normalises before it asks.
const segment = fc.stringMatching(/^[a-z0-9_~:@%-][a-z0-9._~:@%-]{0,11}$/).filter((s) => s !== '.' && s !== '..');
const tail = fc.array(segment, { maxLength: 4 }).map((s) => s.map((x) => `/${x}`).join(''));
const method = fc.constantFrom('GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND');
const write = fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND');
const anyKey = fc.record({
  kind: fc.constant('key' as const),
  permissions: fc.subarray(['ai', 'mcp']),
  role: fc.constantFrom('user' as const, 'admin' as const),
});
const anonymous: PolicySubject = { kind: 'anonymous', permissions: [], role: null };

const PUBLIC = /^\/(|healthz|readyz|metrics|sign-in|settings\/developers|v1\/content(\/.*)?|\.well-known(\/.*)?|assets(\/.*)?)$/;

describe('the access matrix, for any canonical request', () => {
  const engines: Record<'A' | 'B', PolicyEngine | null> = { A: null, B: null };
  before(async () => {
    for (const v of ['A', 'B'] as const) {
      engines[v] = await loadPolicyEngine(join(shippedPolicies, 'model.conf'), join(shippedPolicies, `variant-${v.toLowerCase()}.csv`));
    }
  });
  const engine = (v: 'A' | 'B'): PolicyEngine => {
    const e = engines[v];
    if (!e) throw new Error('engine not loaded');
    return e;
  };

  for (const v of ['A', 'B'] as const) {
    it(`Variant ${v}: no key reaches the admin API, whatever its permissions or its owner's role`, () => {
      fc.assert(fc.property(anyKey, method, tail, (k, m, t) => !engine(v).decide(k, m, `/api/admin${t}`).allowed));
    });

    it(`Variant ${v}: an anonymous caller reaches only the public routes, sign-up and sign-in`, () => {
      const prefixes = fc.constantFrom('', '/api', '/api/auth', '/api/auth/sign-in', '/v1', '/assets', '/.well-known');
      fc.assert(
        fc.property(method, prefixes, tail, (m, prefix, t) => {
          const path = prefix + t || '/';
          const expected = (PUBLIC.test(path) && (m === 'GET' || m === 'HEAD')) || (m === 'POST' && /^\/api\/auth\/sign-(in|up)\/email$/.test(path));
          expect(engine(v).decide(anonymous, m, path).allowed, `${m} ${path}`).to.equal(expected);
        }),
      );
    });
  }

  it('Variant A: no key writes billing, push, AI keys, integrations, threads or API keys', () => {
    const roots = fc.constantFrom('/api/billing', '/api/push', '/api/ai/keys', '/api/ai/integrations', '/api/ai/threads', '/api/api-keys');
    fc.assert(fc.property(anyKey, write, roots, tail, (k, m, root, t) => engine('A').decide(k, m, root + t).neverForKeys));
  });

  it('Variant A: a key without ai is refused all of /api/ai, and the refusal names ai when ai would do', () => {
    const noAi = fc.record({ kind: fc.constant('key' as const), permissions: fc.subarray(['mcp']), role: fc.constant('user' as const) });
    fc.assert(
      fc.property(noAi, method, tail, (k, m, t) => {
        const d = engine('A').decide(k, m, `/api/ai${t}`);
        const withAi = engine('A').decide({ ...k, permissions: [...k.permissions, 'ai'] }, m, `/api/ai${t}`);
        return !d.allowed && (d.requiredPermission === 'ai') === withAi.allowed;
      }),
    );
  });
});
