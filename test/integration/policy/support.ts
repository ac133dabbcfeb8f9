import { cp, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadConfig, type Config } from '../../../src/config.ts';
import type { Pool } from '../../../src/store/db.ts';
import { runLiveCommand } from '../../../src/cli/policy/live.ts';
import type { Clock } from '../../../src/services/clock.ts';
import { tempDir } from '../../support/tmp.ts';

export const root = resolve(import.meta.dirname, '../../..');

/** A copy of the shipped policies/ (model, both variants, suites) an operator could edit. */
export async function policyCopy(): Promise<{ dir: string; file: string; model: string; append(line: string): Promise<void> }> {
  const dir = join(tempDir('kg-lifecycle-'), 'policies');
  await cp(join(root, 'policies'), dir, { recursive: true });
  const file = join(dir, 'variant-a.csv');
  return { dir, file, model: join(dir, 'model.conf'), append: async (line) => writeFile(file, `${await readFile(file, 'utf8')}\n${line}\n`) };
}

export function configFor(databaseUrl: string, files: { file: string; model: string }): Config {
  return loadConfig({ env: { DATABASE_URL: databaseUrl }, overrides: { policy: { file: files.file, model: files.model } } });
}

export interface CliRun { code: number; out: string; err: string }

/** `keygate policy ARGS` as the CLI runs it, against a pool and configuration of the test's. */
export async function policyCli(pool: Pool, config: Config, args: string[], clock?: Clock): Promise<CliRun> {
  let out = '';
  let err = '';
  const io = { stdout: (s: string) => void (out += s), stderr: (s: string) => void (err += s), cwd: root, policy: config.policy };
  const code = await runLiveCommand(args, { io, pool, config, user: 'tester', clock });
  return { code, out, err };
}
