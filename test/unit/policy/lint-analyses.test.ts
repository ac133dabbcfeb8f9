import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPolicyEngineFromRules } from '../../../src/policy/engine.ts';
import { deadActions, lineFindings, unreachableAllows } from '../../../src/policy/lint-analyses.ts';
import { parsePolicy } from '../../../src/policy/rules.ts';
import { parseScopes } from '../../../src/policy/scopes.ts';
import { shippedPolicies } from './helpers.ts';

// The lint's analyses as a library, on policy text in memory: no file, no CLI, as the console
// would call them.

const SCOPES = 'scopes:\n  billing:\n    label: Billing\n    actions: [read, write]\n  ai:\n    label: AI\n';

describe('the policy lint analyses, called directly', () => {
  let model: string;
  const catalog = parseScopes(SCOPES);
  const engineOf = async (lines: string[]) => createPolicyEngineFromRules(model, parsePolicy(lines.join('\n')).rules, { scopes: catalog });
  before(async () => {
    model = await readFile(join(shippedPolicies, 'model.conf'), 'utf8');
  });

  it('an allow whose every request a deny also matches is unreachable, and the finding names the deny', async () => {
    const engine = await engineOf([
      'p, key, *, .*, /api/**, allow, key.api',
      'p, key, *, .*, /api/billing/**, deny, key.billing',
      'p, key, *, ^POST$, /api/billing/checkout, allow, key.checkout',
    ]);
    expect(unreachableAllows(engine, catalog)).to.deep.equal([
      { line: 3, message: 'key.checkout: allow can never take effect; every request it matches is denied by line 2 (key.billing)' },
    ]);
  });

  it('an allow that some request reaches is no finding', async () => {
    const engine = await engineOf([
      'p, key, *, .*, /api/**, allow, key.api',
      'p, key, *, ^DELETE$, /api/billing/**, deny, key.billing-delete',
      'p, key, *, ^POST$, /api/billing/checkout, allow, key.checkout',
    ]);
    expect(unreachableAllows(engine, catalog)).to.deep.equal([]);
  });

  it('a scope action whose every asked-for request another line refuses opens nothing; one that opens a read does', async () => {
    const engine = await engineOf([
      'p, key, *, .*, /api/**, allow, key.api',
      'p, key, *, ^(POST|PUT|PATCH|DELETE)$, /api/billing/**, deny, key.billing-writes',
      'p, key, !perm:billing:read, ^(GET|HEAD)$, /api/billing/**, deny, key.billing-needs-read',
      'p, key, !perm:billing:write, ^(POST|PUT|PATCH|DELETE)$, /api/billing/**, deny, key.billing-needs-write',
    ]);
    const found = deadActions(engine, catalog);
    expect(found).to.have.length(1);
    expect(found[0]!.line).to.equal(4);
    expect(found[0]!.message).to.equal(
      'billing:write opens nothing: every request line 4 (key.billing-needs-write) asks it for is refused to keys holding it by line 2 (key.billing-writes)',
    );
  });

  it('with no scopes catalog there is no dead action to find', async () => {
    const engine = await engineOf(['p, key, !perm:billing:write, .*, /api/billing/**, deny, key.billing-needs-write']);
    expect(deadActions(engine, null)).to.deep.equal([]);
  });

  it('per line: an undeclared permission, a condition that never holds, a duplicate', () => {
    const { rules } = parsePolicy([
      'p, key, perm:billing:refund, .*, /api/x, allow, key.refund',
      'p, anonymous, perm:ai, .*, /api/y, allow, anon.ai',
      'p, key, *, .*, /api/z, allow, key.z',
      'p, key, *, .*, /api/z, allow, key.z-again',
    ].join('\n'));
    const found = lineFindings(rules, catalog, 'scopes.yaml');
    expect(found.map((f) => [f.line, f.message.split(':')[0]])).to.deep.equal([[1, 'key.refund'], [2, 'anon.ai'], [4, 'key.z-again']]);
    expect(found[0]!.message).to.include('unknown perm:billing:refund: a scope or action scopes.yaml does not declare');
    expect(found[1]!.message).to.include('can never hold for subject anonymous');
    expect(found[2]!.message).to.include('duplicate of line 3');
  });
});
