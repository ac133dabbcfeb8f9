import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, shippedPolicies } from './helpers.ts';

// policies/README.md's recipes, run as an operator types them: every shell block of the
// "Recipes for a new router" section, line by line and in order, in a git checkout holding a copy of
// the shipped files and a keygate.yaml naming them. `npx keygate` finds this checkout's CLI through
// node_modules/.bin, as it does in a project that installed keygate. A `# exits N` comment says the
// next command is expected to fail so.

interface Step { command: string; exits: number }

function recipeSteps(readme: string): Step[] {
  const start = readme.indexOf('## Recipes for a new router');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const steps: Step[] = [];
  for (const block of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    let exits = 0;
    for (const line of (block[1] ?? '').split('\n').map((l) => l.trim())) {
      const expected = /^# exits (\d+)/.exec(line);
      if (expected) exits = Number(expected[1]);
      if (line === '' || line.startsWith('#')) continue;
      steps.push({ command: line, exits });
      exits = 0;
    }
  }
  return steps;
}

describe('policies/README.md: the recipes run as written', function () {
  this.timeout(300_000);

  it('adds reports to a new router and billing (read and write) to an existing one, each step exiting as the README says', async () => {
    const steps = recipeSteps(await readFile(join(shippedPolicies, 'README.md'), 'utf8'));
    expect(steps.filter((s) => s.command.startsWith('npx keygate policy scope add')).length).to.be.greaterThanOrEqual(3);
    const dir = await mkdtemp(join(tmpdir(), 'keygate-readme-'));
    try {
      await cp(shippedPolicies, join(dir, 'policies'), { recursive: true });
      await writeFile(join(dir, 'keygate.yaml'), 'policy:\n  model: policies/model.conf\n  file: policies/variant-a.csv\n  scopes: policies/scopes.yaml\n');
      await mkdir(join(dir, 'node_modules/.bin'), { recursive: true });
      await symlink(join(repoRoot, 'bin/keygate.js'), join(dir, 'node_modules/.bin/keygate'));
      const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=operator', '-c', 'user.email=operator@example.test', ...args], { cwd: dir });
      git('init', '-q');
      git('add', 'policies', 'keygate.yaml');
      git('commit', '-qm', 'the shipped policy');
      const env = { ...process.env };
      delete env.KEYGATE_CONFIG;
      for (const step of steps) {
        const r = spawnSync('bash', ['-c', step.command], { cwd: dir, env, encoding: 'utf8' });
        expect(r.status, `${step.command}\n${r.stdout}\n${r.stderr}`).to.equal(step.exits);
      }
      const csv = await readFile(join(dir, 'policies/variant-a.csv'), 'utf8');
      expect(csv).to.include('p, key, !perm:reports, .*, /api/reports/**, deny, key.reports-needs-reports\n');
      expect(csv).to.include('p, key, !perm:billing:write, ^(?!(GET|HEAD|OPTIONS)$).+$, /api/billing/**, deny, key.billing-needs-write\n');
      expect(csv).not.to.include('key.billing-writes');
      const scopes = await readFile(join(dir, 'policies/scopes.yaml'), 'utf8');
      expect(scopes).to.include('  reports:\n    label: Reports\n');
      expect(scopes).to.include('  billing:\n    label: Billing\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
