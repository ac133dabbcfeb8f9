import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, withPolicyCopy } from './helpers.ts';

// `keygate policy scope add` writes a scope, its lines and its cases in one command,
// and refuses (writing nothing) where the scope would be a mistake.

const FILES = ['policies/scopes.yaml', 'policies/variant-a.csv', 'policies/tests/variant-a.yaml'];
const snapshot = (dir: string) => Promise.all(FILES.map((f) => readFile(join(dir, f), 'utf8')));

describe('keygate policy scope add', function () {
  this.timeout(60_000);

  it('declares a scope for a new router, writes the line refusing keys without it and the cases proving it, then lint and the suites pass', async () => {
    await withPolicyCopy(async (dir) => {
      const r = await runCli(['scope', 'add', 'reports', '--route', '* /api/reports/**', '--route', 'GET /api/exports/:id', '--label', 'Reports', '--description', 'The reporting API.'], dir);
      expect(r.err).to.equal('');
      expect(r.code).to.equal(0);
      const scopes = await readFile(join(dir, 'policies/scopes.yaml'), 'utf8');
      expect(scopes).to.match(/\n  reports:\n    label: Reports\n    description: The reporting API\.\n$/);
      const csv = await readFile(join(dir, 'policies/variant-a.csv'), 'utf8');
      expect(csv).to.include('p, key, !perm:reports, .*, /api/reports/**, deny, key.reports-needs-reports\n');
      expect(csv).to.include('p, key, !perm:reports, ^GET$, /api/exports/:id, deny, key.reports-needs-reports-2\n');
      const suite = await readFile(join(dir, 'policies/tests/scope-reports.yaml'), 'utf8');
      expect(suite).to.include('- { subject: { kind: key, permissions: [reports] }, method: GET, path: /api/reports, expect: allow }');
      expect(suite).to.include('- { subject: key, method: GET, path: /api/exports/x-1, expect: deny, rule: key.reports-needs-reports-2 }');
      expect(r.out).to.include('policies/variant-a.csv: added\n  p, key, !perm:reports');
      expect(r.out).to.match(/^0 findings in 1 file$/m);
      expect(r.out).to.match(/^\d+ passed, 0 failed$/m);
      // A key with the scope reaches the router; one without is refused by the new line.
      const allowed = await runCli(['explain', '--policy', 'policies/variant-a.csv', '--subject', 'key', '--permissions', 'reports', '--method', 'POST', '--path', '/api/reports'], dir);
      expect(allowed.out).to.include('decision: allow');
    });
  });

  it('with several actions, each route names the action it needs', async () => {
    await withPolicyCopy(async (dir) => {
      const r = await runCli(['scope', 'add', 'reports', '--actions', 'read,write', '--route', 'read reads /api/reports/**', '--route', 'write writes /api/reports/**'], dir);
      expect(r.code, r.out + r.err).to.equal(0);
      const csv = await readFile(join(dir, 'policies/variant-a.csv'), 'utf8');
      expect(csv).to.include('p, key, !perm:reports:read, ^(GET|HEAD|OPTIONS)$, /api/reports/**, deny, key.reports-needs-read\n');
      expect(csv).to.include('p, key, !perm:reports:write, ^(?!(GET|HEAD|OPTIONS)$).+$, /api/reports/**, deny, key.reports-needs-write\n');
      expect(await readFile(join(dir, 'policies/scopes.yaml'), 'utf8')).to.include('    actions: [ read, write ]\n');
      const suite = await readFile(join(dir, 'policies/tests/scope-reports.yaml'), 'utf8');
      expect(suite).to.include('- { subject: [key, { kind: key, permissions: [reports:read] }], method: POST, path: /api/reports, expect: deny, rule: key.reports-needs-write }');
    });
  });

  it('writes nothing and exits 1 when the name is declared already', async () => {
    await withPolicyCopy(async (dir) => {
      const before = await snapshot(dir);
      const r = await runCli(['scope', 'add', 'ai', '--route', '* /api/reports/**'], dir);
      expect(r.code).to.equal(1);
      expect(r.err).to.match(/^keygate: scope ai is already declared \(policies\/scopes\.yaml:\d+\); nothing written$/m);
      expect(await snapshot(dir)).to.deep.equal(before);
      expect(existsSync(join(dir, 'policies/tests/scope-ai.yaml'))).to.equal(false);
    });
  });

  it('writes nothing and exits 1 when a route is already refused to every key, naming the line (the shipped billing writes)', async () => {
    await withPolicyCopy(async (dir) => {
      const before = await snapshot(dir);
      const r = await runCli(['scope', 'add', 'billing', '--actions', 'read,write', '--route', 'read reads /api/billing/**', '--route', 'write writes /api/billing/**'], dir);
      expect(r.code).to.equal(1);
      expect(r.err).to.match(/^keygate: --route "write writes \/api\/billing\/\*\*" is already refused to every key by policies\/variant-a\.csv:\d+ \(key\.billing-writes\): a scope there would open nothing; nothing written$/m);
      expect(await snapshot(dir)).to.deep.equal(before);
      expect(existsSync(join(dir, 'policies/tests/scope-billing.yaml'))).to.equal(false);
    });
  });

  it('refuses a route it cannot read, with the reason', async () => {
    await withPolicyCopy(async (dir) => {
      const r = await runCli(['scope', 'add', 'reports', '--route', '/api/reports/**'], dir);
      expect(r.code).to.equal(1);
      expect(r.err).to.match(/--route "\/api\/reports\/\*\*": write "METHODS PATH"/);
      const slow = await runCli(['scope', 'add', 'reports', '--route', '* ^/api/reports/(a+)+b$'], dir);
      expect(slow.err).to.match(/not linear-time/);
    });
  });
});
