// `keygate policy lint`: mistakes a policy file can hold that its tests might not reveal. The
// analyses are src/policy/lint-analyses.ts; this reads the files and prints what they find.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createPolicyEngineFromRules, type PolicyEngine } from '../../policy/engine.ts';
import { parseCondition, permTerm } from '../../policy/patterns.ts';
import { parseScopes, scopeLines, ScopesError, type ScopeCatalog } from '../../policy/scopes.ts';
import { parsePolicy, type PolicyRule } from '../../policy/rules.ts';
import { deadActions, lineFindings, unreachableAllows, type Finding } from '../../policy/lint-analyses.ts';
import { CliError, defaultModelFor, defaultScopesFor, display, listFiles, policiesDir, resolveAll, type CliIo } from './common.ts';
import { routeFindings } from './route-coverage.ts';
import { kindOf, lintSuite, policiesBeside } from './lint-kinds.ts';

export type { Finding };

interface ScopesLint { catalog: ScopeCatalog | null; findings: string[] }

/** The scopes file itself: a mistake in it is an error of every policy read with it. */
async function lintScopes(io: CliIo, path: string): Promise<ScopesLint> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return { catalog: null, findings: [`${display(io, path)}: cannot read the scopes file`] };
  }
  try {
    return { catalog: parseScopes(text, display(io, path)), findings: [] };
  } catch (e) {
    if (!(e instanceof ScopesError)) throw e;
    return { catalog: null, findings: e.message.split('\n') };
  }
}

/** Scope names the lines' conditions mention. */
function namedScopes(rules: readonly PolicyRule[]): Set<string> {
  const names = new Set<string>();
  for (const r of rules) for (const t of parseCondition(r.condition)) {
    const perm = permTerm(t.attribute);
    if (perm) names.add(perm.scope);
  }
  return names;
}

/**
 * The findings of a policy text checked with a model text and a scopes catalog (null: the scopes
 * file itself is broken); `modelName` and `scopesName` name them in messages.
 */
export async function lintTexts(
  modelText: string, policyText: string, modelName: string, catalog: ScopeCatalog | null, scopesName: string, used = new Set<string>(),
): Promise<Finding[]> {
  const parsed = parsePolicy(policyText);
  for (const n of namedScopes(parsed.rules)) used.add(n);
  const findings: Finding[] = [...parsed.problems, ...lineFindings(parsed.rules, catalog, scopesName)];
  let engine: PolicyEngine;
  try {
    engine = await createPolicyEngineFromRules(modelText, parsed.rules, catalog ? { scopes: catalog } : {});
  } catch (e) {
    throw new CliError(`${modelName}: ${(e as Error).message}`);
  }
  findings.push(...unreachableAllows(engine, catalog), ...deadActions(engine, catalog));
  for (const f of routeFindings(engine)) findings.push({ line: f.line ?? 0, message: f.message });
  return findings.sort((a, b) => a.line - b.line);
}

async function lintFile(
  io: CliIo, policyPath: string, catalog: ScopeCatalog | null, scopesPath: string, used: Set<string>,
  modelPath = defaultModelFor(policyPath),
): Promise<Finding[]> {
  let text: string;
  let modelText: string;
  try {
    text = await readFile(policyPath, 'utf8');
  } catch {
    throw new CliError(`${display(io, policyPath)}: cannot read the policy`);
  }
  try {
    modelText = await readFile(modelPath, 'utf8');
  } catch {
    throw new CliError(`${display(io, modelPath)}: cannot read the model the policy is checked with`);
  }
  return lintTexts(modelText, text, display(io, modelPath), catalog, display(io, scopesPath), used);
}

export async function lintCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { scopes: { type: 'string' } } });
  // Run by `keygate`, the configured files are the default; called bare, every file in policies/.
  const configured = io.policy && positionals.length === 0 ? io.policy : undefined;
  let total = 0;
  // Named files are checked as what they are: a scopes file with the policies beside it, a suite by loading it.
  const files: string[] = [];
  let others = 0;
  let scopesFile = values.scopes ? resolveAll(io, [values.scopes])[0]! : undefined;
  for (const f of resolveAll(io, positionals)) {
    const kind = await kindOf(io, f);
    if (kind === 'policy') files.push(f);
    else if (kind === 'suite') {
      total += await lintSuite(io, f);
      others += 1;
    } else {
      scopesFile = f;
      others += 1;
      files.push(...(await policiesBeside(f)).filter((p) => !files.includes(p)));
    }
  }
  if (positionals.length === 0) files.push(...(configured ? [configured.file] : await listFiles(policiesDir(io.cwd), ['.csv'])));
  if (files.length === 0 && positionals.length === 0) throw new CliError('no policy files found (policies/*.csv)');
  let warnings = 0;
  // Each scopes file once, with the scopes every policy read with it names between them.
  const scopeFiles = new Map<string, ScopesLint & { used: Set<string> }>();
  for (const f of files) {
    const scopesPath = scopesFile ?? configured?.scopes ?? defaultScopesFor(f);
    let scopes = scopeFiles.get(scopesPath);
    if (!scopes) {
      scopes = { ...(await lintScopes(io, scopesPath)), used: new Set<string>() };
      scopeFiles.set(scopesPath, scopes);
      total += scopes.findings.length;
      for (const x of scopes.findings) io.stdout(`${x}\n`);
    }
    const findings = await lintFile(io, f, scopes.catalog, scopesPath, scopes.used, configured?.model);
    total += findings.length;
    // Line 0 marks a finding about the file as a whole (a route no line decides).
    for (const x of findings) io.stdout(`${display(io, f)}${x.line > 0 ? `:${x.line}` : ''}: ${x.message}\n`);
  }
  // A scopes file with no policy beside it is still checked on its own.
  if (scopesFile && !scopeFiles.has(scopesFile)) {
    const alone = await lintScopes(io, scopesFile);
    total += alone.findings.length;
    for (const x of alone.findings) io.stdout(`${x}\n`);
  }
  for (const [path, { catalog, used }] of scopeFiles) {
    if (!catalog) continue;
    const lines = scopeLines(catalog.text);
    for (const s of catalog.list.filter((x) => !used.has(x.name))) {
      warnings += 1;
      const at = `${display(io, path)}:${lines.get(s.name) ?? 1}`;
      io.stdout(`${at}: warning: scope ${s.name} is declared but no policy line names it (perm:${s.name}),`
        + ' so holding it changes nothing\n');
    }
  }
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const warned = warnings ? `, ${plural(warnings, 'warning')}` : '';
  io.stdout(`${plural(total, 'finding')}${warned} in ${plural(files.length + others, 'file')}\n`);
  return total === 0 ? 0 : 1;
}
