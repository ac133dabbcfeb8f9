// `keygate policy diff OLD NEW`: the decisions a policy change would change, for a reviewer who
// should not have to run the whole matrix in their head.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { PolicyEngine } from '../../policy/engine.ts';
import { pathGlobs } from '../../policy/patterns.ts';
import { formatRule } from '../../policy/rules.ts';
import { examplePath, forwardedExamples, gatewayRoutes, routeMethods } from '../../policy/routes.ts';
import type { Scope, ScopeCatalog } from '../../policy/scopes.ts';
import { CliError, display, listFiles, policiesDir, policyLoader, standardSubjects, subjectLabel, type CliIo, type LoadedPolicy } from './common.ts';
import { loadSuite } from './suite.ts';

interface Request {
  method: string;
  path: string;
}

/** A read and a write on the path a glob line names, so a new router's lines are diffed too. */
function linePaths(engines: readonly PolicyEngine[]): Request[] {
  const out: Request[] = [];
  for (const e of engines) for (const r of e.rules) {
    for (const glob of pathGlobs(r.path)) {
      const path = glob.replace(/\/(\*|:[A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g, '/x-1').replace(/\/\*\*$/, '') || '/';
      out.push({ method: 'GET', path }, { method: 'POST', path });
    }
  }
  return out;
}

// The route table, the forwarded surface the spec names, the paths the lines name, and whatever
// the test suites ask about.
async function requests(io: CliIo, engines: readonly PolicyEngine[]): Promise<Request[]> {
  const all: Request[] = [
    ...gatewayRoutes.flatMap((r) => routeMethods(r).map((method) => ({ method, path: examplePath(r.path) }))),
    ...forwardedExamples,
    ...linePaths(engines),
  ];
  for (const file of await listFiles(join(policiesDir(io.cwd), 'tests'), ['.yaml', '.yml'])) {
    try {
      all.push(...(await loadSuite(file, display(io, file))).cases);
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      io.stderr(`skipping the cases of a suite that does not load:\n${e.message}\n`);
    }
  }
  const seen = new Set<string>();
  return all.filter((r) => {
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function outcome(decision: { allowed: boolean; ruleId: string | null }): string {
  const verdict = decision.allowed ? 'allow' : 'deny';
  return decision.ruleId ? `${verdict} (${decision.ruleId})` : `${verdict} (no line)`;
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
  const fields = (s: Scope): Record<string, string> => ({ actions: `[${s.actions.join(', ')}]`, requires: s.requires ?? 'nothing', label: JSON.stringify(s.label), description: JSON.stringify(s.description) });
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

export async function diffCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { model: { type: 'string' }, 'old-scopes': { type: 'string' }, 'new-scopes': { type: 'string' } },
  });
  const [oldFile, newFile, ...extra] = positionals;
  if (!oldFile || !newFile || extra.length > 0) throw new CliError('usage: keygate policy diff OLD NEW [--model FILE] [--old-scopes FILE] [--new-scopes FILE]');
  const model = values.model ? resolve(io.cwd, values.model) : undefined;
  const scopesOf = (f: string | undefined) => (f ? resolve(io.cwd, f) : undefined);
  const load = policyLoader(io);
  const [oldP, newP] = await Promise.all([
    load(resolve(io.cwd, oldFile), model, scopesOf(values['old-scopes'])),
    load(resolve(io.cwd, newFile), model, scopesOf(values['new-scopes'])),
  ]);

  await printDiff(io, oldP, newP);
  return 0;
}

/** The scopes, lines and decisions that differ between two policies, as `policy diff` prints them. */
export async function printDiff(io: CliIo, oldP: LoadedPolicy, newP: LoadedPolicy): Promise<void> {
  const scopes = scopeChanges(oldP.engine.scopes, newP.engine.scopes);
  if (scopes.length > 0) io.stdout(`scopes:\n${scopes.map((l) => `  ${l}\n`).join('')}`);
  const lines = lineChanges(io, oldP, newP);
  if (lines.length > 0) io.stdout(`lines:\n${lines.map((l) => `  ${l}\n`).join('')}`);
  const subjects = standardSubjects(oldP.engine.scopes, newP.engine.scopes);

  // One output line per request and change; the subjects that share a change are listed together.
  const changes = new Map<string, { request: string; what: string; subjects: string[] }>();
  const reqs = await requests(io, [oldP.engine, newP.engine]);
  for (const r of reqs) {
    for (const s of subjects) {
      const before = oldP.engine.decide(s, r.method, r.path);
      const after = newP.engine.decide(s, r.method, r.path);
      if (before.allowed === after.allowed) continue;
      const request = `${r.method} ${r.path}`;
      const what = `${outcome(before)} -> ${outcome(after)}`;
      const entry = changes.get(`${request}\n${what}`) ?? { request, what, subjects: [] };
      entry.subjects.push(subjectLabel(s));
      changes.set(`${request}\n${what}`, entry);
    }
  }
  if (changes.size > 0) io.stdout('decisions:\n');
  for (const c of changes.values()) io.stdout(`  ${c.request}  ${c.subjects.join(', ')}: ${c.what}\n`);
  const count = [...changes.values()].reduce((n, c) => n + c.subjects.length, 0);
  io.stdout(`${count} decision${count === 1 ? '' : 's'} change over ${reqs.length} requests x ${subjects.length} subjects\n`);
}
