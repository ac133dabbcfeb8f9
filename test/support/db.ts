import { randomBytes } from 'node:crypto';
import { chmodSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/store/embedded.ts';
import { ROOT_HOME } from '../../src/store/embedded-root.ts';
import { tempDir } from './tmp.ts';

// Every test file makes databases of its own on the server named by DATABASE_URL (unset: an
// embedded PostgreSQL started once for the run), so runs and files never share state.

/** Preferred when free; else any free port, as `npm start` does, so a server already there never fails the run. */
const TEST_PORT = 54330;

let embedded: EmbeddedDatabase | null = null;
let wantedDir: string | null = null;
// One start for the whole run: when it fails, every file fails at once with the same reason
// instead of each trying again.
let starting: Promise<string> | null = null;

export function serverUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return Promise.resolve(process.env.DATABASE_URL);
  starting ??= (async () => {
    // Its own data directory, never the checkout's: a newcomer's `npm start` in the same clone
    // keeps .keygate/ to itself. Opened to the "postgres" user, which runs it under root.
    wantedDir = tempDir('kg-test-postgres-');
    chmodSync(wantedDir, 0o755);
    embedded = await startEmbeddedPostgres(resolve(wantedDir, 'data'), await freePort(TEST_PORT));
    return embedded.url;
  })();
  return starting;
}

/**
 * Removes what an embedded PostgreSQL kept outside the directory it was given: as root, data the
 * "postgres" user could not reach there is kept under /var/lib/keygate/<hash>/. The copied
 * binaries beside it are shared with `npm start` and stay.
 */
export function removeRelocatedData(db: EmbeddedDatabase, wanted: string): void {
  const hashed = dirname(db.dataDir);
  if (resolve(db.dataDir) !== resolve(wanted) && dirname(hashed) === ROOT_HOME) rmSync(hashed, { recursive: true, force: true });
}

export async function stopEmbedded(): Promise<void> {
  await starting?.catch(() => undefined);
  if (embedded && wantedDir) {
    await embedded.stop();
    removeRelocatedData(embedded, resolve(wantedDir, 'data'));
  }
  embedded = null;
  starting = null;
}

export interface TestDatabase { url: string; name: string; drop(): Promise<void> }

export async function createTestDatabase(label = 'kg'): Promise<TestDatabase> {
  const base = await serverUrl();
  const name = `${label}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect().catch((e: Error) => {
    const at = new URL(base);
    const how = process.env.DATABASE_URL ? 'start it, or unset DATABASE_URL for an embedded one' : 'the embedded one stopped';
    throw new Error(`the tests' PostgreSQL at ${at.hostname}:${at.port || 5432} does not answer (${e.message}): ${how}`);
  });
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
