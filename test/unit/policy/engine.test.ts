import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createPolicyEngine,
  createPolicyEngineFromRules,
  loadPolicyEngine,
  PolicyLoadError,
  type PolicyEngine,
  type PolicySubject,
} from '../../../src/policy/engine.ts';
import { PolicyModelError } from '../../../src/policy/enforcer.ts';
import { parsePolicy } from '../../../src/policy/rules.ts';
import { shippedPolicies } from './helpers.ts';

const key = (...permissions: string[]): PolicySubject => ({ kind: 'key', permissions, role: 'user' });
const session: PolicySubject = { kind: 'session', permissions: [], role: 'user' };
const model = () => readFile(join(shippedPolicies, 'model.conf'), 'utf8');

describe('policy engine', () => {
  let a: PolicyEngine;
  let b: PolicyEngine;
  before(async () => {
    a = await loadPolicyEngine(join(shippedPolicies, 'model.conf'), join(shippedPolicies, 'variant-a.csv'));
    b = await loadPolicyEngine(join(shippedPolicies, 'model.conf'), join(shippedPolicies, 'variant-b.csv'));
  });

  describe('when a key lacks a permission that would allow the request', () => {
    it('then the decision names the permission, read from the policy', () => {
      expect(a.decide(key(), 'GET', '/api/ai/threads')).to.deep.equal({
        allowed: false,
        ruleId: 'key.ai-needs-ai',
        requiredPermission: 'ai',
        neverForKeys: false,
      });
      expect(a.decide(key('ai'), 'POST', '/api/mcp')).to.include({ requiredPermission: 'mcp', neverForKeys: false });
    });
  });

  describe('when no permission would allow a key', () => {
    it('then the decision says never for keys', () => {
      expect(a.decide(key('ai', 'mcp'), 'PATCH', '/api/ai/threads/t-1')).to.deep.equal({
        allowed: false,
        ruleId: 'key.ai-threads-writes',
        requiredPermission: null,
        neverForKeys: true,
      });
      expect(b.decide(key('mcp'), 'POST', '/api/mcp')).to.include({ ruleId: 'key.mcp-off', neverForKeys: true });
    });
  });

  describe('when the caller is not a key', () => {
    it('then a refusal carries neither a permission nor never-for-keys', () => {
      expect(a.decide(session, 'GET', '/api/admin/audit-log')).to.deep.equal({
        allowed: false,
        ruleId: 'session.admin-needs-role',
        requiredPermission: null,
        neverForKeys: false,
      });
    });
  });

  describe('when no line matches', () => {
    it('then the request is denied with no rule id', () => {
      expect(a.decide(session, 'GET', '/favicon.ico')).to.deep.equal({ allowed: false, ruleId: null, requiredPermission: null, neverForKeys: false });
    });
  });

  describe('when the same request is decided twice', () => {
    it('then the same frozen decision is returned, whatever the order of the permissions', () => {
      const first = a.decide(key('mcp', 'ai'), 'POST', '/api/ai/chat');
      expect(a.decide(key('ai', 'mcp'), 'POST', '/api/ai/chat')).to.equal(first);
      expect(Object.isFrozen(first)).to.equal(true);
    });

    it('then subjects that differ only in role are decided apart', () => {
      const admin: PolicySubject = { ...session, role: 'admin' };
      expect(a.decide(session, 'GET', '/api/admin/api-keys').allowed).to.equal(false);
      expect(a.decide(admin, 'GET', '/api/admin/api-keys').allowed).to.equal(true);
    });
  });

  describe('when a stored permission name carries an attribute of its own', () => {
    it('then it grants nothing: a name with a space cannot smuggle in perm:ai', () => {
      expect(a.decide(key('x perm:ai'), 'GET', '/api/ai/threads').allowed).to.equal(false);
      expect(a.decide(key('x perm:mcp'), 'POST', '/api/mcp').allowed).to.equal(false);
    });
  });

  describe('matchingRules', () => {
    it('lists every line that matched, in file order, even past the deciding deny', () => {
      expect(a.matchingRules(key(), 'POST', '/api/ai/threads/t-1').map((r) => r.id)).to.deep.equal([
        'key.api',
        'key.ai-threads-writes',
        'key.ai-needs-ai',
      ]);
    });
  });

  describe('when the engine is built from rules', () => {
    it('then each rule keeps its line and can be looked up by id', async () => {
      const { rules } = parsePolicy('# c\np, key, perm:ai, ^GET$, /x/**, allow, x.read\n');
      const engine = await createPolicyEngineFromRules(await model(), rules);
      expect(engine.rule('x.read')).to.include({ line: 2, path: '/x/**' });
      expect(engine.decide(key('ai'), 'GET', '/x')).to.include({ allowed: true, ruleId: 'x.read' });
      expect(engine.decide(key(), 'GET', '/x/y')).to.include({ allowed: false, requiredPermission: 'ai' });
    });
  });

  describe('when the policy has a malformed line', () => {
    it('then no engine is built, and the error names the line', async () => {
      const csv = 'p, key, *, .*, /api/**, allow, key.api\np, key, *, GET, /api/x, deny, key.x\n';
      try {
        await createPolicyEngine(await model(), csv);
        expect.fail('built an engine from a malformed policy');
      } catch (e) {
        expect(e).to.be.instanceOf(PolicyLoadError);
        expect((e as Error).message).to.include('policy:2: method: a method pattern must be .* or anchored');
      }
    });
  });

  describe('when the model matches lines otherwise than the shipped matcher', () => {
    it('then decisions come from the enforcer, which reads that matcher, not from the compiled form', async () => {
      const text = (await model()).replace('(p.sub == "*" || r.sub == p.sub)', 'r.sub == p.sub');
      const e = await createPolicyEngine(text, 'p, *, *, .*, /x, allow, everyone\np, key, *, .*, /x, deny, no-keys\n');
      expect(e.decide(session, 'GET', '/x')).to.deep.equal({ allowed: false, ruleId: null, requiredPermission: null, neverForKeys: false });
      expect(e.decide(key(), 'GET', '/x')).to.include({ allowed: false, ruleId: 'no-keys' });
      expect(e.matchingRules(session, 'GET', '/x')).to.deep.equal([]);
    });
  });

  describe('when the model does not have the shape the engine reads', () => {
    it('then building fails with the section to fix', async () => {
      const text = (await model()).replace('p = sub, cond, act, obj, eft, id', 'p = sub, cond, act, obj, eft');
      try {
        await createPolicyEngine(text, '');
        expect.fail('built an engine from a model without rule ids');
      } catch (e) {
        expect(e).to.be.instanceOf(PolicyModelError);
        expect((e as Error).message).to.include('[policy_definition]');
      }
    });
  });
});
