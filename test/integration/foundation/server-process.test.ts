import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { tempDir } from '../../support/tmp.ts';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../../src/config.ts';

function waitForLine(child: ChildProcess, pattern: RegExp, ms: number): Promise<string> {
  return new Promise((ok, fail) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`no "${pattern}" within ${ms} ms; output:\n${seen}`)), ms);
    const onData = (d: Buffer) => {
      seen += d.toString();
      const m = pattern.exec(seen);
      if (m) {
        clearTimeout(timer);
        ok(m[1] ?? m[0]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => fail(new Error(`exited with ${code} before "${pattern}"; output:\n${seen}`)));
  });
}

describe('the real server process (npm start path)', function () {
  this.timeout(120_000);

  it('with DATABASE_URL unset, starts an embedded PostgreSQL under .keygate/postgres, serves /healthz, and stops cleanly', async () => {
    const cwd = tempDir('kg-start-');
    // The embedded server runs as the unprivileged postgres user, who must be able to enter it.
    chmodSync(cwd, 0o755);
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    const child = spawn(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), 'serve'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
    try {
      const url = await waitForLine(child, /listening on (http:\/\/\S+)\n/, 90_000);
      const res = await fetch(`${url}/healthz`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ status: 'ok' });
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      expect(existsSync(join(cwd, '.keygate/postgres/PG_VERSION'))).to.equal(true);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).to.equal(0);
  });

  it('an invalid configuration stops the start with exit 1 and one line naming the field', async () => {
    const cwd = tempDir('kg-bad-');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(cwd, 'keygate.yaml'), 'apiKeys:\n  enabled: true\n  variant: B\n  maxKeysPerUser: 5\n');
    const child = spawn(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), 'serve'], { cwd, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((ok) => child.once('exit', ok));
    expect(code).to.equal(1);
    expect(stderr.trim().split('\n')).to.have.length(1);
    expect(stderr).to.match(/apiKeys\.maxKeysPerUser: not allowed under variant B/);
  });
});
