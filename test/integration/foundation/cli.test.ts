import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { packageRoot } from '../../../src/config.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

const run = promisify(execFile);

describe('npx keygate (the CLI)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  const keygate = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), ...args], {
        env: { ...process.env, DATABASE_URL: db.url, KEYGATE_CONFIG: resolve(packageRoot, 'test/fixtures/cli.yaml') },
      });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const err = e as { code: number; stdout: string; stderr: string };
      return { code: err.code, stdout: err.stdout, stderr: err.stderr };
    }
  };
  before(async () => {
    db = await createTestDatabase('cli');
    pool = new pg.Pool({ connectionString: db.url });
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('migrate applies the migrations, then has nothing to apply', async () => {
    const first = await keygate('migrate');
    expect(first.code).to.equal(0);
    expect(first.stdout).to.match(/applied 001_accounts\.sql/);
    expect((await keygate('migrate')).stdout).to.match(/nothing to apply/);
  });

  it('user create --admin makes an admin whose password is hashed', async () => {
    const res = await keygate('user', 'create', '--email', 'Root@Example.test', '--password', 'a long password', '--admin', '--plan', 'pro');
    expect(res.code, res.stderr).to.equal(0);
    const { rows } = await pool.query("SELECT role, plan, password_hash FROM users WHERE email = 'Root@Example.test'");
    expect(rows[0]).to.include({ role: 'admin', plan: 'pro' });
    expect(rows[0].password_hash).to.match(/^scrypt\$/).and.not.include('a long password');
  });

  it('user create refuses a taken e-mail, a short password, an unknown plan, a missing e-mail and an unknown flag with exit 1, one line naming why, and creates nothing', async () => {
    expect((await keygate('user', 'create', '--email', 'taken@example.test', '--password', 'a long password')).code).to.equal(0);
    const users = async () => (await pool.query('SELECT email FROM users ORDER BY email')).rows.map((r) => r.email as string);
    const before = await users();
    for (const [args, why] of [
      [['--email', 'taken@example.test', '--password', 'a long password'], /already exists/],
      [['--email', 'new@example.test', '--password', 'x'], /^keygate: --password must be at least 8 characters$/m],
      [['--email', 'new@example.test', '--password', 'x'.repeat(129)], /^keygate: --password must be at most 128 characters$/m],
      [['--email', 'new@example.test', '--password', 'a long password', '--plan', 'gold'], /plan "gold" is not defined/],
      [['--password', 'a long password'], /--email is required/],
      [['--email', 'new@example.test', '--password', 'a long password', '--rol', 'admin'], /--rol/],
    ] as const) {
      const res = await keygate('user', 'create', ...args);
      expect(res.code, args.join(' ')).to.equal(1);
      expect(res.stderr.trim().split('\n'), res.stderr).to.have.length(1);
      expect(res.stderr, args.join(' ')).to.match(why);
    }
    expect(await users()).to.deep.equal(before);
  });

  it('user set-role, set-plan, ban and unban change the user', async () => {
    expect((await keygate('user', 'create', '--email', 'Root2@Example.test', '--password', 'a long password', '--admin')).code).to.equal(0);
    expect((await keygate('user', 'set-role', '--email', 'root2@example.test', '--role', 'user')).code).to.equal(0);
    expect((await keygate('user', 'set-plan', '--email', 'root2@example.test', '--plan', 'free')).code).to.equal(0);
    expect((await keygate('user', 'ban', '--email', 'root2@example.test')).code).to.equal(0);
    let { rows } = await pool.query("SELECT role, plan, banned FROM users WHERE lower(email) = 'root2@example.test'");
    expect(rows[0]).to.deep.equal({ role: 'user', plan: 'free', banned: true });
    expect((await keygate('user', 'unban', '--email', 'root2@example.test')).code).to.equal(0);
    ({ rows } = await pool.query("SELECT banned FROM users WHERE lower(email) = 'root2@example.test'"));
    expect(rows[0].banned).to.equal(false);
    const missing = await keygate('user', 'ban', '--email', 'nobody@example.test');
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/no user with e-mail nobody@example\.test/);
    expect((await keygate('user', 'set-role', '--email', 'root2@example.test', '--role', 'root')).code).to.equal(1);
  });

  it('org set-plan sets an organization\'s plan', async () => {
    await pool.query("INSERT INTO organizations (name, slug) VALUES ('Acme', 'acme')");
    expect((await keygate('org', 'set-plan', '--slug', 'acme', '--plan', 'pro')).code).to.equal(0);
    const { rows } = await pool.query("SELECT plan FROM organizations WHERE slug = 'acme'");
    expect(rows[0].plan).to.equal('pro');
    expect((await keygate('org', 'set-plan', '--slug', 'nope', '--plan', 'pro')).code).to.equal(1);
  });

  it('user list prints every user, or those starting with --q, as lines or as one JSON document', async () => {
    expect((await keygate('user', 'create', '--email', 'Lister@Example.test', '--password', 'a long password', '--name', 'Lister One', '--plan', 'pro')).code).to.equal(0);
    const all = await keygate('user', 'list');
    expect(all.code, all.stderr).to.equal(0);
    expect(all.stdout).to.match(/^\S+ {2}Lister@Example\.test {2}user {2}pro {2}active {2}\S+Z {2}"Lister One"$/m);
    expect(all.stdout).to.match(/^\d+ users\n$/m);
    const json = await keygate('user', 'list', '--q', 'LISTER', '--json');
    expect(json.code).to.equal(0);
    const { users } = JSON.parse(json.stdout) as { users: Record<string, unknown>[] };
    expect(users).to.have.length(1);
    expect(users[0]).to.have.keys('id', 'email', 'name', 'role', 'plan', 'banned', 'created');
    expect(users[0]).to.include({ email: 'Lister@Example.test', name: 'Lister One', role: 'user', plan: 'pro', banned: false });
    // A LIKE wildcard in the prefix is a character, not a pattern.
    expect(JSON.parse((await keygate('user', 'list', '--q', '%', '--json')).stdout).users).to.deep.equal([]);
  });

  it('every failing command says why on one line starting "keygate:", the policy commands that read only files too', async () => {
    for (const args of [['policy', 'explain', '--subject', 'robot', '--method', 'GET', '--path', '/api/x'], ['policy', 'lint', 'no-such-file.csv'], ['user', 'ban']]) {
      const res = await keygate(...args);
      expect(res.code, args.join(' ')).to.equal(1);
      expect(res.stderr, args.join(' ')).to.match(/^keygate: \S/);
    }
  });

  it('an unknown command exits 1', async () => {
    const res = await keygate('frobnicate');
    expect(res.code).to.equal(1);
    expect(res.stderr).to.match(/unknown command "frobnicate"/);
  });
});
