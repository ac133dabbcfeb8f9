// The one argument parser of the CLI: node:util's parseArgs, strict, so an unknown or misspelt
// flag is an error (exit 1) rather than silently ignored.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

export function parseFlags<T extends Options>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/**
 * `--help` or `-h` anywhere before a `--`: the command prints its usage and does nothing else. Read
 * with parseArgs' own tokens, loosely, so the command's other flags do not matter here.
 */
export function wantsHelp(args: readonly string[]): boolean {
  const options = { help: { type: 'boolean', short: 'h' } } as const;
  const { tokens } = parseArgs({ args: [...args], options, strict: false, allowPositionals: true, tokens: true });
  return tokens.some((t) => t.kind === 'option' && t.name === 'help');
}

/**
 * The arguments without `--config FILE` (or `--config=FILE`): the configuration is read once by
 * the entry, and no subcommand takes the flag.
 */
export function withoutConfigFlag(args: readonly string[]): string[] {
  const options = { config: { type: 'string' } } as const;
  const { tokens } = parseArgs({ args: [...args], options, strict: false, allowPositionals: true, tokens: true });
  const drop = new Set<number>();
  for (const t of tokens) {
    if (t.kind !== 'option' || t.name !== 'config') continue;
    drop.add(t.index);
    if (!t.inlineValue && t.value !== undefined) drop.add(t.index + 1);
  }
  return args.filter((_, i) => !drop.has(i));
}

export type { Usage } from './help.ts';
