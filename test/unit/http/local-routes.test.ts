import { expect } from 'chai';
import Router from '@koa/router';
import { routerIndex, servedRoutes } from '../../../src/http/local-routes.ts';
import type { GatewayState } from '../../../src/http/state.ts';

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

  it('asks the routers once per path, not on every request', () => {
    const { routers, matches } = make();
    const first = routerIndex(routers);
    for (let i = 0; i < 100; i++) first('/api/projects');
    expect(matches()).to.equal(2);
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
