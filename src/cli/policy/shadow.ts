// `keygate policy shadow report|off` and `policy promote`: reading what the candidate would change
// on real traffic, then keeping or dropping it.
import { parseArgs } from 'node:util';
import { safetyChecks } from './checks.ts';
import { CliError } from './common.ts';
import { sayOutcome, type Lifecycle } from './lifecycle.ts';

async function report(lc: Lifecycle, json: boolean): Promise<number> {
  const c = await lc.shadow.candidate();
  const rows = c ? await lc.shadow.divergences(c.id) : [];
  if (json) {
    const candidate = c
      ? { id: c.id, sha256: c.sha256, createdAt: c.createdAt.toISOString(), createdBy: c.createdBy, message: c.message }
      : null;
    lc.io.stdout(`${JSON.stringify({ candidate, divergences: rows })}\n`);
    return 0;
  }
  if (!c) {
    lc.io.stdout('no candidate policy; store one with `keygate policy apply --shadow`\n');
    return 0;
  }
  const message = c.message ? `: ${c.message}` : '';
  lc.io.stdout(`candidate ${c.id} ${c.sha256.slice(0, 12)} stored ${c.createdAt.toISOString()} by ${c.createdBy}${message}\n`);
  if (rows.length === 0) lc.io.stdout('no divergence counted yet (instances add their counts every 5 s)\n');
  for (const d of rows) {
    const e = d.example;
    const subject = [e.subject, e.attributes, e.via === 'mcp' ? 'via:mcp' : ''].filter(Boolean).join(' ');
    lc.io.stdout(`${d.count} ${d.outcome} live ${d.liveRule} -> candidate ${d.shadowRule}  e.g. ${e.method} ${e.path} as ${subject}\n`);
  }
  return 0;
}

async function off(lc: Lifecycle): Promise<number> {
  const dropped = await lc.shadow.off();
  lc.io.stdout(dropped ? 'dropped the candidate; gateways stop evaluating it within a second\n' : 'there was no candidate\n');
  return 0;
}

export async function shadowCommand(args: string[], lc: Lifecycle): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: 'boolean', default: false } } });
  const [sub, ...extra] = positionals;
  if (extra.length > 0 || (sub !== 'report' && sub !== 'off') || (sub === 'off' && values.json)) {
    throw new CliError('usage: keygate policy shadow report [--json] | off');
  }
  return sub === 'report' ? report(lc, values.json) : off(lc);
}

export async function promoteCommand(args: string[], lc: Lifecycle): Promise<number> {
  const options = { force: { type: 'boolean', default: false }, by: { type: 'string' } } as const;
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options });
  if (positionals.length > 0) throw new CliError('usage: keygate policy promote [--force] [--by WHO]');
  const c = await lc.shadow.candidate();
  if (!c) throw new CliError('there is no candidate policy to promote; store one with `keygate policy apply --shadow`');
  const files = { model: c.modelText, policy: c.policyText, scopes: c.scopesText };
  if (values.force) lc.io.stdout('--force: lint and the suites were skipped\n');
  else if (!(await safetyChecks(lc.io, files, lc.config.policy.file, { label: `candidate ${c.id}` }))) {
    lc.io.stderr(`refused: candidate ${c.id} fails lint or the suites (above); nothing was written\n`);
    return 1;
  }
  sayOutcome(lc.io, await lc.shadow.promote(values.by ?? lc.user, c.id), `promoted candidate ${c.id}`);
  return 0;
}
