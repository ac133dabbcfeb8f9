// `keygate policy apply|history|rollback|status|shadow|promote`: the commands that change or read
// the live policy in the database, all through the policy admin of src/services/policy/.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Config } from '../../config.ts';
import type { OpenDatabase } from '../../services/database.ts';
import { systemClock, type Clock } from '../../services/clock.ts';
import { createPolicyAdmin, type ApplyOutcome, type PolicyAdmin } from '../../services/policy/index.ts';
import type { PolicyTexts } from '../../policy/bundle.ts';
import { CliError, type CliIo } from './common.ts';

export interface LifecycleContext {
  io: CliIo;
  pool: OpenDatabase['pool'];
  config: Config;
  /** Who runs the command when --by is not given ($USER). */
  user: string;
  clock?: Clock;
}

export interface Lifecycle extends LifecycleContext, PolicyAdmin {}

export function lifecycleOf(ctx: LifecycleContext): Lifecycle {
  return { ...ctx, ...createPolicyAdmin({ pool: ctx.pool, clock: ctx.clock ?? systemClock }) };
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    throw new CliError(`${path}: cannot read the ${what}`);
  }
}

/** The configured scopes file, on a configuration that has one; '' stands for "no scopes file". */
function scopesPath(config: Config): string | null {
  const scopes = (config.policy as { scopes?: unknown }).scopes;
  return typeof scopes === 'string' ? scopes : null;
}

/** The texts a command applies: the named policy file, else the configured one, with the configured model and scopes. */
export async function readTexts(ctx: LifecycleContext, policyFile?: string): Promise<{ texts: PolicyTexts; policyPath: string }> {
  const policyPath = policyFile ? resolve(ctx.io.cwd, policyFile) : ctx.config.policy.file;
  const scopes = scopesPath(ctx.config);
  const [model, policy, scopesText] = await Promise.all([
    readText(ctx.config.policy.model, 'model'),
    readText(policyPath, 'policy'),
    scopes ? readText(scopes, 'scopes file') : Promise.resolve(''),
  ]);
  return { texts: { model, policy, scopes: scopesText }, policyPath };
}

export function sayOutcome(io: CliIo, outcome: ApplyOutcome, what: string): void {
  if (outcome.status === 'already-live') io.stdout(`already live as version ${outcome.version}; nothing stored\n`);
  else io.stdout(`${what} as version ${outcome.version} (${outcome.rules} lines); running gateways reload within a second\n`);
}

export function positiveInt(value: string | undefined, name: string): number {
  if (value === undefined || !/^[1-9][0-9]{0,8}$/.test(value)) throw new CliError(`${name} must be a positive whole number`);
  return Number(value);
}
