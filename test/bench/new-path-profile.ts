// node --import tsx test/bench/new-path-profile.ts [DIR] [LINES]
// One decision on a path never seen before, profiled two ways over the same policy: through
// node-casbin's enforcer (how the gateway decided every new path before the compiled form) and
// through the compiled form the request path uses now. Writes DIR/enforcer.cpuprofile and
// DIR/compiled.cpuprofile (read them with test/bench/profile-top.ts) and prints µs per decision.
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../src/config.ts';
import { checkBundle } from '../../src/policy/bundle.ts';
import type { PolicyEngine, PolicySubject } from '../../src/policy/engine.ts';
import { generatedPolicyText, generatedScopesText, shippedModelText, shippedPolicyText } from './generated-policy.ts';

const dir = resolve(process.argv[2] ?? 'new-path-profile');
const lines = Number(process.argv[3] ?? '70');
const texts = lines > 70
  ? { model: shippedModelText(), policy: generatedPolicyText(lines - 70), scopes: generatedScopesText() }
  : { model: shippedModelText(), policy: shippedPolicyText(), scopes: readFileSync(resolve(packageRoot, 'policies/scopes.yaml'), 'utf8') };
const { engine } = await checkBundle(texts, { policy: 'policy', scopes: 'scopes', scopesFromFile: true });

// A key allowed on a resource id, and a key refused where its refusal names the permission it lacks.
const allowed: PolicySubject = { kind: 'key', permissions: ['ai'], role: 'user' };
const refused: PolicySubject = { kind: 'key', permissions: ['mcp'], role: 'user' };
type Decide = PolicyEngine['decide'];

function run(decide: Decide, calls: number, from: number): number {
  const paths = Array.from({ length: calls }, (_, i) => (from + i).toString(16));
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    decide(allowed, 'GET', `/api/projects/${paths[i]}`);
    decide(refused, 'POST', `/api/ai/chat/${paths[i]}`);
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / (2 * calls);
}

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
await mkdir(dir, { recursive: true });
for (const [name, decide, calls] of [['enforcer', (await engine.reference()).decide, 2_000], ['compiled', engine.decide, 200_000]] as const) {
  run(decide, Math.min(calls, 1_000), 1e9);
  await session.post('Profiler.start');
  const micros = run(decide, calls, 0);
  const { profile } = await session.post('Profiler.stop');
  await writeFile(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
  console.log(`${name}: ${micros.toFixed(2)} µs a decision on a new path (${lines} lines; half allowed keys, half refused keys whose refusal names a permission) -> ${join(dir, `${name}.cpuprofile`)}`);
}
session.disconnect();
