import { expect } from 'chai';
import { chmodSync, existsSync } from 'node:fs';
import { tempDir } from '../../support/tmp.ts';
import { join } from 'node:path';
import { failedStart, startServe } from '../../support/serve-child.ts';

describe('the real server process (npm start path)', function () {
  this.timeout(120_000);

  it('with DATABASE_URL unset, starts an embedded PostgreSQL under .keygate/postgres, serves /healthz, and stops cleanly', async () => {
    const cwd = tempDir('kg-start-');
    // The embedded server runs as the unprivileged postgres user, who must be able to enter it.
    chmodSync(cwd, 0o755);
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    const server = startServe({ cwd, env });
    try {
      const url = await server.url;
      const res = await fetch(`${url}/healthz`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ status: 'ok' });
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      expect(existsSync(join(cwd, '.keygate/postgres/PG_VERSION'))).to.equal(true);
    } finally {
      expect(await server.stop()).to.equal(0);
    }
  });

  it('an invalid configuration stops the start with exit 1 and one line naming the field', async () => {
    const cwd = tempDir('kg-bad-');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(cwd, 'keygate.yaml'), 'apiKeys:\n  enabled: true\n  variant: B\n  maxKeysPerUser: 5\n');
    const { code, stderr } = await failedStart({ cwd, env: { ...process.env, PORT: '0' } });
    expect(code).to.equal(1);
    expect(stderr.trim().split('\n')).to.have.length(1);
    expect(stderr).to.match(/apiKeys\.maxKeysPerUser: not allowed under variant B/);
  });
});
