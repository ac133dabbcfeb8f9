import { expect } from 'chai';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../../src/store/embedded.ts';
import { packageRoot } from '../../../src/config.ts';
import { removeRelocatedData } from '../../support/db.ts';
import { tempDir } from '../../support/tmp.ts';

// The README's first admin: `npx keygate user create … --admin` while `npm start` runs, both on the
// embedded PostgreSQL. The command tried to start a second postmaster on the server's data
// directory, PostgreSQL refused (postmaster.pid exists), and every `policy`/`user` command that
// needs the database exited 1 until the server was stopped.

async function answers(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one;
  } finally {
    await client.end();
  }
}

describe('hostile: a command beside a running server, both on the embedded PostgreSQL', function () {
  this.timeout(120_000);
  let server: EmbeddedDatabase | undefined;
  let dir: string;
  before(async () => {
    dir = tempDir('kg-beside-');
    server = await startEmbeddedPostgres(dir, 0, packageRoot);
  });
  after(async () => {
    await server?.stop();
    if (server) removeRelocatedData(server, dir);
  });

  it('when the command finds the data directory in use, then it uses that PostgreSQL, and its end leaves the server\'s running', async () => {
    const cli = await startEmbeddedPostgres(dir, 0, packageRoot, true);
    expect(cli.url).to.equal(server!.url);
    expect(await answers(cli.url)).to.equal(1);
    await cli.stop();
    expect(await answers(server!.url), 'the server lost its database when the command ended').to.equal(1);
  });

  it('when a second server starts on that data, then it still stops with its one line (sharing would lose it the database when the first stops)', async () => {
    let refused: unknown = null;
    await startEmbeddedPostgres(dir, 0, packageRoot).then((d) => d.stop(), (e: unknown) => (refused = e));
    expect(String(refused)).to.match(/set DATABASE_URL$/);
  });
});
