import { expect } from 'chai';
import { compileMethodPattern, compilePathPattern, parseCondition, subjectAttributes } from '../../../src/policy/patterns.ts';
import { parsePolicy } from '../../../src/policy/rules.ts';

describe('policy patterns', () => {
  describe('a path glob', () => {
    it('/x/** covers /x itself and everything beneath, but not /xy', () => {
      const re = compilePathPattern('/api/admin/**');
      expect(['/api/admin', '/api/admin/users', '/api/admin/users/u-1/ban'].every((p) => re.test(p))).to.equal(true);
      expect(re.test('/api/administrators')).to.equal(false);
    });

    it('/x/* and /x/:id match exactly one segment, so not /x', () => {
      for (const pattern of ['/api/api-keys/*', '/api/api-keys/:id']) {
        const re = compilePathPattern(pattern);
        expect(re.test('/api/api-keys/k-1')).to.equal(true);
        expect(re.test('/api/api-keys')).to.equal(false);
        expect(re.test('/api/api-keys/k-1/x')).to.equal(false);
      }
    });

    it('treats dots and other regular-expression characters literally', () => {
      expect(compilePathPattern('/.well-known/**').test('/xwell-known/x')).to.equal(false);
    });

    it('refuses what could only match a path the policy never sees', () => {
      for (const bad of ['/api/x/', '/api//x', '/api/../admin', '/api/x?y=1', '/api/x*', '/api/**/x', 'api/x']) {
        expect(() => compilePathPattern(bad), bad).to.throw();
      }
    });

    it('takes an anchored regular expression when it starts with ^', () => {
      expect(compilePathPattern('^/api/(a|b)$').test('/api/b')).to.equal(true);
      expect(() => compilePathPattern('^/api/(a|b)')).to.throw(/anchored/);
    });
  });

  describe('a method pattern', () => {
    it('must be anchored, so GET does not also match PUT_GET', () => {
      expect(() => compileMethodPattern('GET')).to.throw(/anchored/);
      expect(compileMethodPattern('^(?!(GET|HEAD|OPTIONS)$).+$').test('PROPFIND')).to.equal(true);
    });

    it('that matches no HTTP method is refused', () => {
      expect(() => compileMethodPattern('^get$')).to.throw(/matches none/);
    });
  });

  describe('a condition', () => {
    it('reads * as always and terms as all-of, with ! for lacking', () => {
      expect(parseCondition('*')).to.deep.equal([]);
      expect(parseCondition('perm:ai !role:admin')).to.deep.equal([
        { attribute: 'perm:ai', negated: false },
        { attribute: 'role:admin', negated: true },
      ]);
      expect(() => parseCondition('ai')).to.throw(/perm:SCOPE/);
      expect(parseCondition('!perm:reports:write perm:reports')).to.deep.equal([
        { attribute: 'perm:reports:write', negated: true },
        { attribute: 'perm:reports', negated: false },
      ]);
    });
  });

  it('subject attributes are sorted, and names that could carry other attributes are dropped', () => {
    // A held action gives both the scope and the scope:action attribute, so perm:S holds for any action.
    expect(subjectAttributes(['mcp', 'ai'], 'admin')).to.equal('perm:ai perm:ai:access perm:mcp perm:mcp:access role:admin');
    expect(subjectAttributes(['reports:read'], null)).to.equal('perm:reports perm:reports:read');
    expect(subjectAttributes(['ai role:admin'], null)).to.equal('');
    expect(subjectAttributes(['ai:access role:admin', 'a:b:c'], null)).to.equal('');
  });

  describe('parsing a policy file', () => {
    it('reports each malformed line with its number, and keeps the good ones', () => {
      const parsed = parsePolicy('# header\n\np, key, *, .*, /api/**, allow, a\np, key\np, key, *, .*, /api/**, allow, a\n');
      expect(parsed.rules.map((r) => [r.id, r.line])).to.deep.equal([['a', 3]]);
      expect(parsed.problems.map((p) => p.line)).to.deep.equal([4, 5]);
      expect(parsed.problems[1]?.message).to.match(/already used on line 3/);
    });
  });
});
