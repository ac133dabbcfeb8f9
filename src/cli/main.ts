import { ConfigError, loadConfig, type Config } from '../config.ts';
import { openDatabase, startGateway } from '../main.ts';
import { migrate } from '../store/migrate.ts';
import { migrationsDir } from '../main.ts';
import { runUserCommand, runOrgCommand } from './accounts.ts';
import { runPolicyCommand } from './policy/index.ts';
import { runPolicyApply } from './policy-apply.ts';

const USAGE = `usage: keygate <command>
  serve                              start the gateway (default)
  migrate                            apply database migrations
  user create --email E --password P [--name N] [--admin] [--plan P]
  user set-role --email E --role admin|user
  user set-plan --email E --plan P
  user ban|unban --email E
  org set-plan --slug S --plan P
  policy test|explain|lint|diff|apply ...`;

export class UsageError extends Error {}

/** `--name value` flags; bare `--flag` is true. */
export function flags(args: string[]): Map<string, string | true> {
  const out = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) continue;
    const eq = a.indexOf('=');
    if (eq > 0) out.set(a.slice(2, eq), a.slice(eq + 1));
    else if (args[i + 1] !== undefined && !args[i + 1]!.startsWith('--')) out.set(a.slice(2), args[++i]!);
    else out.set(a.slice(2), true);
  }
  return out;
}

export function required(f: Map<string, string | true>, name: string): string {
  const v = f.get(name);
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

async function withDatabase<T>(config: Config, fn: (pool: Awaited<ReturnType<typeof openDatabase>>['pool']) => Promise<T>, runMigrations = true): Promise<T> {
  const { pool, embedded } = await openDatabase(config, undefined, runMigrations);
  try {
    return await fn(pool);
  } finally {
    await pool.end();
    await embedded?.stop();
  }
}

export async function main(argv: string[]): Promise<number> {
  const [command = 'serve', ...rest] = argv;
  const io = { stdout: (s: string) => process.stdout.write(s + '\n'), stderr: (s: string) => process.stderr.write(s + '\n'), cwd: process.cwd() };
  try {
    if (command === 'help' || command === '--help') {
      io.stdout(USAGE);
      return 0;
    }
    // Policy tests, lint, explain and diff read files only: no configuration or database needed.
    if (command === 'policy' && rest[0] !== 'apply') return await runPolicyCommand(rest, io);
    const config = loadConfig({ argv });
    switch (command) {
      case 'serve': {
        const gateway = await startGateway(config);
        io.stdout(`keygate listening on ${gateway.url}`);
        const stop = async () => {
          await gateway.close();
          process.exit(0);
        };
        process.once('SIGINT', stop).once('SIGTERM', stop);
        return await new Promise<number>(() => {});
      }
      case 'migrate':
        return await withDatabase(config, async (pool) => {
          const { applied } = await migrate(pool, migrationsDir);
          io.stdout(applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply');
          return 0;
        }, false);
      case 'user':
        return await withDatabase(config, (pool) => runUserCommand(pool, config, rest, io));
      case 'org':
        return await withDatabase(config, (pool) => runOrgCommand(pool, config, rest, io));
      case 'policy':
        return await withDatabase(config, (pool) => runPolicyApply(pool, config, io));
      default:
        throw new UsageError(`unknown command "${command}"\n${USAGE}`);
    }
  } catch (e) {
    if (e instanceof ConfigError) io.stderr(`keygate: invalid configuration: ${e.message}`);
    else if (e instanceof UsageError) io.stderr(`keygate: ${e.message}`);
    else io.stderr(`keygate: ${(e as Error).message.split('\n')[0]}`);
    return 1;
  }
}
