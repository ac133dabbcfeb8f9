// Dispatch for the policy commands that need the database (the others read files only).
import { wantsHelp } from '../args.ts';
import { helpOf, type Usage } from '../help.ts';
import { applyCommand } from './apply.ts';
import { CliError } from './common.ts';
import { historyCommand, rollbackCommand, statusCommand } from './history.ts';
import { lifecycleOf, type Lifecycle, type LifecycleContext } from './lifecycle.ts';
import { promoteCommand, shadowCommand } from './shadow.ts';

const commands = {
  apply: applyCommand,
  history: historyCommand,
  rollback: rollbackCommand,
  status: statusCommand,
  shadow: shadowCommand,
  promote: promoteCommand,
} satisfies Record<string, (args: string[], lc: Lifecycle) => Promise<number>>;

/** Each command's help; typed by the table above, so a command without one does not compile. */
export const liveUsages: Record<keyof typeof commands, Usage> = {
  apply: {
    usage: 'keygate policy apply [FILE] [--dry-run | --shadow] [--force] [--by WHO] [--message TEXT] [--wait SECONDS]',
    about: 'Stores the policy file (default: the configured one) as the next version once lint and the suites '
      + 'pass; every running gateway loads it within a second.',
    examples: ['npx keygate policy apply --message "reports for keys" --wait 30', 'npx keygate policy apply --dry-run'],
  },
  history: {
    usage: 'keygate policy history [--limit N] [--json]',
    about: 'Lists the stored versions, newest first: who applied each, when, and why; the live one is starred.',
    examples: ['npx keygate policy history --limit 5'],
  },
  rollback: {
    usage: 'keygate policy rollback VERSION [--by WHO] [--message TEXT]',
    about: "Makes an earlier version live again, as a new version with that version's texts (version 0: the "
      + "files seeded at the first start).",
    examples: ['npx keygate policy rollback 0', 'npx keygate policy rollback 3 --message "projects reopened for the audit"'],
  },
  status: {
    usage: 'keygate policy status [--wait SECONDS] [--json]',
    about: 'Shows the live version and the version each running gateway has loaded; exits 1 while one lags.',
    examples: ['npx keygate policy status --wait 10'],
  },
  shadow: {
    usage: 'keygate policy shadow report [--json] | off',
    about: 'Reports how a candidate applied with --shadow would have decided live traffic differently, or stops evaluating it.',
    examples: ['npx keygate policy shadow report', 'npx keygate policy shadow off'],
  },
  promote: {
    usage: 'keygate policy promote [--force] [--by WHO]',
    about: 'Makes the candidate under shadow evaluation the live version.',
    examples: ['npx keygate policy promote'],
  },
};

export const isLiveCommand = (sub: string | undefined): sub is keyof typeof commands => sub !== undefined && Object.hasOwn(commands, sub);

/** Runs one of the database-backed policy commands; resolves to the exit code. */
export async function runLiveCommand(args: string[], ctx: LifecycleContext): Promise<number> {
  const [sub = '', ...rest] = args;
  if (!isLiveCommand(sub)) throw new CliError(`unknown policy command "${sub}"`);
  if (wantsHelp(rest)) {
    ctx.io.stdout(`${helpOf(liveUsages[sub])}\n`);
    return 0;
  }
  return commands[sub](rest, lifecycleOf(ctx));
}
