// Dispatch for the policy commands that need the database (the others read files only).
import { wantsHelp } from '../args.ts';
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

/** Each command's usage; typed by the table above, so a command without one does not compile. */
export const liveUsages: Record<keyof typeof commands, string> = {
  apply: 'keygate policy apply [FILE] [--dry-run | --shadow] [--force] [--by WHO] [--message TEXT] [--wait SECONDS]',
  history: 'keygate policy history [--limit N] [--json]',
  rollback: 'keygate policy rollback VERSION [--by WHO]',
  status: 'keygate policy status [--wait SECONDS] [--json]',
  shadow: 'keygate policy shadow report [--json] | off',
  promote: 'keygate policy promote [--force] [--by WHO]',
};

export const isLiveCommand = (sub: string | undefined): sub is keyof typeof commands => sub !== undefined && Object.hasOwn(commands, sub);

/** Runs one of the database-backed policy commands; resolves to the exit code. */
export async function runLiveCommand(args: string[], ctx: LifecycleContext): Promise<number> {
  const [sub = '', ...rest] = args;
  if (!isLiveCommand(sub)) throw new CliError(`unknown policy command "${sub}"`);
  if (wantsHelp(rest)) {
    ctx.io.stdout(`usage: ${liveUsages[sub]}\n`);
    return 0;
  }
  return commands[sub](rest, lifecycleOf(ctx));
}
