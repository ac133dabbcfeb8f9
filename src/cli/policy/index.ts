// `keygate policy <test|explain|lint|diff>`: the access matrix checked as data, with no database.
// `policy apply` writes to the database and lives with the other commands that need one.
import { wantsHelp } from '../args.ts';
import { CliError, type CliIo } from './common.ts';
import { diffCommand } from './diff.ts';
import { explainCommand } from './explain.ts';
import { lintCommand } from './lint.ts';
import { liveUsages } from './live.ts';
import { scopeCommand } from './scope-add.ts';
import { testCommand } from './test.ts';

export type { CliIo } from './common.ts';

const commands = {
  test: testCommand,
  explain: explainCommand,
  lint: lintCommand,
  diff: diffCommand,
  scope: scopeCommand,
} satisfies Record<string, (args: string[], io: CliIo) => Promise<number>>;

/** Each command's usage; typed by the table above, so a command without one does not compile. */
const usages: Record<keyof typeof commands, string> = {
  test: 'keygate policy test [FILES...] [--junit FILE] [--coverage] [--min-coverage P] [--json]',
  explain: `keygate policy explain --subject session|key|anonymous [--permissions reports:read,ai] [--role admin]
                       --method M --path P [--variant A|B | --policy FILE] [--model FILE] [--scopes FILE] [--json]`,
  lint: 'keygate policy lint [FILES...] [--scopes FILE]   (a .csv policy, or a scopes .yaml file)',
  diff: `keygate policy diff [OLD NEW | FILE] [--base REF] [--model FILE] [--old-scopes FILE] [--new-scopes FILE] [--json]
  without OLD NEW, inside a git checkout: the working policy (FILE, else the configured one), its model
  and scopes against the same files at REF (default HEAD)`,
  scope: 'keygate policy scope add NAME --route "[ACTION] METHODS PATH" [--route ...] [--actions read,write] [--label L] [--description D]',
};

/** Every policy subcommand and its usage, the file-only ones and those that need the database. */
export const policyUsages: Record<string, string> = { ...usages, ...liveUsages };

/** Every policy subcommand's usage, as `keygate policy --help` prints it. */
export const USAGE = `usage:\n${Object.values(policyUsages).map((u) => `  ${u}\n`).join('')}`;

const isCommand = (sub: string): sub is keyof typeof commands => Object.hasOwn(commands, sub);

/** `--help`/`-h` for a policy subcommand: its usage on stdout. */
export function policyHelp(sub: string | undefined, io: Pick<CliIo, 'stdout'>): number {
  io.stdout(sub !== undefined && Object.hasOwn(policyUsages, sub) ? `usage: ${policyUsages[sub]}\n` : USAGE);
  return 0;
}

/** Runs one policy subcommand; resolves to the exit code (0 success, 1 failure). */
export async function runPolicyCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined) {
    io.stderr(USAGE);
    return 1;
  }
  if (sub === 'help' || wantsHelp([sub])) return policyHelp(undefined, io);
  if (!isCommand(sub)) {
    io.stderr(`unknown policy command "${sub}"\n${USAGE}`);
    return 1;
  }
  if (wantsHelp(rest)) return policyHelp(sub, io);
  try {
    return await commands[sub](rest, io);
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
