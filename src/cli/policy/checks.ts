// The safety net in front of every change to the live policy: lint, then the suites
// in the tests/ folder beside the policy file, each against the texts about to go live rather than
// whatever is on disk under the names the suites use.
import { dirname, join, resolve } from 'node:path';
import type { PolicyTexts } from '../../policy/bundle.ts';
import { createPolicyEngineFromRules } from '../../policy/engine.ts';
import { parsePolicy } from '../../policy/rules.ts';
import { CliError, display, listFiles, type CliIo } from './common.ts';
import { lintTexts, type Finding } from './lint.ts';
import { parseScopes, ScopesError, type ScopeCatalog } from '../../policy/scopes.ts';
import { loadSuite } from './suite.ts';
import { runCase } from './test.ts';

/** Prints each finding and failure; true when lint is clean and (unless `lintOnly`) every suite passes. */
export async function safetyChecks(
  io: CliIo, texts: PolicyTexts, policyPath: string, opts: { lintOnly?: boolean; label?: string } = {},
): Promise<boolean> {
  const shown = opts.label ?? display(io, policyPath);
  let catalog: ScopeCatalog | null = null;
  const findings: Finding[] = [];
  try {
    catalog = parseScopes(texts.scopes, 'scopes');
  } catch (e) {
    if (!(e instanceof ScopesError)) throw e;
    findings.push(...e.message.split('\n').map((message) => ({ line: 0, message })));
  }
  findings.push(...(await lintTexts(texts.model, texts.policy, 'model', catalog, 'scopes')));
  for (const f of findings) io.stdout(`lint ${shown}${f.line > 0 ? `:${f.line}` : ''}: ${f.message}\n`);
  io.stdout(`lint: ${findings.length} finding${findings.length === 1 ? '' : 's'}\n`);
  const lintOk = findings.length === 0;
  if (opts.lintOnly) return lintOk;
  // Lint found malformed lines: no engine to run the suites against.
  const parsed = parsePolicy(texts.policy);
  if (parsed.problems.length > 0 || !catalog) return false;

  const engine = await createPolicyEngineFromRules(texts.model, parsed.rules, { scopes: catalog });
  const target = resolve(policyPath);
  let passed = 0;
  let failed = 0;
  let suites = 0;
  for (const file of await listFiles(join(dirname(target), 'tests'), ['.yaml', '.yml'])) {
    let suite;
    try {
      suite = await loadSuite(file, display(io, file));
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      io.stdout(`suite ${e.message}\n`);
      failed += 1;
      continue;
    }
    // A suite written for another policy file (variant B beside variant A) says nothing about this one.
    if (resolve(suite.policyPath) !== target) continue;
    suites += 1;
    for (const c of suite.cases) {
      const failure = runCase(io, { engine, policyPath: target, modelPath: suite.modelPath, scopesPath: 'scopes' }, c);
      if (failure === null) passed += 1;
      else {
        failed += 1;
        io.stdout(`FAIL ${c.file}:${c.line} ${c.name}: ${failure}\n`);
      }
    }
  }
  if (suites === 0) io.stdout(`suites: none in ${display(io, join(dirname(target), 'tests'))} names ${shown}\n`);
  else io.stdout(`suites: ${passed} passed, ${failed} failed\n`);
  return lintOk && failed === 0;
}
