import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, packageRoot, type Config } from '../config.ts';
import { closeDatabase, migrateDatabase, openDatabase, withDirectPool, type OpenDatabase } from '../services/database.ts';
import { createAccountService } from '../services/accounts.ts';
import { systemClock } from '../services/clock.ts';
import { parseFlags, UsageError, wantsHelp, withoutConfigFlag } from './args.ts';
import { helpOf, listOf, type Usage } from './help.ts';
import { orgCommands, runUserCommand, runOrgCommand, userCommands } from './accounts.ts';
import { policyUsages, runPolicyCommand } from './policy/index.ts';
import { isLiveCommand, runLiveCommand } from './policy/live.ts';
import { exitOnSignals } from '../shutdown.ts';
import { runWebhookCommand, webhookCommands } from './webhook.ts';
import { createWebhookService } from '../services/events/webhooks.ts';
import { userInfo } from 'node:os';

/**
 * Every command and its subcommands, with the help `--help` prints: the dispatch below refuses
 * what is not here, the command list is drawn from it, and the CLI test walks it, so a new command
 * cannot miss its help. A new command is one more entry (with `about` and `examples`).
 */
export const commandTable: Record<string, Usage> = {
  serve: {
    usage: 'keygate serve [--config FILE]',
    about: 'Starts the gateway on HOST:PORT (127.0.0.1:3000 unless set), with an embedded PostgreSQL when '
      + 'DATABASE_URL is unset; `npm start` runs this.',
    examples: ['npx keygate serve', 'PORT=8080 npx keygate serve'],
  },
  migrate: {
    usage: 'keygate migrate [--config FILE]',
    about: 'Applies the database migrations not applied yet (serve does this too, at start).',
    examples: ['npx keygate migrate'],
  },
  user: { usage: 'keygate user <subcommand> [flags]', about: 'Creates and manages accounts from the shell.', subcommands: userCommands },
  org: { usage: 'keygate org <subcommand> [flags]', about: "Sets an organization's plan.", subcommands: orgCommands },
  webhook: {
    usage: 'keygate webhook <subcommand> [flags]', about: 'Registers and inspects the signed webhook endpoints events are sent to.',
    subcommands: webhookCommands,
  },
  policy: {
    usage: 'keygate policy <subcommand> [flags]',
    about: 'Checks, explains, stores and rolls back the access policy.',
    subcommands: policyUsages,
  },
};

/** The command list: what `keygate` with no command, `--help` and an unknown command print. */
function commandList(): string {
  const leaves: Record<string, Usage> = {};
  for (const [name, c] of Object.entries(commandTable)) {
    if (!c.subcommands) leaves[name] = c;
    else for (const [sub, u] of Object.entries(c.subcommands)) leaves[`${name} ${sub}`] = u;
  }
  return `usage: keygate <command> [--config FILE]

Add --help (or -h) to any command or subcommand for what it does and an example.

${listOf(leaves)}
  keygate --version`;
}

export function version(): string {
  return (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The help `--help` asks for: of the subcommand named, else of the command. */
function usageFor(command: Usage, args: readonly string[]): string {
  const sub = args.find((a) => !a.startsWith('-'));
  return helpOf(sub !== undefined && command.subcommands && Object.hasOwn(command.subcommands, sub) ? command.subcommands[sub]! : command);
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
  const [command = 'help', ...rest] = argv;
  const io = {
    stdout: (s: string) => process.stdout.write(s + '\n'),
    stderr: (s: string) => process.stderr.write(s + '\n'),
    cwd: process.cwd(),
  };
  try {
    // Help and the version come before the configuration is read: they do nothing else.
    // No command at all prints the list too: starting a server is asked for by name (`serve`).
    if (command === 'help' || command === '--help' || command === '-h') {
      io.stdout(commandList());
      return 0;
    }
    if (command === '--version') {
      io.stdout(version());
      return 0;
    }
    const known = Object.hasOwn(commandTable, command) ? commandTable[command]! : undefined;
    if (!known) throw new UsageError(`unknown command "${command}"\n${commandList()}`);
    const args = withoutConfigFlag(rest);
    if (wantsHelp(args)) {
      io.stdout(usageFor(known, args));
      return 0;
    }
    // A mistaken subcommand is told before the database is opened (and migrated).
    const subs = command === 'policy' ? undefined : known.subcommands;
    if (subs && !Object.hasOwn(subs, args[0] ?? '')) {
      throw new UsageError(`${args[0] ? `unknown subcommand "${args[0]}"\n` : ''}${helpOf(known)}`);
    }
    const config = loadConfig({ argv });
    if (command === 'policy') {
      // Every policy command reads the configuration serve reads; output arrives as
      // whole lines, and --config was read above and is no subcommand's flag.
      const policyIo = {
        ...io, stdout: (s: string) => process.stdout.write(s), stderr: (s: string) => process.stderr.write(s), policy: config.policy,
      };
      if (!isLiveCommand(args[0])) return await runPolicyCommand(args, policyIo);
      // Apply takes the policy lock and signals the fleet: on the direct URL when one is given.
      return await withDatabase(config, (db) => withDirectPool(db.directUrl, (direct) =>
        runLiveCommand(args, { io: policyIo, pool: direct, config, user: operatorName() })));
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
        return await withDatabase(config, (db) =>
          runWebhookCommand(createWebhookService({ pool: db.pool, config, clock: systemClock }), config, args, io));
      default:
        throw new UsageError(`unknown command "${command}"\n${commandList()}`);
    }
  } catch (e) {
    if (e instanceof ConfigError) io.stderr(`keygate: invalid configuration: ${e.message}`);
    else if (e instanceof UsageError) io.stderr(`keygate: ${e.message}`);
    else io.stderr(`keygate: ${(e as Error).message.split('\n')[0]}`);
    return 1;
  }
}
