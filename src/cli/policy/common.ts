// What the policy subcommands share: where the files are, how an engine is loaded with messages a
// reader can act on, and how subjects and lines are named in output.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { packageRoot } from '../../config.ts';
import { createPolicyEngineFromRules, type PolicyEngine, type PolicySubject } from '../../http/policy/engine.ts';
import { describeProblems, parsePolicy, type PolicyRule } from '../../http/policy/rules.ts';

export interface CliIo {
  /** Receives whole lines, newline included, ready for process.stdout.write. */
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
}

/** A failure already worded for the user: the CLI prints its message and exits 1. */
export class CliError extends Error {
  override name = 'CliError';
}

export interface LoadedPolicy {
  engine: PolicyEngine;
  policyPath: string;
  modelPath: string;
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

export type PolicyLoader = (policyPath: string, modelPath?: string) => Promise<LoadedPolicy>;

/**
 * Loads each pair of files once per command, refusing malformed lines with their line numbers.
 * Not shared between commands: the files may change between two runs in one process.
 */
export function policyLoader(io: CliIo): PolicyLoader {
  const engines = new Map<string, Promise<LoadedPolicy>>();
  return (policyPath, modelPath = defaultModelFor(policyPath)) => {
    const key = `${modelPath}\n${policyPath}`;
    let loaded = engines.get(key);
    if (!loaded) {
      loaded = (async () => {
        const [modelText, policyText] = await Promise.all([readText(modelPath, 'model'), readText(policyPath, 'policy')]);
        const parsed = parsePolicy(policyText);
        if (parsed.problems.length > 0) throw new CliError(describeProblems(parsed.problems, display(io, policyPath)));
        try {
          return { engine: await createPolicyEngineFromRules(modelText, parsed.rules), policyPath, modelPath };
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

export function subjectLabel(s: PolicySubject): string {
  if (s.kind === 'anonymous') return 'anonymous';
  const perms = s.kind === 'key' ? [...s.permissions].sort() : [];
  const attrs = [...perms, ...(s.kind === 'session' && s.role === 'admin' ? ['admin'] : [])];
  return attrs.length > 0 ? `${s.kind}[${attrs.join(',')}]` : s.kind;
}

/** The subjects `diff` compares and `lint` probes with. */
export const standardSubjects: readonly PolicySubject[] = [
  { kind: 'anonymous', permissions: [], role: null },
  { kind: 'session', permissions: [], role: 'user' },
  { kind: 'session', permissions: [], role: 'admin' },
  { kind: 'key', permissions: [], role: 'user' },
  { kind: 'key', permissions: ['ai'], role: 'user' },
  { kind: 'key', permissions: ['mcp'], role: 'user' },
  { kind: 'key', permissions: ['ai', 'mcp'], role: 'user' },
];

export function ruleRef(io: CliIo, policyPath: string, rule: PolicyRule | undefined, id: string | null): string {
  if (!id) return 'no line (default deny)';
  return rule ? `${id} (${display(io, policyPath)}:${rule.line})` : id;
}
