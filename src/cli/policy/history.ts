// `keygate policy history [--limit N]`, `policy rollback VERSION`, `policy status`.
import { parseArgs } from 'node:util';
import { FLEET_HORIZON_MS } from '../../services/policy/index.ts';
import { safetyChecks } from './checks.ts';
import { CliError } from './common.ts';
import { positiveInt, sayOutcome, type Lifecycle } from './lifecycle.ts';

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

export async function historyCommand(args: string[], lc: Lifecycle): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { limit: { type: 'string' } } });
  if (positionals.length > 0) throw new CliError('usage: keygate policy history [--limit N]');
  const limit = values.limit === undefined ? 20 : positiveInt(values.limit, '--limit');
  const rows = await lc.versions.history(limit);
  if (rows.length === 0) {
    lc.io.stdout('no version yet: the store holds the policy files a gateway seeded it with at its first start (policyVersion 0); the first `keygate policy apply` stores version 1\n');
    return 0;
  }
  const live = rows[0]!.version;
  for (const v of rows) {
    lc.io.stdout(`${v.version === live ? '*' : ' '} ${v.version} ${v.sha256.slice(0, 12)} ${v.appliedAt.toISOString()} ${oneLine(v.appliedBy)} ${oneLine(v.message)}`.trimEnd() + '\n');
  }
  return 0;
}

export async function rollbackCommand(args: string[], lc: Lifecycle): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { by: { type: 'string' } } });
  if (positionals.length !== 1) throw new CliError('usage: keygate policy rollback VERSION [--by WHO]');
  const target = await lc.versions.version(positiveInt(positionals[0], 'VERSION'));
  // Lint only: the suites on disk describe today's intent, not the old version's.
  if (!(await safetyChecks(lc.io, { model: target.modelText, policy: target.policyText, scopes: target.scopesText }, lc.config.policy.file, { lintOnly: true, label: `version ${target.version}` }))) {
    lc.io.stderr(`refused: version ${target.version} fails lint (above); nothing was written\n`);
    return 1;
  }
  sayOutcome(lc.io, await lc.versions.rollback(target.version, values.by ?? lc.user), `rolled back to version ${target.version}`);
  return 0;
}

export async function statusCommand(args: string[], lc: Lifecycle, horizonMs = FLEET_HORIZON_MS): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length > 0) throw new CliError('usage: keygate policy status');
  const { liveVersion, candidateId, instances, lagging } = await lc.fleet(horizonMs);
  lc.io.stdout(`live version ${liveVersion}${candidateId !== null ? `; candidate ${candidateId} under shadow evaluation` : ''}\n`);
  if (instances.length === 0) lc.io.stdout(`no instance heard from in the last ${horizonMs / 1000} s\n`);
  for (const i of instances) {
    const shadow = i.shadowId === null ? '' : ` candidate ${i.shadowId}`;
    lc.io.stdout(`${i.instanceId.slice(0, 8)} ${i.host} pid ${i.pid} version ${i.policyVersion}${shadow} seen ${i.seenAt.toISOString()}${i.lagging ? ' LAGGING' : ''}\n`);
  }
  if (lagging > 0) {
    lc.io.stderr(`${lagging} instance${lagging === 1 ? '' : 's'} not running live version ${liveVersion}\n`);
    return 1;
  }
  return 0;
}
