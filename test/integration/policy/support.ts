import { cp, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadConfig, type Config } from '../../../src/config.ts';
import { createPool, type Pool } from '../../../src/store/db.ts';
import { startTestGateway, testClock, type TestGateway } from '../../support/gateway.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { runLiveCommand } from '../../../src/cli/policy/live.ts';
import type { Clock } from '../../../src/services/clock.ts';
import { tempDir } from '../../support/tmp.ts';

export const root = resolve(import.meta.dirname, '../../..');
const HOUR = 3_600_000;

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

export interface TwoInstances {
  db: TestDatabase;
  pool: Pool;
  config: Config;
  files: Awaited<ReturnType<typeof policyCopy>>;
  a: TestGateway;
  b: TestGateway;
  cli(...args: string[]): Promise<CliRun>;
}

/**
 * Before each test: a database of its own, a copy of the shipped policy files, two gateways on
 * them (heartbeats an hour apart, so only what a test does moves the fleet), and the CLI pointed at
 * the same database and files. `use` is handed the parts; after each test all of it is stopped.
 */
export function twoInstances(name: string, use: (s: TwoInstances) => void): void {
  let s: TwoInstances | undefined;
  beforeEach(async () => {
    const db = await createTestDatabase(name);
    const files = await policyCopy();
    const gatewayConfig = { policy: { file: files.file, model: files.model } };
    const a = await startTestGateway({ database: db, config: gatewayConfig, heartbeatMs: HOUR, webhookPollMs: HOUR, clock: testClock() });
    const b = await startTestGateway({ database: db, config: gatewayConfig, heartbeatMs: HOUR, webhookPollMs: HOUR, clock: testClock() });
    const pool = createPool(db.url);
    const config = configFor(db.url, files);
    s = { db, pool, config, files, a, b, cli: (...args: string[]) => policyCli(pool, config, args) };
    use(s);
  });
  afterEach(async () => {
    if (!s) return;
    await s.a.stop();
    await s.b.stop().catch(() => {});
    await s.pool.end();
    await s.db.drop();
    s = undefined;
  });
}
