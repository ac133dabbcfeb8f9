import { expect } from 'chai';
import { routeTableOf } from '../../../src/http/route-table.ts';

// How a router's layers become the policy's route table: the table is written against /api, a
// catch-all is a trailing `*`, a route that answers every method is ALL, and HEAD rides with GET.

describe('the route table read off the routers', () => {
  const every = ['HEAD', 'ACL', 'DELETE', 'GET', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE'];

  it('writes paths under another prefix against /api, leaving the rest alone', () => {
    const table = routeTableOf([
      { methods: ['HEAD', 'GET'], path: '/v2/api-keys' },
      { methods: ['DELETE'], path: '/v2/api-keys/:id' },
      { methods: ['HEAD', 'GET'], path: '/v2' },
      { methods: ['HEAD', 'GET'], path: '/v2x/other' },
      { methods: ['POST'], path: '/admin/users/:id/:action' },
    ], '/v2');
    expect(table.slice(0, 5)).to.deep.equal([
      { method: 'GET', path: '/api/api-keys' },
      { method: 'DELETE', path: '/api/api-keys/:id' },
      { method: 'GET', path: '/api' },
      { method: 'GET', path: '/v2x/other' },
      { method: 'POST', path: '/admin/users/:id/:action' },
    ]);
  });

  it('makes a catch-all a trailing *, a route for every method ALL, and lists each route once', () => {
    const table = routeTableOf([
      { methods: every, path: '/api/mcp/{*rest}' },
      { methods: ['HEAD', 'GET'], path: '/admin/keys' },
      { methods: ['HEAD', 'GET'], path: '/admin/keys' },
    ], '/api');
    expect(table.filter((r) => !r.path.startsWith('/v1/content'))).to.deep.equal([
      { method: 'ALL', path: '/api/mcp/*' },
      { method: 'GET', path: '/admin/keys' },
    ]);
  });

  it('adds the content route, which answers in front of the routers', () => {
    expect(routeTableOf([], '/api')).to.deep.equal([{ method: 'GET', path: '/v1/content' }, { method: 'GET', path: '/v1/content/*' }]);
  });

  it('refuses a method the policy table cannot name, rather than leave the route out', () => {
    expect(() => routeTableOf([{ methods: ['PUT'], path: '/api/things' }], '/api')).to.throw(/no method PUT/);
  });
});
