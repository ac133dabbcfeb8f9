// `keygate policy diff OLD NEW`: the decisions a policy change would change, for a reviewer who
// should not have to run the whole matrix in their head.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { PolicyEngine } from '../../policy/engine.ts';
import { formatRule } from '../../policy/rules.ts';
import { decisionChanges, decisionLine, diffRequests, type DecisionChange, type DiffRequest } from '../../policy/decision-diff.ts';
import type { Scope, ScopeCatalog } from '../../policy/scopes.ts';
import {
  CliError, defaultModelFor, defaultScopesFor, display, listFiles, policiesDir, policyLoader, variantFile, type CliIo, type LoadedPolicy,
} from './common.ts';
import { gitSides, gitTopLevel } from './git-base.ts';
import { loadSuite } from './suite.ts';

// The route table, the forwarded examples (policy/routes.ts), the paths the lines name, and whatever
// the test suites ask about.
async function requests(io: CliIo, engines: readonly PolicyEngine[]): Promise<DiffRequest[]> {
  const extra: DiffRequest[] = [];
  for (const file of await listFiles(join(policiesDir(io.cwd), 'tests'), ['.yaml', '.yml'])) {
    try {
      extra.push(...(await loadSuite(file, display(io, file))).cases);
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      io.stderr(`skipping the cases of a suite that does not load:\n${e.message}\n`);
    }
  }
  return diffRequests(engines, extra);
}

function lineChanges(io: CliIo, oldP: LoadedPolicy, newP: LoadedPolicy): string[] {
  const out: string[] = [];
  const text = (e: PolicyEngine, id: string) => {
    const r = e.rule(id);
    return r ? formatRule(r) : '';
  };
  for (const r of oldP.engine.rules) {
    if (!newP.engine.rule(r.id)) out.push(`- ${display(io, oldP.policyPath)}:${r.line}  ${formatRule(r)}`);
    else if (text(newP.engine, r.id) !== formatRule(r)) out.push(`~ ${r.id}: ${formatRule(r)}  ->  ${text(newP.engine, r.id)}`);
  }
  for (const r of newP.engine.rules) {
    if (!oldP.engine.rule(r.id)) out.push(`+ ${display(io, newP.policyPath)}:${r.line}  ${formatRule(r)}`);
  }
  return out;
}

/** Scopes added, removed, or changed in label, description, actions or requires. */
function scopeChanges(oldS: ScopeCatalog, newS: ScopeCatalog): string[] {
  const out: string[] = [];
  const fields = (s: Scope): Record<string, string> => ({
    actions: `[${s.actions.join(', ')}]`,
    requires: s.requires ?? 'nothing',
    label: JSON.stringify(s.label),
    description: JSON.stringify(s.description),
  });
  for (const s of oldS.list) {
    const next = newS.get(s.name);
    if (!next) {
      out.push(`- ${s.name} actions ${fields(s).actions}`);
      continue;
    }
    const before = fields(s);
    const after = fields(next);
    const changed = Object.keys(before).filter((f) => before[f] !== after[f]).map((f) => `${f} ${before[f]} -> ${after[f]}`);
    if (changed.length > 0) out.push(`~ ${s.name}: ${changed.join('; ')}`);
  }
  for (const s of newS.list) if (!oldS.get(s.name)) out.push(`+ ${s.name} actions ${fields(s).actions}`);
  return out;
}

const USAGE = 'usage: keygate policy diff [OLD NEW | FILE] [--base REF] [--model FILE] [--old-scopes FILE] [--new-scopes FILE] [--json]';

export async function diffCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      model: { type: 'string' }, 'old-scopes': { type: 'string' }, 'new-scopes': { type: 'string' }, base: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length > 2) throw new CliError(USAGE);
  const model = values.model ? resolve(io.cwd, values.model) : undefined;
  const scopesOf = (f: string | undefined) => (f ? resolve(io.cwd, f) : undefined);
  let oldP: LoadedPolicy;
  let newP: LoadedPolicy;
  if (positionals.length === 2) {
    if (values.base) throw new CliError(`--base compares one working policy with a commit; give FILE or nothing, not OLD NEW\n${USAGE}`);
    const load = policyLoader(io);
    [oldP, newP] = await Promise.all([
      load(resolve(io.cwd, positionals[0]!), model, scopesOf(values['old-scopes'])),
      load(resolve(io.cwd, positionals[1]!), model, scopesOf(values['new-scopes'])),
    ]);
  } else {
    // No pair named: the working files against a commit, in a git checkout.
    const top = await gitTopLevel(io.cwd);
    if (!top) {
      throw new CliError('not inside a git checkout: name the two policies to compare, keygate policy diff OLD NEW'
        + ' (with --model FILE, --old-scopes FILE, --new-scopes FILE where they are not beside the policies)');
    }
    if (values['old-scopes']) throw new CliError('--old-scopes: against git, the old scopes are the scopes file at --base');
    const policy = positionals[0] ? resolve(io.cwd, positionals[0]) : (io.policy?.file ?? variantFile(policiesDir(io.cwd), 'A'));
    const configured = io.policy && io.policy.file === policy ? io.policy : undefined;
    const files = {
      policy,
      model: model ?? configured?.model ?? defaultModelFor(policy),
      scopes: scopesOf(values['new-scopes']) ?? configured?.scopes ?? defaultScopesFor(policy),
    };
    ({ oldP, newP } = await gitSides(io, top, values.base ?? 'HEAD', files));
  }
  if (values.json) {
    const diff = await computeDiff(io, oldP, newP);
    io.stdout(`${JSON.stringify({ old: display(io, oldP.policyPath), new: display(io, newP.policyPath), ...diff })}\n`);
    return 0;
  }
  if (positionals.length < 2) io.stdout(`comparing ${display(io, newP.policyPath)} with ${display(io, oldP.policyPath)}\n`);
  await printDiff(io, oldP, newP);
  return 0;
}

export type { DecisionChange };

export interface PolicyDiff {
  scopes: string[];
  lines: string[];
  decisions: DecisionChange[];
  /** How many decisions change, and over how many requests and subjects. */
  changed: number;
  requests: number;
  subjects: number;
}

/** The scopes, lines and decisions that differ between two policies. */
export async function computeDiff(io: CliIo, oldP: LoadedPolicy, newP: LoadedPolicy): Promise<PolicyDiff> {
  const reqs = await requests(io, [oldP.engine, newP.engine]);
  const { decisions, changed, subjects } = decisionChanges(oldP.engine, newP.engine, reqs);
  return {
    scopes: scopeChanges(oldP.engine.scopes, newP.engine.scopes),
    lines: lineChanges(io, oldP, newP),
    decisions,
    changed,
    requests: reqs.length,
    subjects,
  };
}

/** The scopes, lines and decisions that differ between two policies, as `policy diff` prints them. */
export async function printDiff(io: CliIo, oldP: LoadedPolicy, newP: LoadedPolicy): Promise<void> {
  const d = await computeDiff(io, oldP, newP);
  if (d.scopes.length > 0) io.stdout(`scopes:\n${d.scopes.map((l) => `  ${l}\n`).join('')}`);
  if (d.lines.length > 0) io.stdout(`lines:\n${d.lines.map((l) => `  ${l}\n`).join('')}`);
  if (d.decisions.length > 0) io.stdout('decisions:\n');
  for (const c of d.decisions) io.stdout(`  ${decisionLine(c)}\n`);
  io.stdout(`${d.changed} decision${d.changed === 1 ? '' : 's'} change over ${d.requests} requests x ${d.subjects} subjects\n`);
}
