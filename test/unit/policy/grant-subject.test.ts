import { expect } from 'chai';
import { subjectOf, type PolicyCaller } from '../../../src/policy/refusal.ts';

// An OAuth grant is a caller of its own kind, decided by the policy as a key holding what the grant
// grants, with `via:oauth` so a line can tell the two apart.

describe('the policy subject of an OAuth grant', () => {
  it('is a key holding the grant\'s permissions, marked as come through OAuth, on either channel', () => {
    const grant: PolicyCaller = { kind: 'grant', user: { role: 'user' }, grant: { permissions: { mcp: ['access'] } } };
    expect(subjectOf(grant)).to.deep.equal({ kind: 'key', permissions: ['mcp:access'], role: 'user', channel: 'http', oauth: true });
    expect(subjectOf(grant, 'mcp')).to.deep.include({ kind: 'key', channel: 'mcp', oauth: true });
  });

  it('a key is not marked so', () => {
    const key: PolicyCaller = { kind: 'key', user: { role: 'user' }, key: { permissions: { mcp: ['access'] } } };
    expect(subjectOf(key)).to.not.have.property('oauth');
  });
});
