import { ConfigError, loadConfig, type Config } from '../config.ts';
import { closeDatabase, migrateDatabase, openDatabase, withDirectPool, type OpenDatabase } from '../services/database.ts';
import { createAccountService } from '../services/accounts.ts';
import { systemClock } from '../services/clock.ts';
import { UsageError } from './args.ts';
import { runUserCommand, runOrgCommand } from './accounts.ts';
import { runPolicyCommand } from './policy/index.ts';
import { isLiveCommand, runLiveCommand } from './policy/live.ts';
import { exitOnSignals } from '../shutdown.ts';
import { userInfo } from 'node:os';

const USAGE = `usage: keygate <command>
  serve                              start the gateway (default)
  migrate                            apply database migrations
  user create --email E --password P [--name N] [--admin] [--plan P]
  user set-role --email E --role admin|user
  user set-plan --email E --plan P
  user ban|unban --email E
  org set-plan --slug S --plan P
  policy test|explain|lint|diff ...
  policy apply [FILE] [--dry-run | --shadow] [--force] [--by WHO] [--message TEXT]
  policy history [--limit N] | rollback VERSION | status | shadow report|off | promote`;

/**
 * What `serve` starts. Handed in by bin/keygate.js rather than imported, so that nothing in src/
 * imports the composition root (src/main.ts).
 */
export interface CliEntry {
  serve(config: Config): Promise<{ url: string; shutdown(): Promise<unknown> }>;
}

/** Who applies a policy when --by is not given: $USER, else the account running the command (a container's root has no $USER). */
function operatorName(): string {
  if (process.env.USER) return process.env.USER;
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

async function withDatabase<T>(config: Config, fn: (db: OpenDatabase) => Promise<T>, runMigrations = true): Promise<T> {
  const db = await openDatabase(config, undefined, runMigrations, true);
  try {
    return await fn(db);
  } finally {
    await closeDatabase(db);
  }
}

function withoutConfigFlag(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--config') i += 1;
    else if (!args[i]!.startsWith('--config=')) out.push(args[i]!);
  }
  return out;
}

const accountsOn = (db: OpenDatabase, config: Config) =>
  createAccountService({ pool: db.pool, clock: systemClock, sessionTtlDays: config.auth.sessionTtlDays });

export async function main(argv: string[], entry: CliEntry): Promise<number> {
  const [command = 'serve', ...rest] = argv;
  const io = { stdout: (s: string) => process.stdout.write(s + '\n'), stderr: (s: string) => process.stderr.write(s + '\n'), cwd: process.cwd() };
  try {
    if (command === 'help' || command === '--help') {
      io.stdout(USAGE);
      return 0;
    }
    const config = loadConfig({ argv });
    if (command === 'policy') {
      // Every policy command reads the configuration serve reads (CONTRACT 13); output arrives as
      // whole lines, and --config was read above and is no subcommand's flag.
      const policyIo = { ...io, stdout: (s: string) => process.stdout.write(s), stderr: (s: string) => process.stderr.write(s), policy: config.policy };
      const args = withoutConfigFlag(rest);
      if (!isLiveCommand(args[0])) return await runPolicyCommand(args, policyIo);
      // Apply takes the policy lock and signals the fleet: on the direct URL when one is given.
      return await withDatabase(config, (db) => withDirectPool(db.directUrl, (direct) => runLiveCommand(args, { io: policyIo, pool: direct, config, user: operatorName() })));
    }
    switch (command) {
      case 'serve': {
        const gateway = await entry.serve(config);
        io.stdout(`keygate listening on ${gateway.url}`);
        exitOnSignals(async () => void (await gateway.shutdown()), io.stderr);
        return await new Promise<number>(() => {});
      }
      case 'migrate':
        return await withDatabase(config, async (db) => {
          const { applied } = await migrateDatabase(db);
          io.stdout(applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply');
          return 0;
        }, false);
      case 'user':
        return await withDatabase(config, (db) => runUserCommand(accountsOn(db, config), config, rest, io));
      case 'org':
        return await withDatabase(config, (db) => runOrgCommand(accountsOn(db, config), config, rest, io));
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
