import { expect } from 'chai';
import Router from '@koa/router';
import { routerIndex } from '../../../src/http/local-routes.ts';
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
});
