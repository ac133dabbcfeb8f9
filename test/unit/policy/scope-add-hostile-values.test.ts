import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, withPolicyCopy } from './helpers.ts';

// `policy scope add` writes what the operator types into the policy file, the scopes file and a
// suite. A newline in a description made the policy's comment line end early and the rest of the
// value a policy line of its own: a deny or an allow nobody reviewed, live after apply. A scope
// named after a member every plain object inherits (`constructor`) passed the name rule, was
// written, and then crashed the command and every later lint. Each is refused before anything is
// written, with words saying what to change.

const snapshot = async (dir: string) => {
  const names = [...(await readdir(join(dir, 'policies'))), ...(await readdir(join(dir, 'policies/tests'))).map((n) => `tests/${n}`)];
  const files = await Promise.all(names.filter((n) => n !== 'tests').sort().map(async (n) => [n, await readFile(join(dir, 'policies', n), 'utf8')]));
  return Object.fromEntries(files);
};

const add = (extra: string[], dir: string, name = 'reports') => runCli(['scope', 'add', name, '--route', '* /api/reports/**', ...extra], dir);

describe('hostile: values that would break the policy files, given to policy scope add', function () {
  this.timeout(60_000);

  const injected = 'Reports.\np, user, *, .*, /api/api-keys/**, deny, user.injected';
  const cases: [string, string[]][] = [
    ['a description with a newline and a policy line after it', ['--description', injected]],
    ['a description with a carriage return', ['--description', 'Reports.\rp, key, *, .*, /**, allow, x']],
    ['a description with a Unicode line separator', ['--description', 'Reports.\u2028p, key, *, .*, /**, allow, x']],
    ['a label with a newline', ['--label', 'Reports\nscopes: {}']],
    ['a label with a NUL', ['--label', 'Rep\u0000orts']],
    ['a description with an escape character', ['--description', 'Reports \u001b[2J']],
  ];
  for (const [what, extra] of cases) {
    it(`refuses ${what}: exit 1, the field named, nothing written`, async () => {
      await withPolicyCopy(async (dir) => {
        const before = await snapshot(dir);
        const r = await add(extra, dir);
        expect(r.code, r.out + r.err).to.equal(1);
        expect(r.err).to.match(/^keygate: --(description|label): must not contain control characters or line breaks[^\n]*; nothing written$/m);
        expect(await snapshot(dir)).to.deep.equal(before);
      });
    });
  }

  it('refuses a route whose path would split the policy line (a comma), nothing written', async () => {
    await withPolicyCopy(async (dir) => {
      const before = await snapshot(dir);
      const r = await runCli(['scope', 'add', 'reports', '--route', '* /api/reports/**,allow'], dir);
      expect(r.code, r.out + r.err).to.equal(1);
      expect(r.err).to.match(/--route "\* \/api\/reports\/\*\*,allow"/);
      expect(r.err).to.match(/nothing written$/m);
      expect(await snapshot(dir)).to.deep.equal(before);
    });
  });

  it('still takes a plain description with punctuation and quotes, written as YAML and as a comment', async () => {
    await withPolicyCopy(async (dir) => {
      const r = await add(['--description', 'Reports: "monthly" & yearly, #1 — ünïcode.'], dir);
      expect(r.code, r.out + r.err).to.equal(0);
      expect(await readFile(join(dir, 'policies/scopes.yaml'), 'utf8')).to.include('description: \'Reports: "monthly" & yearly, #1 — ünïcode.\'');
    });
  });
});

describe('hostile: scope names that every plain object already has, given to policy scope add', function () {
  this.timeout(60_000);

  for (const name of ['constructor', 'valueof', 'tostring']) {
    it(`"${name}" is declared and linted like any other name, and lint keeps working after it`, async () => {
      await withPolicyCopy(async (dir) => {
        const r = await add([], dir, name);
        expect(r.code, r.out + r.err).to.equal(0);
        expect(r.out).to.match(/^0 findings in 1 file$/m);
        const lint = await runCli(['lint'], dir);
        expect(lint.code, lint.out + lint.err).to.equal(0);
        const explain = await runCli(['explain', '--policy', 'policies/variant-a.csv', '--subject', 'key', '--permissions', name, '--method', 'GET', '--path', '/api/reports'], dir);
        expect(explain.out, explain.out + explain.err).to.include('decision: allow');
        const without = await runCli(['explain', '--policy', 'policies/variant-a.csv', '--subject', 'key', '--method', 'GET', '--path', '/api/reports'], dir);
        expect(without.out, without.out + without.err).to.include('decision: deny');
      });
    });
  }

  it('an action named "constructor" works as any other action', async () => {
    await withPolicyCopy(async (dir) => {
      const r = await runCli(['scope', 'add', 'reports', '--actions', 'constructor,write', '--route', 'constructor reads /api/reports/**', '--route', 'write writes /api/reports/**'], dir);
      expect(r.code, r.out + r.err).to.equal(0);
      const lint = await runCli(['lint'], dir);
      expect(lint.code, lint.out + lint.err).to.equal(0);
    });
  });

  it('a route that repeats another with its methods reordered is refused too', async () => {
    await withPolicyCopy(async (dir) => {
      const before = await snapshot(dir);
      const r = await runCli(['scope', 'add', 'reports', '--route', 'GET,HEAD /api/reports/x', '--route', 'HEAD,GET /api/reports/x'], dir);
      expect(r.code, r.out + r.err).to.equal(1);
      expect(r.err).to.match(/^keygate: --route "HEAD,GET \/api\/reports\/x" repeats --route "GET,HEAD \/api\/reports\/x"/m);
      expect(await snapshot(dir)).to.deep.equal(before);
    });
  });

  it('a duplicate --route is refused before any file is written', async () => {
    await withPolicyCopy(async (dir) => {
      const before = await snapshot(dir);
      const r = await runCli(['scope', 'add', 'reports', '--route', '* /api/reports/**', '--route', '*  /api/reports/**'], dir);
      expect(r.code, r.out + r.err).to.equal(1);
      expect(r.err).to.match(/nothing written$/m);
      expect(await snapshot(dir)).to.deep.equal(before);
    });
  });
});
