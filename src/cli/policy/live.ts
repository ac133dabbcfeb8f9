// Dispatch for the policy commands that need the database (the others read files only).
import { applyCommand } from './apply.ts';
import { CliError } from './common.ts';
import { historyCommand, rollbackCommand, statusCommand } from './history.ts';
import { lifecycleOf, type Lifecycle, type LifecycleContext } from './lifecycle.ts';
import { promoteCommand, shadowCommand } from './shadow.ts';

const commands: Record<string, (args: string[], lc: Lifecycle) => Promise<number>> = {
  apply: applyCommand,
  history: historyCommand,
  rollback: rollbackCommand,
  status: statusCommand,
  shadow: shadowCommand,
  promote: promoteCommand,
};

export const isLiveCommand = (sub: string | undefined): boolean => sub !== undefined && Object.hasOwn(commands, sub);

/** Runs one of the database-backed policy commands; resolves to the exit code. */
export async function runLiveCommand(args: string[], ctx: LifecycleContext): Promise<number> {
  const [sub = '', ...rest] = args;
  const command = commands[sub];
  if (!command) throw new CliError(`unknown policy command "${sub}"`);
  return command(rest, lifecycleOf(ctx));
}
