import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pool } from './db.ts';

// Any fixed number works; it only has to be the same for every instance of keygate.
const MIGRATION_LOCK = 0x6b657967;

export interface MigrationResult { applied: string[] }

/**
 * Applies the forward-only SQL files of `dir` in name order, each once and in its own transaction.
 * A session-level advisory lock makes a second instance starting at the same time wait and then
 * find nothing left to do.
 */
export async function migrate(pool: Pool, dir: string): Promise<MigrationResult> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(join(dir, file), 'utf8');
      try {
        await client.query('BEGIN');
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw new Error(`migration ${file} failed: ${(e as Error).message}`);
      }
      applied.push(file);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
  return { applied };
}
