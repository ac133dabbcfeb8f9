import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { cp, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { tempDir } from '../../support/tmp.ts';
import { repoRoot, runCli, withPolicyCopy } from './helpers.ts';

// The file-only policy commands: --json, lint by kind, diff against git, and the
// CI recipe of policies/README.md run as written from a git checkout.

const sh = promisify(execFile);
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, stdio: 'pipe' }).toString();

async function relabel(dir: string): Promise<void> {
  const path = join(dir, 'policies', 'scopes.yaml');
  await writeFile(path, (await readFile(path, 'utf8')).replace('label: Allow AI access', 'label: Allow the AI features'));
}

describe('policy commands: --json, lint by kind, diff against git', function () {
  this.timeout(120_000);

  it('test, explain and diff --json each print one JSON document', async () => {
    const t = await runCli(['test', '--json']);
    expect(t.code, t.err).to.equal(0);
    const tests = JSON.parse(t.out);
    expect(tests.ok).to.equal(true);
    expect(tests.failed).to.equal(0);
    expect(tests.passed).to.be.greaterThan(100);
    expect(tests.suites[0].cases[0]).to.have.keys('name', 'file', 'line', 'ok', 'failure');

    const e = await runCli(['explain', '--json', '--variant', 'A', '--subject', 'key', '--method', 'POST', '--path', '/api/ai/chat']);
    const explained = JSON.parse(e.out);
    expect(explained).to.include({ method: 'POST', path: '/api/ai/chat', decision: 'deny', requiredPermission: 'ai' });
    expect(explained.decidedBy.id).to.be.a('string');

    const d = await runCli(['diff', '--json', 'policies/variant-a.csv', 'policies/variant-b.csv']);
    const diff = JSON.parse(d.out);
    expect(diff.changed).to.be.greaterThan(0);
    expect(diff.decisions[0]).to.have.keys('request', 'subjects', 'before', 'after');
  });

  it('lint reads a scopes file as scopes, a suite as a suite, and refuses YAML that is neither', async () => {
    const scopes = await runCli(['lint', 'policies/scopes.yaml']);
    expect(scopes.code, scopes.out).to.equal(0);
    expect(scopes.out).to.match(/^0 findings in 3 files$/m);
    const suite = await runCli(['lint', 'policies/tests/variant-a.yaml']);
    expect(suite.code).to.equal(0);
    expect(suite.out).to.match(/a test suite of \d+ cases for policies\/variant-a\.csv/);
    await withPolicyCopy(async (dir) => {
      await writeFile(join(dir, 'policies', 'other.yaml'), 'hello: world\n');
      const other = await runCli(['lint', 'policies/other.yaml'], dir);
      expect(other.code).to.equal(1);
      expect(other.err).to.match(/neither a scopes file .* nor a test suite/);
      await writeFile(join(dir, 'policies', 'scopes.yaml'), 'scopes:\n  ai: { label: 3, actions: nope }\n');
      const broken = await runCli(['lint', 'policies/scopes.yaml'], dir);
      expect(broken.code).to.equal(1);
      expect(broken.out).to.match(/scopes\.yaml:\d+/);
    });
  });

  it('diff with no files compares the working files with HEAD, or --base REF, and outside git says what to pass', async () => {
    await withPolicyCopy(async (dir) => {
      const outside = await runCli(['diff'], dir);
      expect(outside.code).to.equal(1);
      expect(outside.err).to.match(/not inside a git checkout: name the two policies to compare, keygate policy diff OLD NEW/);

      git(dir, 'init', '-q');
      git(dir, 'add', '.');
      git(dir, 'commit', '-qm', 'base');
      const same = await runCli(['diff'], dir);
      expect(same.code, same.err).to.equal(0);
      expect(same.out).to.match(/^comparing policies\/variant-a\.csv with HEAD:policies\/variant-a\.csv$/m);
      expect(same.out).to.match(/^0 decisions change/m);

      // The scopes file changed in the working tree: read from the same place at HEAD.
      await relabel(dir);
      const path = join(dir, 'policies', 'variant-a.csv');
      await writeFile(path, `${await readFile(path, 'utf8')}\np, key, *, .*, /api/projects/**, deny, key.projects-closed\n`);
      const changed = await runCli(['diff'], dir);
      expect(changed.code, changed.err).to.equal(0);
      expect(changed.out).to.match(/~ ai: label "Allow AI access" -> "Allow the AI features"/);
      expect(changed.out).to.match(/\+ policies\/variant-a\.csv:\d+ {2}p, key, \*, \.\*, \/api\/projects\/\*\*, deny, key\.projects-closed/);
      expect(changed.out).to.match(/GET \/api\/projects .*allow \(key\.api\) -> deny \(key\.projects-closed\)/);

      git(dir, 'commit', '-qam', 'close projects');
      expect((await runCli(['diff'], dir)).out).to.match(/^0 decisions change/m);
      const againstBase = await runCli(['diff', '--base', 'HEAD~1', '--json'], dir);
      expect(JSON.parse(againstBase.out)).to.include({ old: 'HEAD~1:policies/variant-a.csv', new: 'policies/variant-a.csv' });
      expect(JSON.parse(againstBase.out).changed).to.be.greaterThan(0);
      const noSuchRef = await runCli(['diff', '--base', 'nope'], dir);
      expect(noSuchRef.code).to.equal(1);
      expect(noSuchRef.err).to.match(/--base nope: not a commit/);
    });
  });

  it('the CI steps of policies/README.md run as written in a git checkout of the project', async () => {
    const readme = await readFile(join(repoRoot, 'policies', 'README.md'), 'utf8');
    const block = /### In CI[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'the CI block').to.be.a('string');
    const steps = (parseYaml(block!) as { jobs: { policy: { steps: { run?: string; env?: unknown }[] } } }).jobs.policy.steps;
    // npm ci is the runner's install (node_modules is linked here); the dry run needs staging's database.
    const runs = steps.filter((s) => s.run && !s.env && s.run.trim() !== 'npm ci').map((s) => s.run!.replaceAll('${{ github.base_ref }}', 'main'));
    expect(runs.join('\n')).to.include('policy diff');

    const dir = tempDir('kg-ci-');
    for (const part of ['bin', 'src', 'dist', 'policies', 'migrations', 'package.json', 'tsconfig.json']) {
      await cp(join(repoRoot, part), join(dir, part), { recursive: true, preserveTimestamps: true });
    }
    await symlink(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
    git(dir, 'init', '-q', '-b', 'main');
    git(dir, 'add', '.');
    git(dir, 'commit', '-qm', 'base');
    git(dir, 'update-ref', 'refs/remotes/origin/main', 'HEAD');
    git(dir, 'checkout', '-qb', 'relabel-ai');
    await relabel(dir);
    git(dir, 'commit', '-qam', 'relabel the ai scope');

    let output = '';
    for (const run of runs) {
      const env = { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' };
      const r = await sh('bash', ['-e', '-c', run], { cwd: dir, env, maxBuffer: 32 * 1024 * 1024 }).catch((e: { code: number; stdout: string; stderr: string }) => {
        throw new Error(`step failed (exit ${e.code}):\n${run}\n${e.stdout}\n${e.stderr}`);
      });
      output += r.stdout;
    }
    expect(output).to.include('== policies/variant-a.csv');
    expect(output).to.include('== policies/variant-b.csv');
    expect(output).to.match(/~ ai: label "Allow AI access" -> "Allow the AI features"/);
  });
});
