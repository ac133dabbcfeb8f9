import { appendFile, cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { runCli, summary, withPolicyCopy } from './helpers.ts';

// Lint, explain, test suites and diff speak the scopes of scopes.yaml, so an operator's
// new scope is checked like the shipped ones with no code change.

const REPORTS = '  reports:\n    label: Reports\n    description: The reporting API.\n    actions: [read, write]\n';
const WRITES_LINE = 'p, key, !perm:reports:write, ^(?!(GET|HEAD|OPTIONS)$).+$, /api/reports/**, deny, key.reports-writes\n';

async function withReports<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  return withPolicyCopy(async (dir) => {
    await appendFile(join(dir, 'policies/scopes.yaml'), REPORTS);
    await appendFile(join(dir, 'policies/variant-a.csv'), WRITES_LINE);
    return fn(dir);
  });
}

describe('keygate policy lint: scopes', () => {
  describe('when a line names a scope or action the scopes file does not declare', () => {
    it('then it is an error with the file and line, and the exit code is 1', async () => {
      await withReports(async (dir) => {
        await appendFile(join(dir, 'policies/variant-a.csv'), 'p, key, !perm:reports:delete, ^DELETE$, /api/reports/**, deny, key.reports-delete\np, key, !perm:billing, .*, /api/billing/**, deny, key.billing-scope\n');
        const lines = (await readFile(join(dir, 'policies/variant-a.csv'), 'utf8')).trimEnd().split('\n').length;
        const r = await runCli(['lint', 'policies/variant-a.csv'], dir);
        expect(r.code).to.equal(1);
        expect(r.out).to.include(`policies/variant-a.csv:${lines - 1}: key.reports-delete: unknown perm:reports:delete: a scope or action policies/scopes.yaml does not declare`);
        expect(r.out).to.include(`policies/variant-a.csv:${lines}: key.billing-scope: unknown perm:billing`);
      });
    });
  });

  describe('when a declared scope is named by no line', () => {
    it('then it is a warning with the scopes file and line, and the exit code is 0', async () => {
      await withPolicyCopy(async (dir) => {
        await appendFile(join(dir, 'policies/scopes.yaml'), REPORTS);
        const r = await runCli(['lint'], dir);
        expect(r.out).to.include('policies/scopes.yaml:14: warning: scope reports is declared but no policy line names it');
        expect(r.out).to.match(/^0 findings, 1 warning in 2 files$/m);
        expect(r.code).to.equal(0);
      });
    });
  });

  describe('when the scopes file is invalid', () => {
    it('then lint fails naming its field', async () => {
      await withPolicyCopy(async (dir) => {
        await appendFile(join(dir, 'policies/scopes.yaml'), '  reports:\n    label: Reports\n    actions: [Read]\n');
        const r = await runCli(['lint'], dir);
        expect(r.code).to.equal(1);
        expect(r.out).to.include('policies/scopes.yaml:16: scopes.reports.actions.0: lower-case');
      });
    });
  });

  it('the shipped files lint clean', async () => {
    const r = await runCli(['lint']);
    expect(r.out).to.match(/^0 findings in 2 files$/m);
    expect(r.code).to.equal(0);
  });
});

describe('keygate policy explain: scopes', () => {
  it('--permissions reports:read,ai: a write is refused by key.reports-writes and reports:write would allow it', async () => {
    await withReports(async (dir) => {
      const r = await runCli(['explain', '--variant', 'A', '--subject', 'key', '--permissions', 'reports:read,ai', '--method', 'POST', '--path', '/api/reports/r-1'], dir);
      expect(r.code, r.err).to.equal(0);
      expect(r.out).to.include('key[ai,reports:read] POST /api/reports/r-1');
      expect(r.out).to.include('decision: deny');
      expect(r.out).to.match(/decided by: policies\/variant-a\.csv:\d+ {2}p, key, !perm:reports:write/);
      expect(r.out).to.include('a key with the "reports:write" permission would be allowed');
    });
  });

  it('an undeclared permission is refused with the declared ones listed', async () => {
    await withReports(async (dir) => {
      const r = await runCli(['explain', '--variant', 'A', '--subject', 'key', '--permissions', 'reports:delete', '--method', 'GET', '--path', '/api/reports'], dir);
      expect(r.code).to.equal(1);
      expect(r.err).to.include('--permissions: reports:delete is not declared in the scopes file (declared: ai, mcp, reports:read, reports:write)');
    });
  });
});

describe('keygate policy test: scopes', () => {
  it('a suite using the new permission passes, and fails when the deny line is removed', async () => {
    await withReports(async (dir) => {
      const suite = [
        'variant: A',
        'cases:',
        '  - { subject: { kind: key, permissions: [reports:read] }, method: [POST, DELETE], path: /api/reports/r-1, expect: deny, rule: key.reports-writes }',
        '  - { subject: { kind: key, permissions: [reports:write] }, method: POST, path: /api/reports, expect: allow, rule: key.api }',
      ].join('\n');
      await writeFile(join(dir, 'policies/tests/reports.yaml'), suite);
      const ok = await runCli(['test', 'policies/tests/reports.yaml'], dir);
      expect(ok.code, ok.out + ok.err).to.equal(0);
      expect(summary(ok.out)).to.deep.equal({ passed: 3, failed: 0 });

      const csv = join(dir, 'policies/variant-a.csv');
      await writeFile(csv, (await readFile(csv, 'utf8')).replace(WRITES_LINE, ''));
      const bad = await runCli(['test', 'policies/tests/reports.yaml'], dir);
      expect(bad.code).to.equal(1);
      expect(summary(bad.out).failed).to.equal(2);
    });
  });

  it('a case naming an undeclared permission fails and says so', async () => {
    await withReports(async (dir) => {
      await writeFile(join(dir, 'policies/tests/typo.yaml'), 'variant: A\ncases:\n  - { subject: { kind: key, permissions: [report:read] }, method: GET, path: /api/reports, expect: allow }\n');
      const r = await runCli(['test', 'policies/tests/typo.yaml'], dir);
      expect(r.code).to.equal(1);
      expect(r.out).to.include('names permission report:read, which policies/scopes.yaml does not declare');
    });
  });
});

describe('keygate policy diff: scopes', () => {
  it('lists the scopes added, removed and changed, and decides over every declared permission', async () => {
    await withPolicyCopy(async (dir) => {
      await cp(join(dir, 'policies'), join(dir, 'old'), { recursive: true });
      const scopes = join(dir, 'policies/scopes.yaml');
      const text = (await readFile(scopes, 'utf8')).replace('    label: Allow MCP access\n', '    label: Allow agents\n').replace(/  ai:\n(    .*\n)+/, '');
      await writeFile(scopes, text + REPORTS);
      await writeFile(join(dir, 'policies/variant-a.csv'), (await readFile(join(dir, 'policies/variant-a.csv'), 'utf8')) + WRITES_LINE);
      const r = await runCli(['diff', 'old/variant-a.csv', 'policies/variant-a.csv'], dir);
      expect(r.code, r.err).to.equal(0);
      expect(r.out).to.include('scopes:\n');
      expect(r.out).to.include('  - ai actions [access]');
      expect(r.out).to.include('  ~ mcp: label "Allow MCP access" -> "Allow agents"');
      expect(r.out).to.include('  + reports actions [read, write]');
      expect(r.out).to.match(/^ {2}\+ policies\/variant-a\.csv:\d+ {2}p, key, !perm:reports:write/m);
      expect(r.out).to.include('POST /api/reports');
      expect(r.out).to.match(/key\[reports:read\]/);
    });
  });
});
