import { expect } from 'chai';
import fc from 'fast-check';
import Router from '@koa/router';
import { routerIndex, servedRoutes } from '../../../src/http/local-routes.ts';
import type { GatewayState } from '../../../src/http/state.ts';
import { servedRouteTable } from '../../../src/policy/served-routes.ts';

/** What routerIndex stands for: the first router whose own match finds a route, asked every time. */
const reference = (routers: Router<GatewayState>[]) => (path: string) =>
  routers.findIndex((r) => r.match(path, 'GET').path.some((layer) => layer.methods.length > 0));

/** The gateway's own route table, one router per first segment after /api, as the gateway holds them. */
function gatewayLikeRouters(): Router<GatewayState>[] {
  const groups = new Map<string, Router<GatewayState>>();
  for (const [method, path] of servedRouteTable) {
    const group = path.split('/').slice(0, 3).join('/');
    const r = groups.get(group) ?? new Router<GatewayState>({ sensitive: true, strict: true });
    groups.set(group, r);
    // path-to-regexp 8 spells a wildcard `{*rest}`.
    r.register(path.replace(/\*$/, '{*rest}'), [method], () => {});
  }
  const loose = new Router<GatewayState>().get('/Mixed/Case/:id', () => {}).get('/files/{*rest}', () => {}).get('/opt{/:x}', () => {});
  // Paths given as regular expressions: no literal part to go by (`.` matches any character).
  const expressions = new Router<GatewayState>().get(/^\/rx\/[0-9]+$/, () => {});
  expressions.register('/api/v.+/items', ['GET'], () => {}, { pathAsRegExp: true });
  return [...groups.values(), loose, expressions];
}

describe('dispatching to the gateway\'s own routers', () => {
  const make = () => {
    const health = new Router<GatewayState>().get('/healthz', () => {});
    const keys = new Router<GatewayState>().get('/api-keys', () => {}).delete('/api-keys/:id', () => {}).prefix('/api');
    let matches = 0;
    for (const r of [health, keys]) {
      const match = r.match.bind(r);
      r.match = (path: string, method: string) => (matches++, match(path, method));
    }
    return { routers: [health, keys], matches: () => matches };
  };

  it('finds the first router with a route for the path, whatever the method, or -1', () => {
    const { routers } = make();
    const first = routerIndex(routers);
    expect(first('/healthz')).to.equal(0);
    expect(first('/api/api-keys/abc')).to.equal(1);
    expect(first('/api/projects')).to.equal(-1);
  });

  it('runs only the root page\'s expression for a path no other route\'s literal part begins, and remembers no path', () => {
    // Routes given as regular expressions have no literal part: they are left out here.
    const routers = gatewayLikeRouters().filter((r) => r.stack.every((l) => typeof l.path === 'string' && !l.opts.pathAsRegExp));
    let tested = 0;
    for (const r of routers) {
      for (const layer of r.stack) {
        const match = layer.match.bind(layer);
        // `/` begins every path: the root page's expression is the one always run.
        if (layer.path !== '/') layer.match = (path: string) => (tested++, match(path));
      }
    }
    const first = routerIndex(routers);
    for (let i = 0; i < 100; i++) expect(first(`/api/projects/${i.toString(16)}`)).to.equal(-1);
    expect(tested).to.equal(0);
    expect(first('/api/api-keys')).to.be.at.least(0);
    expect(tested).to.be.greaterThan(0);
    const before = tested;
    first('/api/api-keys');
    expect(tested, 'asked again: nothing remembered').to.be.greaterThan(before);
  });

  it('answers as the routers\' own matching does, for paths drawn around the real route table', () => {
    const routers = gatewayLikeRouters();
    const first = routerIndex(routers);
    const ask = reference(routers);
    const segment = fc.oneof(
      fc.constantFrom('api', 'auth', 'api-keys', 'admin', 'oauth', 'mcp', 'healthz', 'Mixed', 'mixed', 'CASE', 'files', 'opt', 'x', ':id', '%2F', ''),
      fc.constantFrom('rx', '12', 'v2', 'v.', 'items'),
      fc.stringMatching(/^[A-Za-z0-9._~%-]{0,8}$/),
    );
    const fromTable = fc.constantFrom(...servedRouteTable.map(([, p]) => p));
    const path = fc.oneof(
      fc.array(segment, { maxLength: 6 }).map((parts) => `/${parts.join('/')}`),
      fc.tuple(fromTable, fc.array(segment, { maxLength: 2 }), fc.boolean()).map(([p, more, slash]) =>
        `${p.replace(/:[a-z]+/g, 'abc').replace(/\*$/, 'deep/er')}${more.length ? `/${more.join('/')}` : ''}${slash ? '/' : ''}`),
      // One letter's case turned: a case-sensitive route must refuse it, a case-insensitive one not.
      fc.tuple(fc.oneof(fromTable, fc.constantFrom('/Mixed/Case/abc', '/files/a/b', '/opt/x', '/rx/12', '/api/v2/items', '/x/api/v1/items')), fc.nat()).map(([p, n]) => {
        const i = n % p.length;
        const c = p.charAt(i);
        return p.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + p.slice(i + 1);
      }),
    );
    fc.assert(fc.property(path, (p) => {
      expect(first(p), p).to.equal(ask(p));
    }), { numRuns: 3000 });
  });

  it('sees a prefix set after it was made', () => {
    const late = new Router<GatewayState>({ sensitive: true, strict: true }).get('/a', () => {});
    const first = routerIndex([late]);
    expect(first('/a')).to.equal(0);
    late.prefix('/v2');
    expect(first('/a')).to.equal(-1);
    expect(first('/v2/a')).to.equal(0);
  });

  it('sees a route added to a router after it was made', () => {
    const late = new Router<GatewayState>({ sensitive: true, strict: true }).get('/a', () => {});
    const first = routerIndex([late]);
    expect(first('/b')).to.equal(-1);
    late.get('/b', () => {});
    expect(first('/b')).to.equal(0);
  });

  it('does not count a router\'s own middleware (its admin rule) as a route for every path', () => {
    const guarded = new Router<GatewayState>();
    guarded.use((_ctx, next) => next());
    guarded.get('/admin/overview', () => {});
    const after = new Router<GatewayState>().get('/healthz', () => {});
    const first = routerIndex([guarded.prefix('/api'), after]);
    expect(first('/api/admin/overview')).to.equal(0);
    expect(first('/healthz')).to.equal(1);
    expect(first('/api/projects')).to.equal(-1);
  });

  it('lists the routes the routers serve, without their middleware', () => {
    const guarded = new Router<GatewayState>();
    guarded.use((_ctx, next) => next());
    guarded.get('/admin/overview', () => {}).post('/admin/policy/rollback', () => {});
    expect(servedRoutes([guarded.prefix('/api')])).to.deep.equal([
      { methods: ['HEAD', 'GET'], path: '/api/admin/overview' },
      { methods: ['POST'], path: '/api/admin/policy/rollback' },
    ]);
  });
});
