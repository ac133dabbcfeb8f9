import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { packageRoot } from '../../../src/config.ts';
import { createTestDatabase } from '../../support/db.ts';
import { tempDir } from '../../support/tmp.ts';
import { startServe } from '../../support/serve-child.ts';

// The serving process runs the build made at install, without tsx's compiler loaded.


describe('npm start runs the compiled build', function () {
  this.timeout(120_000);

  it('serves from dist/, with the page bundle built at install (memory is measured by npm run bench, not asserted here)', async () => {
    const db = await createTestDatabase();
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
    delete env.REDIS_URL;
    const server = startServe({ cwd: tempDir('kg-compiled-'), env });
    try {
      const url = await server.url;
      expect((await fetch(`${url}/healthz`)).status).to.equal(200);
      expect(existsSync(resolve(packageRoot, 'dist/cli.js'))).to.equal(true);
      // The page bundle comes from dist/assets/, built at install, not from esbuild in the server.
      const page = await (await fetch(`${url}/sign-in`)).text();
      const script = /src="(\/assets\/sign-in-[^"]+\.js)"/.exec(page)?.[1];
      expect(script).to.be.a('string');
      expect(existsSync(resolve(packageRoot, 'dist', script!.slice(1)))).to.equal(true);
    } finally {
      await server.stop();
      await db.drop();
    }
  });
});
