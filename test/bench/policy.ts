// How much a policy decision costs a request: `decide` of the engine the gateway uses, with its
// memo, over a realistic mix of distinct requests.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { packageRoot } from '../../src/config.ts';
import { createPolicyEngine, loadPolicyEngine, type PolicyEngine, type PolicySubject } from '../../src/policy/engine.ts';
import { parseScopes } from '../../src/policy/scopes.ts';

export interface PolicyBenchResult {
  calls: number;
  distinct: number;
  allowedShare: number;
  /** µs per decide over every call, the first (uncached) decision of each distinct request included. */
  amortizedMicros: number;
  /** µs for a first decision of a request: a casbin evaluation, plus the permission search on a refused key. */
  coldMicros: number;
}

export interface Ask { subject: PolicySubject; method: string; path: string; weight: number }

const key = (...permissions: string[]): PolicySubject => ({ kind: 'key', permissions, role: null });
const session = (role: 'user' | 'admin'): PolicySubject => ({ kind: 'session', permissions: [], role });
const anonymous: PolicySubject = { kind: 'anonymous', permissions: [], role: null };
const viaMcp: PolicySubject = { kind: 'key', permissions: ['mcp'], role: null, channel: 'mcp' };

// Mostly keys reading the upstream API, some writes and refusals, browser sessions, a few
// anonymous callers. Weights are relative frequencies.
export const MIX: readonly Ask[] = [
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

/** Indices into the mix drawn by weight, fixed up front so the timed loop does no random draws. */
export function sequence(mix: readonly Ask[], calls: number, seed = 42): Uint16Array {
  const cumulative: number[] = [];
  let total = 0;
  for (const a of mix) cumulative.push((total += a.weight));
  let state = seed;
  const next = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32) * total;
  const out = new Uint16Array(calls);
  for (let i = 0; i < calls; i++) {
    const r = next();
    let j = 0;
    while (cumulative[j]! <= r) j++;
    out[i] = j;
  }
  return out;
}

export function run(engine: PolicyEngine, mix: readonly Ask[], seq: Uint16Array): number {
  let allowed = 0;
  for (let i = 0; i < seq.length; i++) {
    const a = mix[seq[i]!]!;
    if (engine.decide(a.subject, a.method, a.path).allowed) allowed++;
  }
  return allowed;
}

export const shippedScopes = () => parseScopes(readFileSync(resolve(packageRoot, 'policies/scopes.yaml'), 'utf8'));
export const load = () => loadPolicyEngine(resolve(packageRoot, 'policies/model.conf'), resolve(packageRoot, 'policies/variant-a.csv'), { scopes: shippedScopes() });

async function measure(load: () => Promise<PolicyEngine>, mix: readonly Ask[], calls: number): Promise<PolicyBenchResult> {
  const seq = sequence(mix, calls);
  // Warm the JIT on an engine of its own, so the measured engine starts with an empty memo.
  run(await load(), mix, seq.subarray(0, 200_000));

  const cold = await load();
  let started = process.hrtime.bigint();
  for (const a of mix) cold.decide(a.subject, a.method, a.path);
  const coldMicros = Number(process.hrtime.bigint() - started) / 1e3 / mix.length;

  const engine = await load();
  started = process.hrtime.bigint();
  const allowed = run(engine, mix, seq);
  const amortizedMicros = Number(process.hrtime.bigint() - started) / 1e3 / calls;
  return { calls, distinct: mix.length, allowedShare: allowed / calls, amortizedMicros, coldMicros };
}

export function benchPolicy(calls = 1_000_000): Promise<PolicyBenchResult> {
  return measure(load, MIX, calls);
}

// An operator's 64 scopes of two actions each (the most scopes.yaml may declare), each guarding a router of its
// own: reads need the scope, writes need its write action. Keys hold a few scopes each, so most
// asks on another scope's router are refusals whose requiredPermission must be found.
const SCOPES_64 = Array.from({ length: 64 }, (_, i) => `r${String(i).padStart(2, '0')}`);
const load64 = () => {
  const scopes = parseScopes(`scopes:\n${SCOPES_64.map((n) => `  ${n}: { label: Router ${n}, actions: [read, write] }`).join('\n')}\n`);
  const lines = SCOPES_64.flatMap((n) => [
    `p, key, !perm:${n}, .*, /api/${n}/**, deny, key.${n}-needs-${n}`,
    `p, key, !perm:${n}:write, ^(?!(GET|HEAD|OPTIONS)$).+$, /api/${n}/**, deny, key.${n}-writes`,
  ]);
  const base = readFileSync(resolve(packageRoot, 'policies/variant-a.csv'), 'utf8');
  return createPolicyEngine(readFileSync(resolve(packageRoot, 'policies/model.conf'), 'utf8'), `${base}\n${lines.join('\n')}\n`, { scopes });
};
const MIX_64: readonly Ask[] = SCOPES_64.flatMap((n, i) => {
  const holder = key(`${n}:read`, `${SCOPES_64[(i + 1) % 64]}:write`, 'mcp');
  return [
    { subject: holder, method: 'GET', path: `/api/${n}/items`, weight: 6 },
    { subject: holder, method: 'POST', path: `/api/${n}/items`, weight: 2 },
    { subject: holder, method: 'GET', path: `/api/${SCOPES_64[(i + 7) % 64]}/items`, weight: 1 },
    { subject: key(), method: 'GET', path: `/api/${n}/items/i_1`, weight: 1 },
  ];
});

export function benchPolicy64Scopes(calls = 1_000_000): Promise<PolicyBenchResult> {
  return measure(load64, MIX_64, calls);
}
