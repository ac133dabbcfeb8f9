import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { createPolicyEngine } from '../../../src/policy/engine.ts';
import { refusalOf } from '../../../src/policy/refusal.ts';
import { parseScopes, permissionNames, resolveGrant, ScopesError } from '../../../src/policy/scopes.ts';
import { shippedPolicies } from './helpers.ts';

const MODEL = readFileSync(join(shippedPolicies, 'model.conf'), 'utf8');
const VARIANT_A = readFileSync(join(shippedPolicies, 'variant-a.csv'), 'utf8');
const on = { ai: true, mcp: true };

describe('scopes.yaml', () => {
  describe('when the file is valid', () => {
    it('keeps file order, defaults actions to [access] and requires to null', () => {
      const c = parseScopes('scopes:\n  zeta:\n    label: Z\n  alpha:\n    label: A\n    actions: [read, write]\n    requires: ai\n');
      expect(c.list.map((s) => [s.name, s.actions, s.requires])).to.deep.equal([['zeta', ['access'], null], ['alpha', ['read', 'write'], 'ai']]);
    });
  });

  describe('when a field is wrong, then the error names the file, line and field', () => {
    const cases: { what: string; text: string; match: RegExp }[] = [
      { what: 'a bad scope name', text: 'scopes:\n  Reports:\n    label: R\n', match: /^s\.yaml:2: scopes\.Reports: a scope name must be lower-case/ },
      { what: 'a missing label', text: 'scopes:\n  reports:\n    description: d\n', match: /^s\.yaml:2: scopes\.reports\.label: / },
      { what: 'a bad action', text: 'scopes:\n  reports:\n    label: R\n    actions: [read, Write]\n', match: /^s\.yaml:4: scopes\.reports\.actions\.1: lower-case/ },
      { what: 'an empty action list', text: 'scopes:\n  reports:\n    label: R\n    actions: []\n', match: /scopes\.reports\.actions: needs at least one action/ },
      { what: 'an unknown requires', text: 'scopes:\n  reports:\n    label: R\n    requires: billing\n', match: /^s\.yaml:4: scopes\.reports\.requires: / },
      { what: 'an unknown field', text: 'scopes:\n  reports:\n    label: R\n    badge: X\n', match: /^s\.yaml:4: scopes\.reports\.badge: unknown field/ },
      { what: 'a duplicated action', text: 'scopes:\n  reports:\n    label: R\n    actions: [read, read]\n', match: /lists an action twice/ },
      { what: 'broken YAML', text: 'scopes:\n  reports: [\n', match: /^s\.yaml:\d+: not valid YAML/ },
    ];
    for (const c of cases) it(c.what, () => expect(() => parseScopes(c.text, 's.yaml')).to.throw(ScopesError, c.match));

    it('more than 64 scopes', () => {
      const text = `scopes:\n${Array.from({ length: 65 }, (_, i) => `  s${i}: { label: S${i} }`).join('\n')}\n`;
      expect(() => parseScopes(text, 's.yaml')).to.throw(ScopesError, /scopes: at most 64 scopes/);
    });
  });
});

describe('a create body against the declared scopes', () => {
  const catalog = parseScopes('scopes:\n  ai: { label: Allow AI access, requires: ai }\n  mcp: { label: Allow MCP access, requires: mcpServer }\n  reports: { label: Reports, actions: [read, write] }\n');

  it('the ai and mcp shorthands are { ai: [access] } and { mcp: [access] }, merged with the map, actions in file order', () => {
    expect(resolveGrant(catalog, on, { ai: true, mcp: false, permissions: { reports: ['write', 'read', 'write'] } })).to.deep.equal({ ok: true, permissions: { reports: ['read', 'write'], ai: ['access'] } });
  });

  it('names every mistake by its field before saying a feature is off', () => {
    const r = resolveGrant(catalog, { ai: false, mcp: true }, { ai: true, permissions: { nope: ['x'], reports: [] } });
    expect(r.ok).to.equal(false);
    expect('errors' in r && r.errors.map((e) => e.path)).to.deep.equal(['permissions.nope', 'permissions.reports']);
  });

  it('a scope whose feature is off is refused as such', () => {
    const r = resolveGrant(catalog, { ai: true, mcp: false }, { permissions: { mcp: ['access'] } });
    expect('featureOff' in r && r.featureOff.name).to.equal('mcp');
  });

  it('held permissions are spelled S for access-only scopes, S:A otherwise, and undeclared ones are dropped', () => {
    expect(permissionNames(catalog, { reports: ['write', 'read'], mcp: ['access'], gone: ['access'], ai: ['read'] })).to.deep.equal(['mcp', 'reports:read', 'reports:write']);
  });
});

describe('requiredPermission with 64 declared scopes', () => {
  // 64 scopes of two actions each: trying every subset would be 2^128 evaluations.
  const names = Array.from({ length: 64 }, (_, i) => `s${String(i).padStart(2, '0')}`);
  const scopesText = `scopes:\n${names.map((n) => `  ${n}: { label: Scope ${n}, actions: [read, write] }`).join('\n')}\n`;
  const lines = names.map((n) => `p, key, !perm:${n}:write, ^(?!(GET|HEAD|OPTIONS)$).+$, /api/${n}/**, deny, key.${n}-writes`).join('\n');
  const both = `p, key, !perm:s10:read, .*, /api/both/**, deny, key.both-a\np, key, !perm:s20:write, .*, /api/both/**, deny, key.both-b`;

  it('a refusal names the one scope and action the matching line asks for, and the 403 words it from the label', async () => {
    const engine = await createPolicyEngine(MODEL, `${VARIANT_A}\n${lines}\n${both}\n`, { scopes: parseScopes(scopesText) });
    const d = engine.decide({ kind: 'key', permissions: ['s41:read', 's07:write'], role: 'user' }, 'POST', '/api/s42/x');
    expect(d).to.include({ allowed: false, ruleId: 'key.s42-writes', requiredPermission: 's42:write' });
    expect(engine.decide({ kind: 'key', permissions: ['s42:write'], role: 'user' }, 'POST', '/api/s42/x').allowed).to.equal(true);
    expect(engine.decide({ kind: 'key', permissions: [], role: 'user' }, 'GET', '/api/both').requiredPermission).to.equal('s10:read,s20:write');
    const refusal = refusalOf(engine, { kind: 'key', user: { role: 'user' }, key: { permissions: { s41: ['read'] } } }, 'DELETE', '/api/s63/y');
    expect(refusal).to.deep.include({ code: 'FORBIDDEN', requiredPermission: 's63:write' });
    expect(refusal?.detail).to.include('Scope s63 (write)');
  });

  it('a permission no line names is never offered: a route closed to every key stays "never for keys"', async () => {
    const engine = await createPolicyEngine(MODEL, `${VARIANT_A}\n${lines}\n`, { scopes: parseScopes(scopesText) });
    const d = engine.decide({ kind: 'key', permissions: [], role: 'user' }, 'POST', '/api/admin/users/u-1/ban');
    expect(d).to.include({ allowed: false, requiredPermission: null, neverForKeys: true });
  });
});
