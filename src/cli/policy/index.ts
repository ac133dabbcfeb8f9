// `keygate policy <test|explain|lint|diff>`: the access matrix checked as data, with no database.
// `policy apply` writes to the database and lives with the other commands that need one.
import { wantsHelp } from '../args.ts';
import { helpOf, listOf, type Usage } from '../help.ts';
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

/** Each command's help; typed by the table above, so a command without one does not compile. */
const usages: Record<keyof typeof commands, Usage> = {
  test: {
    usage: 'keygate policy test [FILES...] [--junit FILE] [--coverage] [--min-coverage P] [--json]',
    about: "Runs the policy's suites (default: every file in the policy's tests/ folder) and says which cases fail and why.",
    examples: ['npx keygate policy test --coverage', 'npx keygate policy test policies/tests/variant-a.yaml --junit policy-tests.xml'],
  },
  explain: {
    usage: `keygate policy explain --subject session|key|anonymous [--permissions ai,mcp] [--role admin]
                       --method M --path P [--variant A|B | --policy FILE] [--model FILE] [--scopes FILE] [--json]`,
    about: 'Says whether the policy allows one request for one kind of caller, and which line decides it.',
    examples: ['npx keygate policy explain --subject key --permissions ai --method POST --path /api/ai/chat'],
  },
  lint: {
    usage: 'keygate policy lint [FILES...] [--scopes FILE]   (a .csv policy, or a scopes .yaml file)',
    about: 'Finds the mistakes suites can miss: an allow every request of which another line denies, unknown or '
      + 'duplicate lines, scope actions that open nothing.',
    examples: ['npx keygate policy lint', 'npx keygate policy lint policies/variant-a.csv --scopes policies/scopes.yaml'],
  },
  diff: {
    usage: `keygate policy diff [OLD NEW | FILE] [--base REF] [--model FILE] [--old-scopes FILE] [--new-scopes FILE] [--json]
  without OLD NEW, inside a git checkout: the working policy (FILE, else the configured one), its model
  and scopes against the same files at REF (default HEAD)`,
    about: 'Lists the requests whose decision differs between two policies, as a review before an apply.',
    examples: ['npx keygate policy diff', 'npx keygate policy diff policies/variant-a.csv policies/variant-b.csv'],
  },
  scope: {
    usage: 'keygate policy scope add NAME --route "[ACTION] METHODS PATH" [--route ...]'
      + ' [--actions read,write] [--label L] [--description D]',
    about: 'Declares a new scope a key may hold, writes the lines that refuse keys without it on its routes and '
      + 'suite cases for them, then lints and tests.',
    examples: [
      'npx keygate policy scope add reports --route "GET /api/reports/**" --label "Read reports" '
        + '--description "Lets the key read your reports."',
      'npx keygate policy scope add exports --actions read,write --route "read GET /api/exports/**" --route "write POST /api/exports/**"',
    ],
  },
};

/** Every policy subcommand and its help, the file-only ones and those that need the database. */
export const policyUsages: Record<string, Usage> = { ...usages, ...liveUsages };

/** Every policy subcommand's usage, as `keygate policy --help` prints it. */
export const USAGE = `usage:\n${listOf(policyUsages)}\n`;

const isCommand = (sub: string): sub is keyof typeof commands => Object.hasOwn(commands, sub);

/** `--help`/`-h` for a policy subcommand: its usage on stdout. */
export function policyHelp(sub: string | undefined, io: Pick<CliIo, 'stdout'>): number {
  io.stdout(sub !== undefined && Object.hasOwn(policyUsages, sub) ? `${helpOf(policyUsages[sub]!)}\n` : USAGE);
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
    io.stderr(`keygate: unknown policy command "${sub}"\n${USAGE}`);
    return 1;
  }
  if (wantsHelp(rest)) return policyHelp(sub, io);
  try {
    return await commands[sub](rest, io);
  } catch (e) {
    // parseArgs throws TypeErrors with a code for unknown or malformed flags: the user's mistake.
    const code = (e as { code?: unknown }).code;
    if (e instanceof CliError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
      io.stderr(`keygate: ${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  }
}
