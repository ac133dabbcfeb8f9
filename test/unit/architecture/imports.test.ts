import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect } from 'chai';
import { cycles, importsOf, readGraph, ruleViolations, RULES, type ImportGraph } from './import-rules.ts';

// STYLE.md "The house": arrows point down only. This reads the imports of src/ and names the rule
// any of them breaks.

const root = resolve(import.meta.dirname, '../../..');

describe('the house holds: imports of src/', () => {
  const graph = readGraph(root);

  it('reads a graph of the whole tree (the checks below would pass vacuously on an empty one)', () => {
    expect(graph.size).to.be.greaterThan(50);
    expect(graph.get('src/app.ts')).to.include('src/http/policy/middleware.ts');
    expect(graph.get('src/http/screen.ts')).to.include('koa');
  });

  it('no file breaks a layering rule', () => {
    expect(ruleViolations(graph)).to.deep.equal([]);
  });

  it('no import cycle', () => {
    expect(cycles(graph)).to.deep.equal([]);
  });

  it('src/errors.ts is a leaf that every folder may use: it imports types only', () => {
    const source = readFileSync(resolve(root, 'src/errors.ts'), 'utf8');
    const imports = source.split('\n').filter((l) => /^\s*(import|export)\b.*\bfrom\s/.test(l));
    expect(imports.filter((l) => !/^\s*import type\s/.test(l))).to.deep.equal([]);
  });
});

describe('the import checker itself', () => {
  it('finds static, re-exported, side-effect, type-only and dynamic imports', () => {
    const src = [
      "import type { A } from './a.ts';",
      "import { B,\n  C } from '../b.ts';",
      "export { D } from './d.ts';",
      "export * from './e.ts';",
      "import './f.ts';",
      "const g = await import('./g.ts');",
      "import Koa from 'koa';",
      "const s = 'not an import from \"./h.ts\"';",
    ].join('\n');
    expect(importsOf(src)).to.have.members(['./a.ts', '../b.ts', './d.ts', './e.ts', './f.ts', './g.ts', 'koa']);
  });

  // Each rule fires on one import it exists to stop, and its name is in the message.
  const breaking: [string, string][] = [
    ['src/store/users.ts', 'src/services/accounts.ts'],
    ['src/services/quota.ts', 'koa'],
    ['src/policy/engine.ts', 'src/store/db.ts'],
    ['src/http/routes/admin.ts', 'src/store/audit.ts'],
    ['src/cli/main.ts', 'src/http/problem.ts'],
    ['src/oauth/registration.ts', 'src/http/state.ts'],
    ['src/web/routes.ts', 'src/main.ts'],
    ['src/cli/policy/apply.ts', 'src/services/policy/versions.ts'],
    ['src/services/keys/service.ts', 'src/store/casbin.ts'],
    ['src/config.ts', 'src/store/redis.ts'],
    ['src/http/openapi.ts', 'src/mcp/routes.ts'],
  ];
  RULES.forEach((rule, i) => {
    it(`names "${rule.name}" when it is broken`, () => {
      const [from, to] = breaking[i]!;
      const found = ruleViolations(new Map([[from, [to]]]));
      expect(found.some((v) => v.includes(`rule "${rule.name}"`) && v.includes(`${from} imports ${to}`)), found.join('\n')).to.equal(true);
    });
  });

  it('allows what the house allows: http -> services -> store, anything -> policy', () => {
    const ok: ImportGraph = new Map([
      ['src/http/routes/admin.ts', ['src/services/audit.ts', 'src/policy/engine.ts', '@koa/router']],
      ['src/services/audit.ts', ['src/store/audit.ts', 'src/policy/rules.ts']],
      ['src/store/casbin.ts', ['src/policy/rules.ts', 'pg']],
      ['src/cli/main.ts', ['src/services/policy/index.ts', 'src/policy/routes.ts']],
      ['src/services/policy/shadow.ts', ['src/services/policy/versions.ts', 'src/store/casbin.ts', 'src/policy/bundle.ts']],
      ['src/oauth/provider.ts', ['src/store/oauth.ts', 'src/services/oauth-grants.ts', 'oidc-provider']],
      ['src/config.ts', ['zod', 'src/errors.ts', 'src/policy/scopes.ts']],
      ['src/store/redis.ts', ['src/config.ts', 'ioredis']],
      ['src/http/routes/oauth.ts', ['src/oauth/provider.ts', 'src/services/oauth-grants.ts']],
      ['src/web/consent.ts', ['src/http/routes/oauth.ts', 'src/web/layout.ts']],
      ['src/mcp/routes.ts', ['src/http/mcp-operations.ts', 'src/http/operation.ts']],
    ]);
    expect(ruleViolations(ok)).to.deep.equal([]);
  });

  it('names each cycle once, type-only imports included', () => {
    const g: ImportGraph = new Map([
      ['src/cli/main.ts', ['src/cli/accounts.ts']],
      ['src/cli/accounts.ts', ['src/cli/main.ts']],
      ['src/a.ts', ['src/b.ts']],
      ['src/b.ts', ['src/c.ts']],
      ['src/c.ts', ['src/a.ts', 'koa']],
    ]);
    expect(cycles(g)).to.have.members([
      'rule "no import cycles": src/cli/accounts.ts -> src/cli/main.ts -> src/cli/accounts.ts',
      'rule "no import cycles": src/a.ts -> src/b.ts -> src/c.ts -> src/a.ts',
    ]);
  });
});
