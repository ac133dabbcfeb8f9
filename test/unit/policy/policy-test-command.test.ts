import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parsePolicy } from '../../../src/policy/rules.ts';
import { runCli, shippedPolicies, summary, withPolicyCopy } from './helpers.ts';

describe('keygate policy test', () => {
  describe('when the shipped suites run against the shipped policies', () => {
    it('then every case passes and every line of both policies is exercised', async () => {
      const r = await runCli(['test', '--coverage', '--min-coverage', '100']);
      expect(r.err).to.equal('');
      expect(r.code).to.equal(0);
      const { passed, failed } = summary(r.out);
      expect(failed).to.equal(0);
      expect(passed).to.be.greaterThan(500);
      expect(r.out).to.match(/coverage policies\/variant-a\.csv: (\d+)\/\1 lines exercised \(100\.0%\)/);
      expect(r.out).to.match(/coverage policies\/variant-b\.csv: (\d+)\/\1 lines exercised \(100\.0%\)/);
      expect(r.out).not.to.match(/^ROUTE/m);
    });
  });

  for (const variant of ['a', 'b']) {
    describe(`when any single deny line is removed from variant-${variant}.csv`, () => {
      it('then the shipped suite for that variant fails', async function () {
        this.timeout(120_000);
        const text = await readFile(join(shippedPolicies, `variant-${variant}.csv`), 'utf8');
        const denies = parsePolicy(text).rules.filter((r) => r.effect === 'deny');
        expect(denies.length).to.be.greaterThan(3);
        const survivors: string[] = [];
        for (const deny of denies) {
          const lines = text.split('\n');
          lines.splice(deny.line - 1, 1);
          await withPolicyCopy(async (dir) => {
            await writeFile(join(dir, 'policies', `variant-${variant}.csv`), lines.join('\n'));
            const r = await runCli(['test', `policies/tests/variant-${variant}.yaml`], dir);
            if (r.code === 0) survivors.push(deny.id);
            else expect(summary(r.out).failed).to.be.greaterThan(0);
          });
        }
        expect(survivors, 'deny lines whose removal no case notices').to.deep.equal([]);
      });
    });
  }

  describe('when a new deny line that also refuses already-tested requests is added before the shipped ones', () => {
    it('then the shipped cases that name the later line still pass: a case checks the decision, and its rule is one line that makes it', async () => {
      await withPolicyCopy(async (dir) => {
        const csv = join(dir, 'policies/variant-a.csv');
        const text = await readFile(csv, 'utf8');
        // An operator's billing scope: while a case had to name the very line reported, 52 shipped cases
        // failed because the new line now came first among the denies of billing writes.
        await writeFile(join(dir, 'policies/scopes.yaml'), `${await readFile(join(dir, 'policies/scopes.yaml'), 'utf8')}  billing:\n    label: Billing\n    actions: [read, write]\n`);
        const line = 'p, key, !perm:billing:read, .*, /api/billing/**, deny, key.billing-needs-read\np, key, *, .*, /api/**, deny, key.everything-closed';
        await writeFile(csv, text.replace('p, key, *, .*, /api/**, allow, key.api\n', `p, key, *, .*, /api/**, allow, key.api\n${line}\n`));
        const suite = 'policies/tests/variant-a.yaml';
        // Every key request under /api is now refused first by the new lines.
        const before = await runCli(['test', suite]);
        const after = await runCli(['test', suite], dir);
        expect(summary(before.out).failed).to.equal(0);
        const failures = after.out.split('\n').filter((l) => l.startsWith('FAIL'));
        // Only cases expecting a key to be allowed fail; no deny case does.
        expect(failures.length).to.be.greaterThan(0);
        for (const f of failures) expect(f).to.match(/expected allow/);
      });
    });

    it('then a case naming a line that matches but does not make the decision still fails', async () => {
      await withPolicyCopy(async (dir) => {
        await writeFile(join(dir, 'policies/tests/wrong.yaml'), 'variant: A\ncases:\n  - { subject: key, method: POST, path: /api/billing/checkout, expect: deny, rule: key.api }\n');
        const r = await runCli(['test', 'policies/tests/wrong.yaml'], dir);
        expect(r.code).to.equal(1);
        expect(r.out).to.match(/expected deny by key\.api, decided deny by key\.billing-writes/);
      });
    });
  });

  describe('when a case expects a decision the policy does not make', () => {
    it('then the failure names what was expected, what was decided and the deciding line, and the exit code is 1', async () => {
      await withPolicyCopy(async (dir) => {
        await writeFile(
          join(dir, 'policies/tests/wrong.yaml'),
          'variant: A\ncases:\n  - { subject: key, method: POST, path: /api/billing/checkout, expect: allow }\n',
        );
        const r = await runCli(['test', 'policies/tests/wrong.yaml'], dir);
        expect(r.code).to.equal(1);
        expect(r.out).to.match(/^FAIL policies\/tests\/wrong\.yaml:3 key POST \/api\/billing\/checkout: expected allow, decided deny by key\.billing-writes \(policies\/variant-a\.csv:\d+\)$/m);
        expect(summary(r.out)).to.deep.equal({ passed: 0, failed: 1 });
      });
    });
  });

  describe('when a suite is broken YAML', () => {
    it('then the error names the file and line, and the run fails without a stack trace', async () => {
      await withPolicyCopy(async (dir) => {
        await writeFile(join(dir, 'policies/tests/broken.yaml'), 'variant: A\ncases:\n  - subject: key\n    method: [GET\n    path: /api/x\n');
        const r = await runCli(['test'], dir);
        expect(r.code).to.equal(1);
        expect(r.err).to.match(/^policies\/tests\/broken\.yaml:\d+:\d+: not valid YAML: /m);
        expect(r.err).not.to.match(/\n\s+at /);
        // The other suites still run.
        expect(summary(r.out).passed).to.be.greaterThan(500);
      });
    });
  });

  describe('when a case has a field the schema does not know', () => {
    it('then the error names the file, the line of the field and the field', async () => {
      await withPolicyCopy(async (dir) => {
        const suite = 'variant: A\ncases:\n  - subject: key\n    method: GET\n    path: /api/projects\n    expect: allow\n    expected: allow\n';
        await writeFile(join(dir, 'policies/tests/typo.yaml'), suite);
        const r = await runCli(['test', 'policies/tests/typo.yaml'], dir);
        expect(r.code).to.equal(1);
        expect(r.err).to.include('policies/tests/typo.yaml:7: cases[0]: unknown field "expected"');
      });
    });
  });

  describe('when --junit is given', () => {
    it('then it writes well-formed JUnit XML that counts the same cases as the summary', async () => {
      await withPolicyCopy(async (dir) => {
        await writeFile(
          join(dir, 'policies/tests/wrong.yaml'),
          'variant: B\ncases:\n  - { name: "<quoted> & \\"odd\\"", subject: key, method: POST, path: /api/mcp, expect: allow }\n',
        );
        const r = await runCli(['test', '--junit', 'report.xml'], dir);
        const xml = await readFile(join(dir, 'report.xml'), 'utf8');
        const { passed, failed } = summary(r.out);
        expect(xml.match(/<testcase /g)?.length).to.equal(passed + failed);
        expect(xml.match(/<failure /g)?.length).to.equal(failed);
        expect(xml).to.match(/<testsuites [^>]*tests="(\d+)" failures="1"/);
        expect(xml).to.include('name="&lt;quoted&gt; &amp; &quot;odd&quot;"');
        expectWellFormed(xml);
      });
    });
  });
});

// A light well-formedness check: every element closes in order, attributes are quoted, and no raw
// markup characters appear in attribute values.
function expectWellFormed(xml: string): void {
  expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n')).to.equal(true);
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z]+)((?:\s+[A-Za-z]+="[^"<&]*(?:&(?:lt|gt|amp|quot|apos);[^"<&]*)*")*)\s*(\/?)>/g;
  let end = xml.indexOf('?>') + 2;
  for (let m = tag.exec(xml); m; m = tag.exec(xml)) {
    expect(xml.slice(end, m.index).trim(), 'text between tags').to.equal('');
    end = m.index + m[0].length;
    const [, closing, name = '', , selfClosing] = m;
    if (closing) expect(stack.pop()).to.equal(name);
    else if (!selfClosing) stack.push(name);
  }
  expect(xml.slice(end).trim()).to.equal('');
  expect(stack).to.deep.equal([]);
}
