import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runPolicyCommand } from '../../../src/cli/policy/index.ts';

export const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
export const shippedPolicies = join(repoRoot, 'policies');

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

export async function runCli(args: string[], cwd = repoRoot): Promise<CliResult> {
  let out = '';
  let err = '';
  const code = await runPolicyCommand(args, { stdout: (s) => (out += s), stderr: (s) => (err += s), cwd });
  return { code, out, err };
}

/** A scratch working directory holding a copy of the shipped policies/ directory. */
export async function withPolicyCopy<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'keygate-policy-'));
  try {
    await cp(shippedPolicies, join(dir, 'policies'), { recursive: true });
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function summary(out: string): { passed: number; failed: number } {
  const m = /^(\d+) passed, (\d+) failed$/m.exec(out);
  if (!m) throw new Error(`no summary line in:\n${out}`);
  return { passed: Number(m[1]), failed: Number(m[2]) };
}
