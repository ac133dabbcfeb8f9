import { expect } from 'chai';
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import type * as Casbin from 'casbin';
import type { PostgresAdapter as PostgresAdapterClass } from 'casbin-pg-adapter/lib/adapter.js';
import { buildEnforcer, type RequestValues } from '../../../src/policy/enforcer.ts';
import { matcherFunctions } from '../../../src/policy/patterns.ts';
import { parsePolicy, ruleToCsvRow } from '../../../src/policy/rules.ts';
import { examplePath, forwardedExamples, gatewayRoutes } from '../../../src/policy/routes.ts';
import { startTestGateway, type TestGateway } from '../../support/gateway.ts';

// The live policy table is kept in casbin-pg-adapter's own shape (ptype, rule as a JSON array), so
// a stock Casbin enforcer with the stock adapter reads the lines the gateways decide with: an
// operator's other Casbin tools can load the live policy too. They must register the model's two
// matcher functions (attrMatch, pathMatch), as every enforcer of this model does.

const require = createRequire(import.meta.url);
const casbin = require('casbin') as typeof Casbin;
const PostgresAdapter = (require('casbin-pg-adapter') as { default: typeof PostgresAdapterClass }).default;

describe('the live policy table, read by a stock Casbin enforcer through casbin-pg-adapter', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  let adapter: PostgresAdapterClass;
  let stock: Casbin.Enforcer;
  let fileRows: string[][];
  let modelText: string;
  before(async () => {
    // First start writes the configured files into the table.
    gw = await startTestGateway();
    modelText = await readFile(gw.config.policy.model, 'utf8');
    fileRows = parsePolicy(await readFile(gw.config.policy.file, 'utf8')).rules.map((r) => ruleToCsvRow(r).slice(1));
    // migrate: false: the table is keygate's own migration's; the adapter only reads it here.
    adapter = await PostgresAdapter.newAdapter({ connectionString: gw.database.url, migrate: false });
    stock = await casbin.newEnforcer(casbin.newModelFromString(modelText), adapter);
    const fns = matcherFunctions();
    await stock.addFunction('attrMatch', fns.attrMatch);
    await stock.addFunction('pathMatch', fns.pathMatch);
  });
  after(async () => {
    await adapter?.close();
    await gw?.stop();
  });

  it('loads every line of the applied file, and nothing else', async () => {
    const sorted = (rows: string[][]) => rows.map((r) => JSON.stringify(r)).sort();
    expect(fileRows.length).to.be.greaterThan(30);
    expect(sorted(await stock.getPolicy())).to.deep.equal(sorted(fileRows));
  });

  it("allows and refuses exactly what keygate's own enforcer does, for every served route and forwarded example", async () => {
    const own = await buildEnforcer(modelText, parsePolicy(await readFile(gw.config.policy.file, 'utf8')).rules);
    const callers: [string, string][] = [
      ['anonymous', ''], ['session', 'role:user'], ['session', 'role:admin'],
      ['key', ''], ['key', 'perm:ai'], ['key', 'perm:ai perm:mcp'], ['key', 'perm:mcp via:mcp'],
    ];
    const requests = [
      ...gatewayRoutes.map((r) => ({ method: r.method === 'ALL' ? 'POST' : r.method, path: examplePath(r.path) })),
      ...forwardedExamples,
    ];
    let compared = 0;
    for (const [sub, attrs] of callers) {
      for (const { method, path } of requests) {
        const request: RequestValues = [sub, attrs, method, path];
        const [allowed] = await stock.enforceEx(...request);
        expect(allowed, request.join(' ')).to.equal(own.enforceEx(request)[0]);
        compared += 1;
      }
    }
    expect(compared).to.be.greaterThan(500);
  });
});
