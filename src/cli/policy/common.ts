// What the policy subcommands share: where the files are, how an engine is loaded with messages a
// reader can act on, and how subjects and lines are named in output.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { packageRoot } from '../../config.ts';
import { createPolicyEngineFromRules, type PolicyEngine, type PolicySubject } from '../../policy/engine.ts';
import { describeProblems, parsePolicy, type PolicyRule } from '../../policy/rules.ts';
import { parseScopes, ScopesError, type ScopeCatalog } from '../../policy/scopes.ts';
import { scopesFileFor } from '../../services/policy/index.ts';

export interface CliIo {
  /** Receives whole lines, newline included, ready for process.stdout.write. */
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  /** The configured model and policy file, when run by `keygate` with its configuration: the default files. */
  policy?: { model: string; file: string; scopes?: string };
}

/** A failure already worded for the user: the CLI prints its message and exits 1. */
export class CliError extends Error {
  override name = 'CliError';
}

export interface LoadedPolicy {
  engine: PolicyEngine;
  policyPath: string;
  modelPath: string;
  scopesPath: string;
}

/** The operator's policies/ directory when the working directory has one, else the shipped one. */
export function policiesDir(cwd: string): string {
  const local = join(cwd, 'policies');
  return existsSync(join(local, 'model.conf')) ? local : join(packageRoot, 'policies');
}

export function variantFile(dir: string, variant: string): string {
  return join(dir, `variant-${variant.toLowerCase()}.csv`);
}

/** The model beside a policy file is the one it was written for. */
export function defaultModelFor(policyPath: string): string {
  return join(dirname(policyPath), 'model.conf');
}

/** The scopes file a policy is read with: scopes.yaml beside it, else the shipped one. */
export function defaultScopesFor(policyPath: string): string {
  return scopesFileFor({ model: '', file: policyPath });
}

/** Reads and checks a scopes file; a mistake names the file, line and field. */
export async function loadScopes(io: CliIo, path: string): Promise<ScopeCatalog> {
  const text = await readText(path, 'scopes file');
  try {
    return parseScopes(text, display(io, path));
  } catch (e) {
    if (e instanceof ScopesError) throw new CliError(e.message);
    throw e;
  }
}

export function display(io: CliIo, path: string): string {
  const rel = relative(io.cwd, path);
  return rel.startsWith('..') ? path : rel;
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    throw new CliError(`${path}: cannot read the ${what}`);
  }
}

export type PolicyLoader = (policyPath: string, modelPath?: string, scopesPath?: string) => Promise<LoadedPolicy>;

/**
 * Loads each pair of files once per command, refusing malformed lines with their line numbers.
 * Not shared between commands: the files may change between two runs in one process.
 */
export function policyLoader(io: CliIo): PolicyLoader {
  const engines = new Map<string, Promise<LoadedPolicy>>();
  return (policyPath, modelPath = defaultModelFor(policyPath), scopesPath = defaultScopesFor(policyPath)) => {
    const key = `${modelPath}\n${policyPath}\n${scopesPath}`;
    let loaded = engines.get(key);
    if (!loaded) {
      loaded = (async () => {
        const [modelText, policyText] = await Promise.all([readText(modelPath, 'model'), readText(policyPath, 'policy')]);
        const parsed = parsePolicy(policyText);
        if (parsed.problems.length > 0) throw new CliError(describeProblems(parsed.problems, display(io, policyPath)));
        const scopes = await loadScopes(io, scopesPath);
        try {
          return { engine: await createPolicyEngineFromRules(modelText, parsed.rules, { scopes }), policyPath, modelPath, scopesPath };
        } catch (e) {
          throw new CliError(`${display(io, modelPath)}: ${(e as Error).message}`);
        }
      })();
      engines.set(key, loaded);
    }
    return loaded;
  };
}

export async function listFiles(dir: string, extensions: readonly string[]): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  return names.filter((n) => extensions.some((e) => n.endsWith(e))).sort().map((n) => join(dir, n));
}

export function resolveAll(io: CliIo, files: readonly string[]): string[] {
  return files.map((f) => resolve(io.cwd, f));
}

// One labelling and one set of compared subjects for the CLI and the console.
export { declaredPermissions, standardSubjects, subjectLabel } from '../../policy/decision-diff.ts';

export function ruleRef(io: CliIo, policyPath: string, rule: PolicyRule | undefined, id: string | null): string {
  if (!id) return 'no line (default deny)';
  return rule ? `${id} (${display(io, policyPath)}:${rule.line})` : id;
}
