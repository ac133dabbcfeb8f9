import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect } from 'chai';
import { useGateway, type TestGateway } from '../../support/gateway.ts';
import { examplePath, gatewayRoutes, type GatewayRoute } from '../../../src/policy/routes.ts';
import { routeTableOf } from '../../../src/http/route-table.ts';
import { canonicalizePath } from '../../../src/http/canonical-path.ts';
import { policyPath } from '../../../src/policy/refusal.ts';

// The policy tools (coverage in `keygate policy lint` and `test`, the decision diffs, the refusal's
// suffix rule) read the route table in src/policy/served-routes.ts, which they can load without
// starting a server. That file is written from what createApp serves; here it must equal, route for
// route and in order, what a gateway with every feature on serves now. To write it again:
//   KEYGATE_WRITE_ROUTES=1 npx mocha test/integration/policy/route-table.test.ts

const FILE = resolve(import.meta.dirname, '../../../src/policy/served-routes.ts');

function fileText(table: readonly GatewayRoute[]): string {
  const rows = table.map((r) => `  ['${r.method}', '${r.path}'],`);
  return [
    '// Every route the gateway serves itself, as the policy sees them: written from what createApp serves',
    '// (src/http/route-table.ts) by test/integration/policy/route-table.test.ts, which fails while this',
    '// differs from the routers. Not edited by hand; see that test for the command that writes it.',
    '',
    'export const servedRouteTable = [',
    ...rows,
    '] as const;',
    '',
  ].join('\n');
}

describe('the route table the policy tools use is what the routers serve', () => {
  let gw: TestGateway;
  useGateway({ config: { mcpServer: { enabled: true } } }, (g) => (gw = g));

  it('equals, route for route, the table read off the routers of a gateway with every feature on', () => {
    const served = routeTableOf(gw.routes, gw.config.apiPrefix);
    if (process.env.KEYGATE_WRITE_ROUTES === '1') {
      if (readFileSync(FILE, 'utf8') !== fileText(served)) writeFileSync(FILE, fileText(served));
      return;
    }
    const key = (r: GatewayRoute) => `${r.method} ${r.path}`;
    expect(gatewayRoutes.map(key), 'served but not in the table').to.include.members(served.map(key));
    expect(served.map(key), 'in the table but not served').to.include.members(gatewayRoutes.map(key));
    expect(gatewayRoutes).to.deep.equal(served);
  });

  it('each route\'s example is a path the code would decide as it stands: canonical, lower case, under /api', () => {
    const bent = gatewayRoutes.map((r) => examplePath(r.path)).filter((p) => canonicalizePath(p) !== p || policyPath(p, '/api') !== p);
    expect(bent).to.deep.equal([]);
  });
});
