import { expect } from 'chai';
import fc from 'fast-check';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compiledDecisions } from '../../src/policy/decisions.ts';
import { declaredPermissions } from '../../src/policy/decision-diff.ts';
import { createPolicyEngine, createPolicyEngineFromRules, type PolicyEngine } from '../../src/policy/engine.ts';
import type { PolicyRule } from '../../src/policy/rules.ts';
import { parseScopes, type ScopeCatalog } from '../../src/policy/scopes.ts';
import { generatedPolicyText, generatedScopesText } from '../bench/generated-policy.ts';
import { shippedPolicies } from '../unit/policy/helpers.ts';
import { disagreement, requests, type Answers, type Ask } from './policy-requests.ts';
import { fuzzParams } from './support.ts';

// The request path decides from a compiled form of the policy lines; node-casbin's enforcer over
// the same lines is what they mean. Every field of every drawn decision, and the lines explain
// lists, must be the enforcer's: on the shipped policies, on a generated policy of thousands of
// lines, and on small policies drawn line by line from every pattern form.

const agrees = (compiled: Answers, reference: Answers, withMatches = true) => (a: Ask) => {
  const wrong = disagreement(compiled, reference, a, withMatches);
  if (wrong) throw new Error(wrong);
};

describe('the compiled policy answers as the enforcer does', function () {
  this.timeout(60_000);
  let model: string;
  let shipped: ScopeCatalog;
  before(async () => {
    model = await readFile(join(shippedPolicies, 'model.conf'), 'utf8');
    shipped = parseScopes(await readFile(join(shippedPolicies, 'scopes.yaml'), 'utf8'));
  });

  for (const variant of ['a', 'b']) {
    for (const withScopes of [true, false]) {
      it(`on the shipped Variant ${variant.toUpperCase()}, ${withScopes ? 'with' : 'without'} the shipped scopes`, async () => {
        const e = await createPolicyEngine(model, await readFile(join(shippedPolicies, `variant-${variant}.csv`), 'utf8'), withScopes ? { scopes: shipped } : {});
        const reference = await e.reference();
        fc.assert(fc.property(requests(e.rules, ['ai', 'mcp', 'ai:access']), agrees(e, reference)), fuzzParams(250));
      });
    }
  }

  it('on Variant A with 2,000 generated lines over 64 scopes of 16 actions', async () => {
    const scopes = parseScopes(generatedScopesText());
    const e = await createPolicyEngine(model, generatedPolicyText(2_000), { scopes });
    const perms = declaredPermissions(scopes).filter((_, i) => i % 37 === 1).concat(['s00', 's01:a00', 's05:a00', 's07']);
    // The enforcer walks all 2,070 lines per question (milliseconds each): few runs, each aimed at a line.
    const reference = await e.reference();
    fc.assert(fc.property(requests(e.rules, perms), agrees(e, reference)), fuzzParams(25));
  });

  describe('on small policies drawn line by line', () => {
    const scopesText = 'scopes:\n  ai: { label: AI }\n  rep: { label: Reports, actions: [read, write] }\n';
    // `:key-id` is no parameter name, so a literal segment: the index must not read it as one (`:id`).
    const seg = fc.constantFrom('api', 'a', 'b', 'x', '*', ':id', ':key-id');
    const glob = fc.tuple(fc.array(seg, { minLength: 0, maxLength: 3 }), fc.boolean()).map(([s, rest]) => {
      const body = [...s, ...(rest ? ['**'] : [])];
      return body.length ? `/${body.join('/')}` : '/';
    });
    const path = fc.oneof(
      glob,
      fc.tuple(glob, fc.array(glob.filter((g) => !g.includes('*')), { minLength: 1, maxLength: 2 })).map(([b, ex]) => `${b}${' except '}${ex.join(' ')}`),
      fc.constantFrom('^/api/a/[0-9]+$', '^/api/(a|b)/x$', '^/(api|x)/.+$', '^.*/x$', '^/api/a/x[a-z]*$', '^/$', '^/api/b$',
        '^/api/a$|^/api/b/.+$', '^(/api/x|/a)$', '^/api/a/x$|^/b$', '^/api/:key-id/[a-z]+$', '^/api/a\\/x$', '^/api/x?$'),
    );
    const term = fc.tuple(fc.boolean(), fc.constantFrom('perm:ai', 'perm:rep', 'perm:rep:read', 'perm:rep:write', 'perm:gone', 'role:admin', 'via:mcp', 'via:oauth'));
    const condition = fc.oneof(fc.constant('*'), fc.array(term, { minLength: 1, maxLength: 2 }).map((ts) => ts.map(([neg, t]) => `${neg ? '!' : ''}${t}`).join(' ')));
    const line = fc.record({
      subject: fc.constantFrom('*', 'session', 'key', 'anonymous'),
      condition,
      method: fc.constantFrom('.*', '^GET$', '^(GET|HEAD)$', '^(?!(GET|HEAD|OPTIONS)$).+$', '^POST$', '^(PUT|PATCH)$'),
      path,
      effect: fc.constantFrom('allow' as const, 'deny' as const),
    });
    const policy = fc.array(line, { minLength: 1, maxLength: 24 }).map((ls) => ls.map((l, i): PolicyRule => ({ ...l, line: i + 1, id: `l${i}` })));

    it('every field, and the lines that matched', async () => {
      const scopes = parseScopes(scopesText);
      await fc.assert(
        fc.asyncProperty(policy, fc.boolean(), fc.array(fc.nat(), { minLength: 12, maxLength: 12 }), async (rules, withScopes, seeds) => {
          const e = await createPolicyEngineFromRules(model, rules, withScopes ? { scopes } : {});
          const draw = requests(rules, ['ai', 'rep', 'rep:read', 'rep:write']);
          const reference = await e.reference();
          for (const s of seeds) agrees(e, reference)(fc.sample(draw, { numRuns: 1, seed: s })[0]!);
        }),
        fuzzParams(80),
      );
    });
  });

  describe('is checked honestly: a wrong index fails the comparison of decisions alone', () => {
    let e: PolicyEngine;
    let reference: Answers;
    before(async () => {
      e = await createPolicyEngine(model, await readFile(join(shippedPolicies, 'variant-a.csv'), 'utf8'), { scopes: shipped });
      reference = await e.reference();
    });
    const failsWith = (rules: readonly PolicyRule[]) => {
      const wrong = compiledDecisions(rules, shipped);
      const out = fc.check(fc.property(requests(e.rules, ['ai', 'mcp']), agrees(wrong, reference, false)), { numRuns: 3_000, seed: 7 });
      return out.failed ? String(out.counterexample?.[0] && JSON.stringify(out.counterexample[0])) : null;
    };

    it('when one line is dropped from it', () => {
      for (const id of ['key.ai-needs-ai', 'public.metrics', 'anon.needs-caller']) {
        expect(failsWith(e.rules.filter((r) => r.id !== id)), id).to.be.a('string');
      }
    });

    it('when two lines change places', () => {
      const swapped = (a: string, b: string) => {
        const rules = [...e.rules];
        const i = rules.findIndex((r) => r.id === a);
        const j = rules.findIndex((r) => r.id === b);
        [rules[i], rules[j]] = [rules[j]!, rules[i]!];
        return rules;
      };
      // Two denies that both refuse a key's write to /api/billing/subscription/pending: the first decides.
      expect(failsWith(swapped('key.billing-writes', 'key.billing-pending'))).to.be.a('string');
      // Two allows that both open GET /api/openapi.json to a session: the last decides.
      expect(failsWith(swapped('public.openapi', 'session.api'))).to.be.a('string');
      // The controls: lines that never match one request together, and the lines as they are.
      expect(failsWith(swapped('public.oauth', 'key.api'))).to.equal(null);
      expect(failsWith(e.rules)).to.equal(null);
    });
  });
});
