import { expect } from 'chai';
import { METHODS } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canonicalizeStepByStep } from '../../../src/http/canonical-path.ts';
import { createPolicyEngine, type PolicyEngine } from '../../../src/policy/engine.ts';
import { decisionAsServed, policyPath, refusalOf, subjectOf, type PolicyCaller } from '../../../src/policy/refusal.ts';
import { parseScopes } from '../../../src/policy/scopes.ts';
import { shippedPolicies } from '../../unit/policy/helpers.ts';
import { startMatrixGateway, type MatrixGateway } from '../matrix/support.ts';
import { rawRequest } from '../hostile/raw.ts';

// Odd spellings of requests sent through the real server by every kind of caller, each answered as
// node-casbin's enforcer answers the same request once canonical: the status, the refusal's words
// and permission, and the line the console's explain names for it.

const PATHS = [
  '/api/admin/users', '/API/Admin/Users', '/api/%61dmin/users', '/api/%2561dmin', '/api//admin/users', '/api/admin/users/',
  '/api/./admin/users', '/api/x/../admin/users', '/api/admin%2Fusers', '/api/%2e%2e/admin', '/api/%2E%2E/admin', '/api/admin;x=1/users',
  '/api/admin/users%00', '/api/%C0%AE%C0%AE/admin', '/api/%c3%a9t%c3%a9', `/api/projects/${'a/'.repeat(200)}x`,
  `/api/projects/${'x'.repeat(3000)}`, '/api/billing/subscription/pending.json', '/api/billing/subscription/Pending.JSON',
  '/api/auth/get-session', '/api/auth/get-session.json', '/api/auth/api-key/list/', '/api/ai/automations/run', '/api/ai/chat',
  '/api/openapi.json', '/api/auth/sign-in/email', '/api/auth/sign-in/email.json', '/api/mcp', '/api/%6Dcp', '/healthz', '/metrics',
  '/api/ai/integrations/oauth/x', '/api/ai/integrations/oauthx', '/api/ai/integrations/OAuth/x', '/api/billing', '/api/billing/x/..',
];
const VERBS = ['GET', 'HEAD', 'POST', 'OPTIONS', 'DELETE', 'PROPFIND', 'get', 'FOO'];

type Who = 'anonymous' | 'session' | 'admin' | 'key' | 'ai';
const CALLERS: Record<Who, PolicyCaller> = {
  anonymous: { kind: 'anonymous' },
  session: { kind: 'session', user: { role: 'user' } },
  admin: { kind: 'session', user: { role: 'admin' } },
  key: { kind: 'key', user: { role: 'user' }, key: { permissions: {} } },
  ai: { kind: 'key', user: { role: 'user' }, key: { permissions: { ai: ['access'] } } },
};

/** The request path as the policy reads it, or null when the gateway refuses the spelling (400). */
function canonical(raw: string): string | null {
  try {
    return policyPath(canonicalizeStepByStep(raw), '/api');
  } catch {
    return null;
  }
}

describe('the request path decides as the enforcer does, and explain names the same line', function () {
  this.timeout(120_000);
  let m: MatrixGateway;
  let reference: PolicyEngine;
  before(async () => {
    m = await startMatrixGateway('A');
    const [model, policy, scopes] = await Promise.all(['model.conf', 'variant-a.csv', 'scopes.yaml'].map((f) => readFile(join(shippedPolicies, f), 'utf8')));
    const compiled = await createPolicyEngine(model!, policy!, { scopes: parseScopes(scopes!) });
    // The enforcer's answers in place of the compiled form's: what every request must get.
    reference = { ...compiled, ...(await compiled.reference()) };
  });
  after(async () => m?.stop());

  const credential = (who: Who): string[] => {
    const c = m.parties[who].client();
    const key = c.headers['x-api-key'];
    if (key) return [`x-api-key: ${key}`];
    const cookie = c.cookies.get('keygate_session');
    return cookie ? [`Cookie: keygate_session=${cookie}`] : [];
  };

  for (const who of Object.keys(CALLERS) as Who[]) {
    it(`${who}: ${PATHS.length} spellings by ${VERBS.length} methods`, async () => {
      const wrong: string[] = [];
      const admin = m.parties.admin.client();
      for (const raw of PATHS) {
        for (const method of VERBS) {
          const body = method === 'GET' || method === 'HEAD' ? '' : '{}';
          const res = await rawRequest(m.gw.url, [
            `${method} ${raw} HTTP/1.1`, `Host: ${new URL(m.gw.url).host}`, ...credential(who), ...(body ? ['Content-Type: application/json'] : []),
          ], body);
          const path = canonical(raw);
          const said = (() => {
            try {
              return JSON.parse(res.body) as { detail?: string; requiredPermission?: string };
            } catch {
              return {};
            }
          })();
          const at = `${who} ${method} ${raw.slice(0, 80)}`;
          // Node's parser refuses a method it does not know, in any case but upper.
          if (!METHODS.includes(method) || path === null) {
            if (res.status !== 400) wrong.push(`${at}: ${res.status}, expected 400`);
            continue;
          }
          const refusal = refusalOf(reference, CALLERS[who], method, path);
          if (refusal && path === '/api/mcp') {
            // The MCP endpoint answers every refusal with its OAuth 401 (sections 8 and 15).
            if (res.status !== 401) wrong.push(`${at}: ${res.status}, the enforcer refuses it (MCP's 401)`);
          } else if (refusal) {
            const status = refusal.code === 'UNAUTHENTICATED' ? 401 : 403;
            if (res.status !== status) wrong.push(`${at}: ${res.status}, the enforcer refuses it (${status})`);
            else if (method !== 'HEAD' && (said.detail !== refusal.detail || said.requiredPermission !== refusal.requiredPermission)) {
              wrong.push(`${at}: ${JSON.stringify(said)}, the enforcer says ${JSON.stringify(refusal)}`);
            }
          } else if ((res.status === 401 || res.status === 403) && said.detail !== undefined && /route|API key|Sign in/.test(said.detail)) {
            wrong.push(`${at}: ${res.status} ${said.detail}, the enforcer allows it`);
          }
          // The console takes a path of at most 2,048 characters.
          if (method === 'HEAD' || method === 'PROPFIND' || raw.length > 2048) continue;
          // The console's explain, asked about the canonical spelling of the request (letters as sent).
          const caller = CALLERS[who];
          const subject = subjectOf(caller);
          const expected = decisionAsServed(reference, subject, method, path).decision;
          const ask = {
            method, path: canonicalizeStepByStep(raw), subject: caller.kind, ...(caller.kind === 'anonymous' ? {} : { role: caller.user.role }),
            ...(who === 'ai' ? { permissions: ['ai'] } : {}),
          };
          const x = (await admin.post('/api/admin/policy/explain', ask)).body as { decision: string; decidedBy: { id: string } | null };
          if (x.decision !== (expected.allowed ? 'allow' : 'deny') || (x.decidedBy?.id ?? null) !== expected.ruleId) {
            wrong.push(`${at}: explain ${x.decision} by ${x.decidedBy?.id ?? 'no line'}, the enforcer ${expected.allowed} by ${expected.ruleId}`);
          }
        }
      }
      expect(wrong, wrong.join('\n')).to.deep.equal([]);
    });
  }
});
