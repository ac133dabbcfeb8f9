import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/store/embedded.ts';

// Every test file makes databases of its own on the server named by DATABASE_URL (unset: an
// embedded PostgreSQL started once for the run), so runs and files never share state.

let embedded: EmbeddedDatabase | null = null;
let adminUrl: string | null = null;

export async function serverUrl(): Promise<string> {
  if (adminUrl) return adminUrl;
  if (process.env.DATABASE_URL) {
    adminUrl = process.env.DATABASE_URL;
  } else {
    embedded = await startEmbeddedPostgres(resolve('.keygate/test-postgres'), 54330);
    adminUrl = embedded.url;
  }
  return adminUrl;
}

export async function stopEmbedded(): Promise<void> {
  await embedded?.stop();
  embedded = null;
  adminUrl = null;
}

export interface TestDatabase { url: string; name: string; drop(): Promise<void> }

export async function createTestDatabase(label = 'kg'): Promise<TestDatabase> {
  const base = await serverUrl();
  const name = `${label}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
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
