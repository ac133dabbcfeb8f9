import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { packageRoot } from '../../../src/config.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { freePort } from '../../support/free-port.ts';
import { startServe, type ServeChild } from '../../support/serve-child.ts';
import { tempDir } from '../../support/tmp.ts';
import { until } from '../../support/until.ts';

// Every curl in README.md and docs/*.md, run as a reader would: the shell blocks of one file in
// order, in one shell, against a server of its own started as `npm start` starts it on a fresh
// database. Only the address changes (the docs say 127.0.0.1:3000, which may be taken here). A curl
// outside a shell block (inline, with a placeholder) cannot be run, so there is none.
//
// A shell block without curl that writes keygate.yaml is a setup step the reader runs in another
// terminal before restarting the server (README's upstream on port 4000): it runs first, in the
// server's directory, on a free port instead of 4000, and stays running until the file is done.

const DOCUMENTED = 'http://127.0.0.1:3000';
const DOCUMENTED_UPSTREAM_PORT = /(?<=127\.0\.0\.1:|listen\()4000\b/g;

const files = ['README.md', ...readdirSync(join(packageRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

function curlBlocks(text: string): string[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => /\bcurl\b/.test(b));
}

const curlsIn = (text: string) => text.match(/\bcurl\s/g)?.length ?? 0;

function setupBlocks(text: string): string[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => !/\bcurl\b/.test(b) && /> keygate\.yaml/.test(b));
}

const accepts = (port: number) =>
  new Promise<boolean>((ok) => {
    const socket = connect(port, '127.0.0.1', () => (socket.destroy(), ok(true)));
    socket.once('error', () => ok(false));
  });

describe('README.md and docs/*.md: every curl runs as written from a fresh start', function () {
  this.timeout(180_000);

  it('every curl sits in a shell block', () => {
    for (const file of files) {
      const text = readFileSync(join(packageRoot, file), 'utf8');
      expect(curlBlocks(text).reduce((n, b) => n + curlsIn(b), 0), file).to.equal(curlsIn(text));
    }
  });

  for (const file of files) {
    const text = readFileSync(join(packageRoot, file), 'utf8');
    const blocks = curlBlocks(text);
    if (blocks.length === 0) continue;
    const setups = setupBlocks(text);
    describe(file, () => {
      let db: TestDatabase | undefined;
      let server: ServeChild | undefined;
      const helpers: ChildProcess[] = [];
      let url = '';
      let upstreamPort = 0;
      before(async () => {
        db = await createTestDatabase('docs');
        const cwd = tempDir('kg-docs-');
        upstreamPort = await freePort();
        for (const block of setups) {
          const script = block.replace(DOCUMENTED_UPSTREAM_PORT, String(upstreamPort));
          const helper = spawn('bash', ['-c', script], { cwd, detached: true, stdio: 'ignore' });
          helpers.push(helper);
          await until(`${file}: the setup block's upstream on ${upstreamPort}`, () => accepts(upstreamPort), 20_000);
        }
        const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
        delete env.REDIS_URL;
        delete env.KEYGATE_CONFIG;
        server = startServe({ cwd, env });
        url = await server.url;
      });
      after(async () => {
        await server?.stop();
        for (const helper of helpers) if (helper.exitCode === null) process.kill(-helper.pid!, 'SIGTERM');
        await db?.drop();
      });

      it(`its ${blocks.length} shell block${blocks.length === 1 ? '' : 's'} with curl, in order, each request answered 2xx`, () => {
        // --fail-with-body: a 4xx or 5xx ends the script, with the problem document in the output.
        const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body --silent --show-error "$@"; }', ...blocks]
          .join('\n')
          .replaceAll(DOCUMENTED, url)
          .replace(DOCUMENTED_UPSTREAM_PORT, String(upstreamPort));
        const r = spawnSync('bash', ['-c', script], { cwd: tempDir('kg-docs-shell-'), encoding: 'utf8' });
        expect(r.status, `${script}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`).to.equal(0);
      });
    });
  }
});
