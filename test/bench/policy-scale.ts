// Decisions and loading at any policy size: one decision on a path never seen before, on the
// shipped policy (70 lines) and on generated ones of 3,000 and 10,000 lines; and what starting,
// linting, applying and reloading a 10,000-line policy cost beside the shipped one, with the
// compiled form's memory.
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { packageRoot } from '../../src/config.ts';
import { runPolicyCommand } from '../../src/cli/policy/index.ts';
import { checkBundle } from '../../src/policy/bundle.ts';
import { compiledDecisions } from '../../src/policy/decisions.ts';
import { createPolicyEngineFromRules, type PolicyEngine, type PolicySubject } from '../../src/policy/engine.ts';
import { parsePolicyRows, ruleToCsvRow } from '../../src/policy/rules.ts';
import { generatedPolicyText, generatedScopesText, shippedModelText, shippedPolicyText } from './generated-policy.ts';

const SHIPPED_LINES = 70;

export interface NewPathFigures {
  lines: number;
  /** µs per decision by kind of request, each on a path never asked before. */
  byKind: { what: string; micros: number }[];
  /** The mean over the kinds. */
  micros: number;
}

export interface LoadingFigures {
  lines: number;
  /** ms: the files checked and built, then built again from the stored rows (what a start does). */
  startMs: number;
  /** ms: `keygate policy lint` over the policy and its scopes. */
  lintMs: number;
  /** ms: checked and built, as `policy apply` does before it writes. */
  applyMs: number;
  /** ms: built from the stored rows, as a fleet reload does. */
  reloadMs: number;
  /** MB of heap the compiled form holds, after a full collection. */
  compiledMb: number;
}

const textsFor = (lines: number) => ({
  model: shippedModelText(),
  policy: lines <= SHIPPED_LINES ? shippedPolicyText() : generatedPolicyText(lines - SHIPPED_LINES),
  scopes: lines <= SHIPPED_LINES ? '' : generatedScopesText(),
});

async function engineFor(lines: number): Promise<PolicyEngine> {
  const t = textsFor(lines);
  return (await checkBundle({ ...t, scopes: t.scopes || shippedScopesText() }, { policy: 'policy', scopes: 'scopes', scopesFromFile: true })).engine;
}

const shippedScopesText = () => readFileSync(resolve(packageRoot, 'policies/scopes.yaml'), 'utf8');

const key = (...permissions: string[]): PolicySubject => ({ kind: 'key', permissions, role: 'user' });

// Each kind of request on ids never asked before: allowed keys, a refused key whose refusal names a
// permission, a key on the admin API (never for keys), sessions, anonymous callers on random paths.
const KINDS: { what: string; subject: PolicySubject; method: string; path: (i: number) => string }[] = [
  { what: 'key, allowed', subject: key('ai'), method: 'GET', path: (i) => `/api/projects/${i.toString(16)}` },
  { what: 'key, refused, names a permission', subject: key('mcp'), method: 'POST', path: (i) => `/api/ai/chat/${i.toString(16)}` },
  { what: 'key, /api/admin/<random>', subject: key('ai'), method: 'GET', path: (i) => `/api/admin/${i.toString(16)}` },
  { what: 'session, allowed', subject: { kind: 'session', permissions: [], role: 'user' }, method: 'GET', path: (i) => `/api/projects/${i.toString(16)}/tasks` },
  { what: 'anonymous, /api/<random>', subject: { kind: 'anonymous', permissions: [], role: null }, method: 'GET', path: (i) => `/api/${i.toString(16)}` },
];

export async function benchNewPath(lines: number, calls = 100_000): Promise<NewPathFigures> {
  const engine = await engineFor(lines);
  const byKind: NewPathFigures['byKind'] = [];
  for (const k of KINDS) {
    // Spelled before the clock starts: what is timed is the decision, not the string building.
    const paths = Array.from({ length: calls }, (_, i) => k.path(i * 7919 + 1));
    for (let i = 0; i < 2_000; i++) engine.decide(k.subject, k.method, `/warm${paths[i]}`);
    const started = process.hrtime.bigint();
    for (const p of paths) engine.decide(k.subject, k.method, p);
    byKind.push({ what: k.what, micros: Number(process.hrtime.bigint() - started) / 1e3 / calls });
  }
  return { lines, byKind, micros: byKind.reduce((s, k) => s + k.micros, 0) / byKind.length };
}

/** The same decision through node-casbin's enforcer, the way every new path was decided before. */
export async function benchNewPathEnforcer(lines: number, calls = 300): Promise<number> {
  const engine = await engineFor(lines);
  const k = KINDS[0]!;
  const reference = await engine.reference();
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) reference.decide(k.subject, k.method, k.path(i));
  return Number(process.hrtime.bigint() - started) / 1e3 / calls;
}

const ms = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e6;

function collect(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

export async function benchLoading(lines: number): Promise<LoadingFigures> {
  const texts = textsFor(lines);
  const dir = await mkdtemp(join(tmpdir(), 'keygate-bench-policy-'));
  try {
    await cp(resolve(packageRoot, 'policies'), join(dir, 'policies'), { recursive: true });
    if (texts.scopes) {
      await writeFile(join(dir, 'policies/variant-a.csv'), texts.policy);
      await writeFile(join(dir, 'policies/scopes.yaml'), texts.scopes);
    }
    const source = { policy: 'policy', scopes: 'scopes', scopesFromFile: true };
    const scopesText = texts.scopes || shippedScopesText();
    let t = process.hrtime.bigint();
    const bundle = await checkBundle({ ...texts, scopes: scopesText }, source);
    const rows = bundle.rules.map(ruleToCsvRow);
    await createPolicyEngineFromRules(texts.model, parsePolicyRows(rows).rules, { scopes: bundle.engine.scopes });
    const startMs = ms(t);
    t = process.hrtime.bigint();
    await checkBundle({ ...texts, scopes: scopesText }, source);
    const applyMs = ms(t);
    t = process.hrtime.bigint();
    await createPolicyEngineFromRules(texts.model, parsePolicyRows(rows).rules, { scopes: bundle.engine.scopes });
    const reloadMs = ms(t);
    t = process.hrtime.bigint();
    await runPolicyCommand(['lint', 'policies/variant-a.csv'], { stdout: () => {}, stderr: () => {}, cwd: dir });
    const lintMs = ms(t);

    // Three forms kept at once, so what is left over from the steps above weighs less in the figure.
    const gc = collect();
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    const held = [1, 2, 3].map(() => compiledDecisions(bundle.rules, bundle.engine.scopes));
    gc();
    const compiledMb = (process.memoryUsage().heapUsed - before) / 3 / 2 ** 20;
    if (!held.every((h) => h.decide(key(), 'GET', '/api/projects').allowed)) throw new Error('the compiled form refused a key on /api/projects');
    return { lines, startMs, lintMs, applyMs, reloadMs, compiledMb };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export const newPathLine = (f: NewPathFigures): string =>
  `${f.lines.toLocaleString('en')} lines: ${f.micros.toFixed(2)} µs a decision on a new path (${f.byKind.map((k) => `${k.what} ${k.micros.toFixed(2)}`).join('; ')})`;

export const loadingLine = (f: LoadingFigures): string =>
  `${f.lines.toLocaleString('en')} lines: start ${Math.round(f.startMs)} ms, lint ${Math.round(f.lintMs)} ms, apply ${Math.round(f.applyMs)} ms, reload ${Math.round(f.reloadMs)} ms; compiled form ${f.compiledMb.toFixed(1)} MB`;
