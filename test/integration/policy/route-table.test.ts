import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { examplePath, gatewayRoutes, routeMethods } from '../../../src/policy/routes.ts';

// The policy CLI checks coverage against the route table in src/policy/routes.ts. This keeps
// that table honest: it must name exactly the routes the real routers serve.

/** A table template (`:id` one segment, trailing `*` anything beneath) as a regular expression. */
const templateRegex = (t: string) =>
  new RegExp('^' + t.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\/:[A-Za-z_]\w*/g, '/[^/]+').replace(/\/\*$/, '/.+') + '$');

/** A concrete path a router path matches (`:param` and `{*rest}` filled in). */
const routerExample = (p: string) => p.replace(/\/:[A-Za-z_]\w*/g, '/x').replace(/\/\{\*\w+\}/g, '/x/y');

describe('the route table the policy tools use matches the real routers', () => {
  let gw: TestGateway;
  useGateway({ config: { mcpServer: { enabled: true } } }, (g) => (gw = g));

  it('every route a router serves is in the table', () => {
    const missing = gw.routes.filter((r) => {
      const path = routerExample(r.path);
      return !gatewayRoutes.some((t) => templateRegex(t.path).test(path) && (t.method === 'ALL' || r.methods.includes(t.method)));
    });
    expect(missing.map((r) => `${r.methods.join('|')} ${r.path}`)).to.deep.equal([]);
  });

  it('every route in the table is served by a router (or by the content route in front of them)', () => {
    const unserved = gatewayRoutes.filter((t) => {
      if (t.path.startsWith('/v1/content')) return false;
      const path = examplePath(t.path);
      return !routeMethods(t).some((m) => gw.routes.some((r) => r.methods.includes(m) && templateRegex(routerExample(r.path).replace(/\/x\/y$/, '/*').replace(/\/x(?=\/|$)/g, '/:p')).test(path)));
    });
    expect(unserved.map((t) => `${t.method} ${t.path}`)).to.deep.equal([]);
  });
});
