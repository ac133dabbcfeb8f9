// How much a policy decision costs a request: `decide` of the engine the gateway uses, with its
// memo, over a realistic mix of distinct requests.
import { resolve } from 'node:path';
import { packageRoot } from '../../src/config.ts';
import { loadPolicyEngine, type PolicyEngine, type PolicySubject } from '../../src/http/policy/engine.ts';

export interface PolicyBenchResult {
  calls: number;
  distinct: number;
  allowedShare: number;
  /** µs per decide over every call, the first (uncached) decision of each distinct request included. */
  amortizedMicros: number;
  /** µs for a first decision of a request: a casbin evaluation, plus the permission search on a refused key. */
  coldMicros: number;
}

interface Ask { subject: PolicySubject; method: string; path: string; weight: number }

const key = (...permissions: string[]): PolicySubject => ({ kind: 'key', permissions, role: null });
const session = (role: 'user' | 'admin'): PolicySubject => ({ kind: 'session', permissions: [], role });
const anonymous: PolicySubject = { kind: 'anonymous', permissions: [], role: null };
const viaMcp: PolicySubject = { kind: 'key', permissions: ['mcp'], role: null, channel: 'mcp' };

// Mostly keys reading the upstream API, some writes and refusals, browser sessions, a few
// anonymous callers. Weights are relative frequencies.
const MIX: readonly Ask[] = [
  ...['/api/projects', '/api/projects/p_1', '/api/projects/p_2', '/api/projects/p_3', '/api/projects/p_1/tasks', '/api/tasks/t_9']
    .flatMap((path) => [
      { subject: key(), method: 'GET', path, weight: 20 },
      { subject: key('mcp'), method: 'GET', path, weight: 6 },
      { subject: session('user'), method: 'GET', path, weight: 6 },
    ]),
  { subject: key(), method: 'POST', path: '/api/projects', weight: 6 },
  { subject: key(), method: 'PATCH', path: '/api/projects/p_1', weight: 4 },
  { subject: key(), method: 'DELETE', path: '/api/tasks/t_9', weight: 2 },
  { subject: key(), method: 'GET', path: '/api/auth/get-session', weight: 8 },
  { subject: key(), method: 'GET', path: '/api/api-keys', weight: 3 },
  { subject: key(), method: 'POST', path: '/api/api-keys', weight: 1 },
  { subject: key(), method: 'GET', path: '/api/billing/invoices', weight: 2 },
  { subject: key(), method: 'POST', path: '/api/billing/checkout', weight: 1 },
  { subject: key(), method: 'POST', path: '/api/ai/chat', weight: 2 },
  { subject: key('ai'), method: 'POST', path: '/api/ai/chat', weight: 4 },
  { subject: key('ai'), method: 'GET', path: '/api/ai/threads', weight: 2 },
  { subject: key('ai'), method: 'POST', path: '/api/ai/threads', weight: 1 },
  { subject: key(), method: 'GET', path: '/api/admin/users', weight: 1 },
  { subject: key(), method: 'GET', path: '/api/organizations/o_1/members', weight: 1 },
  { subject: key(), method: 'GET', path: '/api/auth/api-key/list', weight: 2 },
  { subject: key(), method: 'POST', path: '/api/push/subscriptions', weight: 1 },
  { subject: key('ai'), method: 'PUT', path: '/api/ai/settings', weight: 1 },
  { subject: session('user'), method: 'DELETE', path: '/api/api-keys/k_1', weight: 1 },
  { subject: key(), method: 'POST', path: '/api/auth/sign-out', weight: 1 },
  { subject: key('mcp'), method: 'POST', path: '/api/mcp', weight: 6 },
  { subject: key(), method: 'POST', path: '/api/mcp', weight: 1 },
  { subject: viaMcp, method: 'GET', path: '/api/ai/automations', weight: 2 },
  { subject: viaMcp, method: 'POST', path: '/api/ai/automations/a_1/run', weight: 1 },
  { subject: session('user'), method: 'POST', path: '/api/projects', weight: 3 },
  { subject: session('user'), method: 'GET', path: '/api/auth/get-session', weight: 4 },
  { subject: session('user'), method: 'POST', path: '/api/api-keys', weight: 1 },
  { subject: session('user'), method: 'GET', path: '/api/admin/users', weight: 1 },
  { subject: session('admin'), method: 'GET', path: '/api/admin/api-keys', weight: 1 },
  { subject: session('user'), method: 'GET', path: '/settings/developers', weight: 1 },
  { subject: anonymous, method: 'POST', path: '/api/auth/sign-in/email', weight: 1 },
  { subject: anonymous, method: 'GET', path: '/api/projects', weight: 1 },
  { subject: anonymous, method: 'GET', path: '/healthz', weight: 2 },
];

/** Indices into MIX drawn by weight, fixed up front so the timed loop does no random draws. */
function sequence(calls: number, seed = 42): Uint8Array {
  const cumulative: number[] = [];
  let total = 0;
  for (const a of MIX) cumulative.push((total += a.weight));
  let state = seed;
  const next = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32) * total;
  const out = new Uint8Array(calls);
  for (let i = 0; i < calls; i++) {
    const r = next();
    let j = 0;
    while (cumulative[j]! <= r) j++;
    out[i] = j;
  }
  return out;
}

function run(engine: PolicyEngine, seq: Uint8Array): number {
  let allowed = 0;
  for (let i = 0; i < seq.length; i++) {
    const a = MIX[seq[i]!]!;
    if (engine.decide(a.subject, a.method, a.path).allowed) allowed++;
  }
  return allowed;
}

const load = () => loadPolicyEngine(resolve(packageRoot, 'policies/model.conf'), resolve(packageRoot, 'policies/variant-a.csv'));

export async function benchPolicy(calls = 1_000_000): Promise<PolicyBenchResult> {
  const seq = sequence(calls);
  // Warm the JIT on an engine of its own, so the measured engine starts with an empty memo.
  run(await load(), seq.subarray(0, 200_000));

  const cold = await load();
  let started = process.hrtime.bigint();
  for (const a of MIX) cold.decide(a.subject, a.method, a.path);
  const coldMicros = Number(process.hrtime.bigint() - started) / 1e3 / MIX.length;

  const engine = await load();
  started = process.hrtime.bigint();
  const allowed = run(engine, seq);
  const amortizedMicros = Number(process.hrtime.bigint() - started) / 1e3 / calls;
  return { calls, distinct: MIX.length, allowedShare: allowed / calls, amortizedMicros, coldMicros };
}
