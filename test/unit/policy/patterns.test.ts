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

  describe('a path glob with exceptions', () => {
    it('covers what the first glob covers and none of the listed globs', () => {
      const m = compilePathPattern('/api/ai/** except /api/ai/automations/** /api/ai/x/:id');
      for (const p of ['/api/ai', '/api/ai/chat', '/api/ai/automationsx', '/api/ai/x', '/api/ai/x/1/2']) expect(m.test(p), p).to.equal(true);
      for (const p of ['/api/ai/automations', '/api/ai/automations/a-1', '/api/ai/x/1', '/api/aim', '/api']) expect(m.test(p), p).to.equal(false);
    });

    it('refuses an empty list, a second except, a regular expression among the exceptions, and a comma-free field stays comma-free', () => {
      for (const bad of ['/api/** except', '/api/** except /a except /b', '/api/** except ^/api/x$', '/api/** except api/x']) {
        expect(() => compilePathPattern(bad), bad).to.throw();
      }
    });

    // The shipped lines said "everything under X except Y" with lookaheads; their rewrite must decide
    // every path as the lookahead did. Paths are drawn from the segments either form names.
    it('decides exactly as the lookahead lines it replaced, over every path built from their segments', () => {
      const pairs: [string, string][] = [
        ['^/api(/(?!(auth/sign-(up|in)/email|openapi\\.json)$).*)?$', '/api/** except /api/auth/sign-up/email /api/auth/sign-in/email /api/openapi.json'],
        ['^/api/ai(/(?!automations(/|$)).*)?$', '/api/ai/** except /api/ai/automations/**'],
        ['^/api/auth(/(?!(get-session|api-key/get|api-key/list|organization/list|organization/get-active-member)$).*)?$',
          '/api/auth/** except /api/auth/get-session /api/auth/api-key/get /api/auth/api-key/list /api/auth/organization/list /api/auth/organization/get-active-member'],
        ['^/api/auth(/(?!(get-session|api-key/(create|update|delete|get|list)|organization/list|organization/get-active-member)$).*)?$',
          '/api/auth/** except /api/auth/get-session /api/auth/api-key/create /api/auth/api-key/update /api/auth/api-key/delete /api/auth/api-key/get /api/auth/api-key/list /api/auth/organization/list /api/auth/organization/get-active-member'],
      ];
      const words = ['api', 'ai', 'auth', 'automations', 'automationsx', 'sign-up', 'sign-in', 'email', 'openapi.json', 'openapi.jsonx', 'get-session',
        'api-key', 'get', 'list', 'create', 'update', 'delete', 'organization', 'get-active-member', 'x-1', 'aim'];
      const paths = new Set<string>(['/']);
      let frontier = [''];
      for (let depth = 0; depth < 4; depth++) {
        frontier = frontier.flatMap((p) => words.map((w) => `${p}/${w}`)).filter((p) => depth < 1 || p.startsWith('/api'));
        for (const p of frontier) paths.add(p);
      }
      for (const [regex, glob] of pairs) {
        const old = new RegExp(regex);
        const now = compilePathPattern(glob);
        for (const p of paths) expect(now.test(p), `${glob} on ${p}`).to.equal(old.test(p));
      }
    });
  });

  describe('a regular-expression path that is not linear-time', () => {
    it('is refused, naming why: nested quantifiers, backreferences, lookarounds, overlapping repetitions', () => {
      const cases: [string, RegExp][] = [
        ['^/api/reports/(a+)+b$', /not linear-time: nested quantifiers \(\(a\+\)\+\)/],
        ['^/api/x/([a-z]+)/\\1$', /backreference/],
        ['^/api/auth(/(?!get-session$).*)?$', /lookahead/],
        ['^/api/(?<=a)b$', /lookbehind/],
        ['^/api/(a|ab)*c$', /alternatives that can match the same text/],
        ['^/api/x/.*/.*/z$', /two repetitions/],
      ];
      for (const [pattern, why] of cases) expect(() => compilePathPattern(pattern), pattern).to.throw(why);
    });

    it('while linear ones load, and method patterns keep their lookahead', () => {
      for (const ok of ['^/api/fuzz(/.*)?$', '^/api/[^/]+/[^/]+$', '^/api/(x|y)+$', '^/api/(a|b)$']) expect(() => compilePathPattern(ok), ok).not.to.throw();
      expect(compileMethodPattern('^(?!(GET|HEAD|OPTIONS)$).+$').test('POST')).to.equal(true);
    });

    it('and the line carrying it is malformed, so no engine is built from it', () => {
      const parsed = parsePolicy('p, key, *, .*, ^/api/reports/(a+)+b$, deny, key.reports-bad\n');
      expect(parsed.rules).to.deep.equal([]);
      expect(parsed.problems[0]?.message).to.match(/^path: not linear-time: nested quantifiers/);
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
