import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../../src/config.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { startServe, type ServeChild } from '../../support/serve-child.ts';
import { tempDir } from '../../support/tmp.ts';

// Every curl in README.md and docs/*.md, run as a reader would: the shell blocks of one file in
// order, in one shell, against a server of its own started as `npm start` starts it on a fresh
// database. Only the address changes (the docs say 127.0.0.1:3000, which may be taken here). A curl
// outside a shell block (inline, with a placeholder) cannot be run, so there is none.

const DOCUMENTED = 'http://127.0.0.1:3000';

const files = ['README.md', ...readdirSync(join(packageRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

function curlBlocks(text: string): string[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => /\bcurl\b/.test(b));
}

const curlsIn = (text: string) => text.match(/\bcurl\s/g)?.length ?? 0;

describe('README.md and docs/*.md: every curl runs as written from a fresh start', function () {
  this.timeout(180_000);

  it('every curl sits in a shell block', () => {
    for (const file of files) {
      const text = readFileSync(join(packageRoot, file), 'utf8');
      expect(curlBlocks(text).reduce((n, b) => n + curlsIn(b), 0), file).to.equal(curlsIn(text));
    }
  });

  for (const file of files) {
    const blocks = curlBlocks(readFileSync(join(packageRoot, file), 'utf8'));
    if (blocks.length === 0) continue;
    describe(file, () => {
      let db: TestDatabase | undefined;
      let server: ServeChild | undefined;
      let url = '';
      before(async () => {
        db = await createTestDatabase('docs');
        const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
        delete env.REDIS_URL;
        delete env.KEYGATE_CONFIG;
        server = startServe({ cwd: tempDir('kg-docs-'), env });
        url = await server.url;
      });
      after(async () => {
        await server?.stop();
        await db?.drop();
      });

      it(`its ${blocks.length} shell block${blocks.length === 1 ? '' : 's'} with curl, in order, each request answered 2xx`, () => {
        // --fail-with-body: a 4xx or 5xx ends the script, with the problem document in the output.
        const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body --silent --show-error "$@"; }', ...blocks]
          .join('\n')
          .replaceAll(DOCUMENTED, url);
        const r = spawnSync('bash', ['-c', script], { cwd: tempDir('kg-docs-shell-'), encoding: 'utf8' });
        expect(r.status, `${script}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`).to.equal(0);
      });
    });
  }
});
