// What `policy lint FILE` was handed: a policy (CSV), a scopes file or a test suite (YAML). Each
// is checked as what it is; before, every file was read as CSV lines.
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { CliError, display, listFiles, type CliIo } from './common.ts';
import { loadSuite } from './suite.ts';

export type FileKind = 'policy' | 'scopes' | 'suite';

/** By the name, then the YAML's top-level keys (`scopes:` or `cases:`); a model is refused. */
export async function kindOf(io: CliIo, file: string): Promise<FileKind> {
  const name = basename(file);
  if (/\.conf$/i.test(name)) {
    throw new CliError(`${display(io, file)}: a model file; lint checks it with each policy it reads (keygate policy lint POLICY.csv)`);
  }
  if (!/\.ya?ml$/i.test(name)) return 'policy';
  if (/^scopes\.ya?ml$/i.test(name)) return 'scopes';
  let doc: unknown;
  try {
    doc = parseYaml(await readFile(file, 'utf8'));
  } catch (e) {
    const why = (e as Error).message.split('\n')[0];
    throw new CliError(`${display(io, file)}: cannot be read as YAML (${why}), so lint cannot tell a scopes file from a test suite`);
  }
  if (doc && typeof doc === 'object' && 'scopes' in doc) return 'scopes';
  if ((doc && typeof doc === 'object' && 'cases' in doc) || basename(dirname(file)) === 'tests') return 'suite';
  throw new CliError(`${display(io, file)}: neither a scopes file (top-level "scopes:") nor a test suite ("cases:");`
    + ' lint takes policy .csv files, a scopes file or a suite');
}

/** The policies a scopes file is linted with: the CSV files beside it. */
export const policiesBeside = (scopesFile: string): Promise<string[]> => listFiles(dirname(scopesFile), ['.csv']);

/** A suite is linted by loading it: its fields, subjects and the policy it names; prints the findings' count. */
export async function lintSuite(io: CliIo, file: string): Promise<number> {
  try {
    const suite = await loadSuite(file, display(io, file));
    const shown = display(io, file);
    const policy = display(io, suite.policyPath);
    io.stdout(`${shown}: a test suite of ${suite.cases.length} cases for ${policy}; \`keygate policy test ${shown}\` runs it\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    io.stdout(`${e.message}\n`);
    return e.message.split('\n').length;
  }
}
