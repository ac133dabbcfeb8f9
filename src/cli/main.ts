import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, packageRoot, type Config } from '../config.ts';
import { closeDatabase, migrateDatabase, openDatabase, withDirectPool, type OpenDatabase } from '../services/database.ts';
import { createAccountService } from '../services/accounts.ts';
import { systemClock } from '../services/clock.ts';
import { parseFlags, UsageError, wantsHelp, withoutConfigFlag, type Usage } from './args.ts';
import { orgCommands, runUserCommand, runOrgCommand, usageOf, userCommands } from './accounts.ts';
import { USAGE as POLICY_USAGE, policyUsages, runPolicyCommand } from './policy/index.ts';
import { isLiveCommand, runLiveCommand } from './policy/live.ts';
import { exitOnSignals } from '../shutdown.ts';
import { runWebhookCommand, webhookCommands, webhookUsage } from './webhook.ts';
import { createWebhookService } from '../services/events/webhooks.ts';
import { userInfo } from 'node:os';

const subcommandsOf = (usages: Record<string, string>): Record<string, Usage> => Object.fromEntries(Object.entries(usages).map(([name, usage]) => [name, { usage }]));

/**
 * Every command and its subcommands, with the usage `--help` prints: the dispatch below refuses
 * what is not here, and the CLI test walks this table, so a new command cannot miss its help.
 */
export const commandTable: Record<string, Usage> = {
  serve: { usage: 'keygate serve [--config FILE]\n  start the gateway (the command when none is given)' },
  migrate: { usage: 'keygate migrate [--config FILE]\n  apply the database migrations' },
  user: { usage: usageOf(userCommands), subcommands: userCommands },
  org: { usage: usageOf(orgCommands), subcommands: orgCommands },
  webhook: { usage: webhookUsage(), subcommands: webhookCommands },
  policy: {
    usage: POLICY_USAGE.trimEnd(),
    subcommands: subcommandsOf(policyUsages),
  },
};

const USAGE = `usage: keygate <command> [--config FILE] (--help on any command and subcommand for its usage)
  serve                              start the gateway (default)
  migrate                            apply database migrations
  user create --email E --password P [--name N] [--admin] [--plan P]
  user list [--q PREFIX] [--json]
  user set-role --email E --role admin|user
  user set-plan --email E --plan P
  user ban|unban --email E
  org set-plan --slug S --plan P
  webhook add|list|remove|rotate|test|deliveries|redeliver ... [--json]
  policy test|explain|lint|diff ...
  policy apply [FILE] [--dry-run | --shadow] [--force] [--by WHO] [--message TEXT] [--wait SECONDS]
  policy history [--limit N] | rollback VERSION | status [--wait SECONDS] | shadow report|off | promote
  keygate --version`;

export function version(): string {
  return (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The usage `--help` asks for: of the subcommand named, else of the command. */
function usageFor(command: Usage, args: readonly string[]): string {
  const sub = args.find((a) => !a.startsWith('-'));
  const usage = sub !== undefined && command.subcommands && Object.hasOwn(command.subcommands, sub) ? command.subcommands[sub]!.usage : command.usage;
  return usage.startsWith('usage:') ? usage : `usage: ${usage}`;
}

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

const accountsOn = (db: OpenDatabase, config: Config) =>
  createAccountService({ pool: db.pool, clock: systemClock, sessionTtlDays: config.auth.sessionTtlDays });

export async function main(argv: string[], entry: CliEntry): Promise<number> {
  const [command = 'serve', ...rest] = argv;
  const io = { stdout: (s: string) => process.stdout.write(s + '\n'), stderr: (s: string) => process.stderr.write(s + '\n'), cwd: process.cwd() };
  try {
    // Help and the version come before the configuration is read: they do nothing else.
    if (command === 'help' || command === '--help' || command === '-h') {
      io.stdout(USAGE);
      return 0;
    }
    if (command === '--version') {
      io.stdout(version());
      return 0;
    }
    const known = Object.hasOwn(commandTable, command) ? commandTable[command]! : undefined;
    if (!known) throw new UsageError(`unknown command "${command}"\n${USAGE}`);
    const args = withoutConfigFlag(rest);
    if (wantsHelp(args)) {
      io.stdout(usageFor(known, args));
      return 0;
    }
    // A mistaken subcommand is told before the database is opened (and migrated).
    const subs = command === 'policy' ? undefined : known.subcommands;
    if (subs && !Object.hasOwn(subs, args[0] ?? '')) throw new UsageError(`${args[0] ? `unknown subcommand "${args[0]}"\n` : ''}${known.usage}`);
    const config = loadConfig({ argv });
    if (command === 'policy') {
      // Every policy command reads the configuration serve reads; output arrives as
      // whole lines, and --config was read above and is no subcommand's flag.
      const policyIo = { ...io, stdout: (s: string) => process.stdout.write(s), stderr: (s: string) => process.stderr.write(s), policy: config.policy };
      if (!isLiveCommand(args[0])) return await runPolicyCommand(args, policyIo);
      // Apply takes the policy lock and signals the fleet: on the direct URL when one is given.
      return await withDatabase(config, (db) => withDirectPool(db.directUrl, (direct) => runLiveCommand(args, { io: policyIo, pool: direct, config, user: operatorName() })));
    }
    switch (command) {
      case 'serve': {
        parseFlags(args, {});
        const gateway = await entry.serve(config);
        io.stdout(`keygate listening on ${gateway.url}`);
        exitOnSignals(async () => void (await gateway.shutdown()), io.stderr);
        return await new Promise<number>(() => {});
      }
      case 'migrate':
        parseFlags(args, {});
        return await withDatabase(config, async (db) => {
          const { applied } = await migrateDatabase(db);
          io.stdout(applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply');
          return 0;
        }, false);
      case 'user':
        return await withDatabase(config, (db) => runUserCommand(accountsOn(db, config), config, args, io));
      case 'org':
        return await withDatabase(config, (db) => runOrgCommand(accountsOn(db, config), config, args, io));
      case 'webhook':
        return await withDatabase(config, (db) => runWebhookCommand(createWebhookService({ pool: db.pool, config, clock: systemClock }), config, args, io));
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
