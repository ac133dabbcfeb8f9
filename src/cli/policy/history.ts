// `keygate policy history [--limit N]`, `policy rollback VERSION [--message TEXT]`, `policy status`.
import { parseArgs } from 'node:util';
import { FLEET_HORIZON_MS, FLEET_RETENTION_MS, fleetView, type FleetStatus } from '../../services/policy/index.ts';
import { safetyChecks } from './checks.ts';
import { CliError } from './common.ts';
import { positiveInt, sayOutcome, type Lifecycle } from './lifecycle.ts';

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

export async function historyCommand(args: string[], lc: Lifecycle): Promise<number> {
  const options = { limit: { type: 'string' }, json: { type: 'boolean', default: false } } as const;
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options });
  if (positionals.length > 0) throw new CliError('usage: keygate policy history [--limit N] [--json]');
  const limit = values.limit === undefined ? 20 : positiveInt(values.limit, '--limit');
  const rows = await lc.versions.history(limit);
  if (values.json) {
    const versions = rows.map((v) => ({
      version: v.version, sha256: v.sha256, appliedAt: v.appliedAt.toISOString(), appliedBy: v.appliedBy, message: v.message,
    }));
    lc.io.stdout(`${JSON.stringify({ live: rows[0]?.version ?? 0, seededOnly: rows.length === 0, versions })}\n`);
    return 0;
  }
  if (rows.length === 0) {
    lc.io.stdout('no version yet: the store holds the policy files a gateway seeded it with at its first start (policyVersion 0);'
      + ' the first `keygate policy apply` stores version 1\n');
    return 0;
  }
  const live = rows[0]!.version;
  for (const v of rows) {
    const mark = v.version === live ? '*' : ' ';
    const line = `${mark} ${v.version} ${v.sha256.slice(0, 12)} ${v.appliedAt.toISOString()} ${oneLine(v.appliedBy)} ${oneLine(v.message)}`;
    lc.io.stdout(line.trimEnd() + '\n');
  }
  return 0;
}

export async function rollbackCommand(args: string[], lc: Lifecycle): Promise<number> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true, options: { by: { type: 'string' }, message: { type: 'string' } },
  });
  if (positionals.length !== 1) throw new CliError('usage: keygate policy rollback VERSION [--by WHO] [--message TEXT]');
  // Version 0 is what the store was seeded with, kept by the first apply.
  const target = await lc.versions.version(positionals[0] === '0' ? 0 : positiveInt(positionals[0], 'VERSION'));
  // Lint only: the suites on disk describe today's intent, not the old version's.
  const files = { model: target.modelText, policy: target.policyText, scopes: target.scopesText };
  if (!(await safetyChecks(lc.io, files, lc.config.policy.file, { lintOnly: true, label: `version ${target.version}` }))) {
    lc.io.stderr(`refused: version ${target.version} fails lint (above); nothing was written\n`);
    return 1;
  }
  // The same optional why as the console's rollback; without one the version says `rollback to N`.
  const outcome = await lc.versions.rollback(target.version, values.by ?? lc.user, {}, values.message?.trim() || undefined);
  sayOutcome(lc.io, outcome, `rolled back to version ${target.version}`);
  return 0;
}

/** `--wait SECONDS`: a whole number of seconds, 0 meaning "ask once". */
export function waitSeconds(value: string | undefined): number | null {
  if (value === undefined) return null;
  if (!/^[0-9]{1,5}$/.test(value)) throw new CliError('--wait takes a whole number of seconds');
  return Number(value);
}

const POLL_MS = 250;

/**
 * The fleet's status, asked again until no instance lags or `waitS` seconds have passed (instances
 * report what they run every few seconds, so right after an apply some still show the old version).
 */
export async function settledFleet(lc: Lifecycle, waitS: number | null, horizonMs = FLEET_HORIZON_MS): Promise<FleetStatus> {
  const deadline = Date.now() + (waitS ?? 0) * 1000;
  for (;;) {
    const status = await lc.fleet(horizonMs);
    if (status.lagging === 0 || Date.now() >= deadline) return status;
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}

/** Prints the fleet as `policy status` does; 1 when an instance lags. */
export function reportFleet(lc: Lifecycle, status: FleetStatus, json: boolean, waitS: number | null, horizonMs = FLEET_HORIZON_MS): number {
  const { liveVersion, candidateId, instances, lagging } = status;
  if (json) {
    lc.io.stdout(`${JSON.stringify(fleetView(status))}\n`);
  } else {
    lc.io.stdout(`live version ${liveVersion}${candidateId !== null ? `; candidate ${candidateId} under shadow evaluation` : ''}\n`);
    if (instances.length === 0) lc.io.stdout(`no instance heard from in the last ${FLEET_RETENTION_MS / 3_600_000} h\n`);
    for (const i of instances) {
      const shadow = i.shadowId === null ? '' : ` candidate ${i.shadowId}`;
      const state = `${i.lagging ? ' LAGGING' : ''}${i.reason ? `: ${oneLine(i.reason)}` : ''}`;
      const seen = `seen ${i.seenAt.toISOString()}`;
      lc.io.stdout(`${i.instanceId.slice(0, 8)} ${i.host} pid ${i.pid} version ${i.policyVersion}${shadow} ${seen}${state}\n`);
    }
  }
  if (lagging > 0) {
    const waited = waitS !== null ? ` after waiting ${waitS} s` : '';
    // Its own line with the prefix every error carries: read after the table, it must not seem part of the last row.
    lc.io.stderr(`keygate: ${lagging} instance${lagging === 1 ? '' : 's'} not running live version ${liveVersion}${waited}\n`);
    return 1;
  }
  return 0;
}

export async function statusCommand(args: string[], lc: Lifecycle, horizonMs = FLEET_HORIZON_MS): Promise<number> {
  const options = { wait: { type: 'string' }, json: { type: 'boolean', default: false } } as const;
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options });
  if (positionals.length > 0) throw new CliError('usage: keygate policy status [--wait SECONDS] [--json]');
  const waitS = waitSeconds(values.wait);
  return reportFleet(lc, await settledFleet(lc, waitS, horizonMs), values.json, waitS, horizonMs);
}
