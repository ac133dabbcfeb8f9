// `keygate policy diff` with no files inside a git checkout: the working model, policy and scopes
// against the same paths at a commit (HEAD unless --base), read with `git show REF:path`.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { checkBundle } from '../../policy/bundle.ts';
import { CliError, display, type CliIo, type LoadedPolicy } from './common.ts';

const run = promisify(execFile);

async function git(cwd: string, args: string[]): Promise<string | null> {
  try {
    return (await run('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch {
    return null;
  }
}

/** The top of the git checkout holding `cwd`, or null outside one (or without git). */
export async function gitTopLevel(cwd: string): Promise<string | null> {
  return (await git(cwd, ['rev-parse', '--show-toplevel']))?.trim() ?? null;
}

export interface WorkingFiles { policy: string; model: string; scopes: string }

async function buildLoaded(
  io: CliIo, texts: { model: string; policy: string; scopes: string }, names: WorkingFiles,
): Promise<LoadedPolicy> {
  try {
    const { engine } = await checkBundle(texts, { policy: names.policy, scopes: names.scopes, scopesFromFile: true });
    return { engine, policyPath: names.policy, modelPath: names.model, scopesPath: names.scopes };
  } catch (e) {
    throw new CliError(`${names.policy}: ${(e as Error).message}`);
  }
}

async function readWorking(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    throw new CliError(`${path}: cannot read it`);
  }
}

/**
 * The policy at `ref` and the working one. A file git does not track (the shipped model when
 * keygate is installed as a package, say) is the same on both sides; a tracked one missing at
 * `ref` is an error naming it.
 */
export async function gitSides(
  io: CliIo, top: string, ref: string, files: WorkingFiles,
): Promise<{ oldP: LoadedPolicy; newP: LoadedPolicy }> {
  // A ref that starts with "-" would be read by git as an option (`--output=FILE` writes a file).
  if (ref.startsWith('-') || (await git(top, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])) === null) {
    throw new CliError(`--base ${ref}: not a commit of the git checkout at ${top}`);
  }
  const atRef = async (path: string): Promise<{ text: string; name: string }> => {
    const rel = relative(top, path);
    const working = { text: await readWorking(path), name: display(io, path) };
    if (rel.startsWith('..') || (await git(top, ['ls-files', '--error-unmatch', '--', rel])) === null) return working;
    const spec = `${ref}:${rel.split(sep).join('/')}`;
    const text = await git(top, ['show', spec]);
    if (text === null) throw new CliError(`${spec}: not in ${ref}; name the files to compare: keygate policy diff OLD NEW`);
    return { text, name: spec };
  };
  const [policy, model, scopes] = await Promise.all([atRef(files.policy), atRef(files.model), atRef(files.scopes)]);
  const working = {
    model: await readWorking(files.model), policy: await readWorking(files.policy), scopes: await readWorking(files.scopes),
  };
  const [oldP, newP] = await Promise.all([
    buildLoaded(io, { model: model.text, policy: policy.text, scopes: scopes.text },
      { policy: policy.name, model: model.name, scopes: scopes.name }),
    buildLoaded(io, working, { policy: files.policy, model: files.model, scopes: files.scopes }),
  ]);
  return { oldP, newP };
}
