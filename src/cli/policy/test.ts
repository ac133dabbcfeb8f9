// `keygate policy test`: the YAML suites against the model and policy files on disk, no database.
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { permissionsFromNames } from '../../policy/scopes.ts';
import { CliError, display, listFiles, policiesDir, policyLoader, resolveAll, ruleRef, type CliIo, type LoadedPolicy } from './common.ts';
import { junitXml, type JunitCase, type JunitSuite } from './junit.ts';
import { routeFindings } from './route-coverage.ts';
import { loadSuite, type Suite, type TestCase } from './suite.ts';

export function runCase(io: CliIo, loaded: LoadedPolicy, c: TestCase): string | null {
  const { engine, policyPath } = loaded;
  if (c.rule !== null && !engine.rule(c.rule)) return `names rule ${c.rule}, which is not a line of ${display(io, policyPath)}`;
  const { unknown } = permissionsFromNames(engine.scopes, c.subject.permissions);
  if (unknown.length > 0) return `names permission ${unknown.join(', ')}, which ${display(io, loaded.scopesPath)} does not declare`;
  const d = engine.decide(c.subject, c.method, c.path);
  const decided = d.allowed ? 'allow' : 'deny';
  if (decided === c.expect && (c.rule === null || c.rule === d.ruleId || namedLineDecides(loaded, c))) return null;
  const expected = c.rule ? `${c.expect} by ${c.rule}` : c.expect;
  return `expected ${expected}, decided ${decided} by ${ruleRef(io, policyPath, d.ruleId ? engine.rule(d.ruleId) : undefined, d.ruleId)}`;
}

/**
 * A case checks the decision; a `rule:` it names must be one of the lines that make it: a deny
 * line that refuses the request (deny overrides, so any matching deny refuses it, whichever one the
 * file names first), or an allow line that allows it. A new deny line that also refuses the
 * request then leaves the case alone, while removing the line the case relies on still fails it.
 */
function namedLineDecides({ engine }: LoadedPolicy, c: TestCase): boolean {
  return engine.matchingRules(c.subject, c.method, c.path).some((r) => r.id === c.rule && r.effect === c.expect);
}

interface Coverage {
  loaded: LoadedPolicy;
  exercised: Set<string>;
}

function reportCoverage(io: CliIo, coverage: Iterable<Coverage>, min: number | null): boolean {
  let ok = true;
  for (const { loaded, exercised } of coverage) {
    const { rules } = loaded.engine;
    const missed = rules.filter((r) => !exercised.has(r.id));
    const pct = rules.length === 0 ? 100 : (100 * (rules.length - missed.length)) / rules.length;
    const file = display(io, loaded.policyPath);
    io.stdout(`coverage ${file}: ${rules.length - missed.length}/${rules.length} lines exercised (${pct.toFixed(1)}%)\n`);
    for (const r of missed) io.stdout(`  ${file}:${r.line} ${r.id}: no case exercises this line\n`);
    if (min !== null && pct < min) {
      io.stderr(`coverage of ${file} is ${pct.toFixed(1)}%, below --min-coverage ${min}%\n`);
      ok = false;
    }
  }
  return ok;
}

export async function testCommand(args: string[], given: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      junit: { type: 'string' }, coverage: { type: 'boolean', default: false }, 'min-coverage': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  // --json: the lines below stay unprinted; one document says it all at the end.
  const io: CliIo = values.json ? { ...given, stdout: () => {} } : given;
  const min = values['min-coverage'] === undefined ? null : Number(values['min-coverage']);
  if (min !== null && !(min >= 0 && min <= 100)) throw new CliError('--min-coverage takes a percentage between 0 and 100');
  const suitesDir = io.policy ? join(dirname(io.policy.file), 'tests') : join(policiesDir(io.cwd), 'tests');
  const files = positionals.length > 0 ? resolveAll(io, positionals) : await listFiles(suitesDir, ['.yaml', '.yml']);
  if (files.length === 0) throw new CliError('no policy test suites found (policies/tests/*.yaml)');

  const wantCoverage = values.coverage || min !== null;
  const load = policyLoader(io);
  const junit: JunitSuite[] = [];
  const coverage = new Map<string, Coverage>();
  let passed = 0;
  let failed = 0;

  for (const file of files) {
    const shown = display(io, file);
    let suite: Suite;
    let loaded: LoadedPolicy;
    try {
      suite = await loadSuite(file, shown);
      loaded = await load(suite.policyPath, suite.modelPath);
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      io.stderr(`${e.message}\n`);
      junit.push({ name: shown, cases: [], error: e.message });
      failed += 1;
      continue;
    }
    const pair = `${loaded.modelPath}\n${loaded.policyPath}`;
    const cov = coverage.get(pair) ?? { loaded, exercised: new Set<string>() };
    coverage.set(pair, cov);
    const cases: JunitCase[] = [];
    for (const c of suite.cases) {
      const failure = runCase(io, loaded, c);
      if (failure) {
        io.stdout(`FAIL ${c.file}:${c.line} ${c.name}: ${failure}\n`);
        failed += 1;
      } else {
        passed += 1;
      }
      cases.push({ name: c.name, file: c.file, line: c.line, failure });
      if (wantCoverage) for (const r of loaded.engine.matchingRules(c.subject, c.method, c.path)) cov.exercised.add(r.id);
    }
    junit.push({ name: shown, cases, error: null });
  }

  let routesOk = true;
  const routes: string[] = [];
  for (const { loaded } of coverage.values()) {
    for (const f of routeFindings(loaded.engine)) {
      routesOk = false;
      routes.push(`${display(io, loaded.policyPath)}${f.line === null ? '' : `:${f.line}`}: ${f.message}`);
      io.stdout(`ROUTE ${routes.at(-1)}\n`);
    }
  }
  io.stdout(`${passed} passed, ${failed} failed\n`);
  const coverageOk = wantCoverage ? reportCoverage(io, coverage.values(), min) : true;
  if (values.junit) await writeFile(resolve(io.cwd, values.junit), junitXml(junit));
  const ok = failed === 0 && routesOk && coverageOk;
  if (values.json) {
    const report = testReport(given, { ok, passed, failed, junit, routes, coverage: wantCoverage ? [...coverage.values()] : null });
    given.stdout(`${JSON.stringify(report)}\n`);
  }
  return ok ? 0 : 1;
}

/** `policy test --json`: the counts, each suite's cases, the route findings and the coverage asked for. */
function testReport(
  io: CliIo, r: { ok: boolean; passed: number; failed: number; junit: JunitSuite[]; routes: string[]; coverage: Coverage[] | null },
) {
  return {
    ok: r.ok,
    passed: r.passed,
    failed: r.failed,
    routes: r.routes,
    suites: r.junit.map((s) => ({
      file: s.name,
      error: s.error,
      cases: s.cases.map((c) => ({ name: c.name, file: c.file, line: c.line, ok: c.failure === null, failure: c.failure })),
    })),
    coverage: r.coverage?.map(({ loaded, exercised }) => ({
      policy: display(io, loaded.policyPath),
      lines: loaded.engine.rules.length,
      exercised: loaded.engine.rules.filter((x) => exercised.has(x.id)).length,
      missed: loaded.engine.rules.filter((x) => !exercised.has(x.id)).map((x) => x.id),
    })) ?? null,
  };
}
