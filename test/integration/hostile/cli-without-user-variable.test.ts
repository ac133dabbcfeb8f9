import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { packageRoot } from '../../../src/config.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

// A fresh container runs as root with no $USER (docker exec, systemd, cron): `policy apply` then
// recorded every version as applied by "unknown", and the history could not tell operators apart.

const run = promisify(execFile);

describe('hostile: policy apply where $USER is unset', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  before(async () => (db = await createTestDatabase('nouser')));
  after(async () => db?.drop());

  it('when neither --by nor $USER names the operator, then the version is recorded under the account running the command', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, KEYGATE_CONFIG: resolve(packageRoot, 'test/fixtures/cli.yaml') };
    delete env.USER;
    const keygate = (...args: string[]) => run(process.execPath, [resolve(packageRoot, 'bin/keygate.js'), ...args], { env, cwd: packageRoot });
    await keygate('migrate');
    await keygate('policy', 'apply', '--message', 'no user');
    const { stdout } = await keygate('policy', 'history');
    expect(stdout).to.match(new RegExp(`^\\* 1 [0-9a-f]{12} \\S+ ${userInfo().username} no user$`, 'm'));
  });
});
