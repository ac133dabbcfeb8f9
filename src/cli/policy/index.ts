// `keygate policy <test|explain|lint|diff>`: the access matrix checked as data, with no database.
// `policy apply` writes to the database and lives with the other commands that need one.
import { CliError, type CliIo } from './common.ts';
import { diffCommand } from './diff.ts';
import { explainCommand } from './explain.ts';
import { lintCommand } from './lint.ts';
import { scopeCommand } from './scope-add.ts';
import { testCommand } from './test.ts';

export type { CliIo } from './common.ts';

const USAGE = `usage:
  keygate policy test [FILES...] [--junit FILE] [--coverage] [--min-coverage P]
  keygate policy explain --subject session|key|anonymous [--permissions reports:read,ai] [--role admin]
                         --method M --path P [--variant A|B | --policy FILE] [--model FILE] [--scopes FILE]
  keygate policy lint [FILES...] [--scopes FILE]
  keygate policy scope add NAME --route "[ACTION] METHODS PATH" [--route ...] [--actions read,write] [--label L] [--description D]
  keygate policy diff OLD NEW [--model FILE] [--old-scopes FILE] [--new-scopes FILE]
  keygate policy apply [FILE] [--dry-run | --shadow] [--force] [--by WHO] [--message TEXT]
  keygate policy history [--limit N]
  keygate policy rollback VERSION [--by WHO]
  keygate policy status
  keygate policy shadow report|off
  keygate policy promote [--force] [--by WHO]
`;

const commands: Record<string, (args: string[], io: CliIo) => Promise<number>> = {
  test: testCommand,
  explain: explainCommand,
  lint: lintCommand,
  diff: diffCommand,
  scope: scopeCommand,
};

export const policySubcommands = Object.keys(commands);

/** Runs one policy subcommand; resolves to the exit code (0 success, 1 failure). */
export async function runPolicyCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === 'help' || sub === '--help') {
    (sub === undefined ? io.stderr : io.stdout)(USAGE);
    return sub === undefined ? 1 : 0;
  }
  const command = commands[sub];
  if (!command) {
    io.stderr(`unknown policy command "${sub}"\n${USAGE}`);
    return 1;
  }
  try {
    return await command(rest, io);
  } catch (e) {
    // parseArgs throws TypeErrors with a code for unknown or malformed flags: the user's mistake.
    const code = (e as { code?: unknown }).code;
    if (e instanceof CliError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
      io.stderr(`${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  }
}
