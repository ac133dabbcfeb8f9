import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { packageRoot } from '../../../src/config.ts';
import { commandTable } from '../../../src/cli/main.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

const run = promisify(execFile);

// The arguments that would do something, were --help not there: a server start, a migration, a
// user written, a policy applied.
const WOULD_ACT: Record<string, string[]> = {
  'user create': ['--email', 'helped@example.test', '--password', 'a long password'],
  'user ban': ['--email', 'helped@example.test'],
  'policy apply': ['--force'],
  'policy rollback': ['1'],
  'policy test': ['--junit', 'should-not-exist.xml'],
};

/** Every command and subcommand the CLI's own table knows, as argument lists. */
function everyCommand(): string[][] {
  const out: string[][] = [];
  for (const [name, c] of Object.entries(commandTable)) {
    out.push([name]);
    for (const sub of Object.keys(c.subcommands ?? {})) out.push([name, sub]);
  }
  return out;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

describe('npx keygate --help, -h and --version', function () {
  this.timeout(180_000);
  let db: TestDatabase;
  let port: number;
  const keygate = async (...args: string[]) => {
    try {
      // A server that started would never exit: the timeout makes that a failure, not a hang.
      const { stdout, stderr } = await run(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), ...args], {
        env: { ...process.env, DATABASE_URL: db.url, PORT: String(port), KEYGATE_CONFIG: resolve(packageRoot, 'test/fixtures/cli.yaml') },
        cwd: packageRoot,
        timeout: 30_000,
      });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const err = e as { code: number; stdout: string; stderr: string; killed?: boolean };
      return { code: err.killed ? -1 : err.code, stdout: err.stdout, stderr: err.stderr };
    }
  };
  before(async () => {
    db = await createTestDatabase('cli_help');
    port = await freePort();
  });
  after(async () => db?.drop());

  it('the table holds every command, the new ones included', () => {
    const names = everyCommand().map((c) => c.join(' '));
    expect(names).to.include.members(['serve', 'migrate', 'user create', 'user list', 'org set-plan', 'policy test', 'policy diff', 'policy apply', 'policy status', 'policy shadow', 'policy scope', 'policy promote']);
  });

  it('every command and subcommand has a sentence saying what it does and an example that runs it', () => {
    for (const command of everyCommand()) {
      const [name, sub] = command;
      const entry = sub === undefined ? commandTable[name!]! : commandTable[name!]!.subcommands![sub]!;
      expect(entry.about, command.join(' ')).to.match(/^[A-Z].*\.$/);
      if (entry.subcommands) continue;
      expect(entry.examples, command.join(' ')).to.not.be.empty;
      for (const e of entry.examples!) expect(e, command.join(' ')).to.match(new RegExp(`^(PORT=\\d+ )?npx keygate ${command.join(' ')}\\b`));
    }
  });

  it('the examples of the commands that read files only run as written in a checkout', async () => {
    for (const command of ['explain', 'lint']) {
      for (const example of commandTable.policy!.subcommands![command]!.examples!) {
        const res = await keygate(...example.replace(/^npx keygate /, '').split(' '));
        expect(res.code, `${example}\n${res.stdout}${res.stderr}`).to.equal(0);
      }
    }
  });

  for (const command of everyCommand()) {
    for (const flag of ['--help', '-h']) {
      const args = [...command, ...(WOULD_ACT[command.join(' ')] ?? []), flag];
      it(`keygate ${args.join(' ')} prints its usage on stdout and exits 0`, async () => {
        const res = await keygate(...args);
        expect(res.code, res.stderr).to.equal(0);
        expect(res.stderr).to.equal('');
        expect(res.stdout).to.match(/^usage:/);
        // The usage of that command: a subcommand's names it.
        expect(res.stdout).to.include(command.length > 1 ? `keygate ${command.join(' ')}` : `keygate ${command[0]}`);
      });
    }
  }

  it('and nothing happened: no migration ran, no table or user was written, no server listened, no file was written', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'");
      expect(rows[0].n).to.equal(0);
    } finally {
      await client.end();
    }
    const probe = createServer();
    await new Promise<void>((ok, fail) => probe.once('error', fail).listen(port, '127.0.0.1', ok));
    await new Promise((r) => probe.close(r));
    expect(() => readFileSync(resolve(packageRoot, 'should-not-exist.xml'))).to.throw();
  });

  it('keygate alone, --help and -h print the command list with every subcommand, and start nothing; --version the package version', async () => {
    for (const flags of [[], ['--help'], ['-h'], ['help']]) {
      const res = await keygate(...flags);
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stdout).to.match(/^usage: keygate <command>/);
      for (const command of everyCommand()) {
        const entry = command.length === 1 ? commandTable[command[0]!]! : commandTable[command[0]!]!.subcommands![command[1]!]!;
        if (!entry.subcommands) expect(res.stdout, command.join(' ')).to.include(`  ${entry.usage.split('\n')[0]}\n`);
      }
    }
    const v = await keygate('--version');
    expect(v.code).to.equal(0);
    expect(v.stdout.trim()).to.equal((JSON.parse(readFileSync(resolve(packageRoot, 'package.json'), 'utf8')) as { version: string }).version);
  });

  it('an unknown command or subcommand still fails with --help, and a flag serve does not take is refused', async () => {
    expect((await keygate('frobnicate', '--help')).code).to.equal(1);
    const unknownSub = await keygate('user', 'frob');
    expect(unknownSub.code).to.equal(1);
    expect(unknownSub.stderr).to.match(/unknown subcommand "frob"/);
    const badFlag = await keygate('serve', '--port', '1');
    expect(badFlag.code).to.equal(1);
    expect(badFlag.stderr).to.match(/--port/);
  });
});
