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
